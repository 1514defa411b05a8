package backend

import (
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/store"
)

// ScanPage is the number of rows PayloadScan reads per query; fn runs
// between queries, never while a read is open.
const ScanPage = 250

// Scan walks one table for PayloadScan. page runs one query of at most
// ScanPage rows after the cursor it keeps, closes it, and returns the
// payloads it read and the number of rows; Scan hands the payloads to fn
// and stops after a page of fewer than ScanPage rows.
func Scan(page func() ([]*store.ScannedPayload, int, error), fn func(*store.ScannedPayload) error) error {
	for {
		ps, n, err := page()
		if err != nil {
			return err
		}
		for _, sp := range ps {
			if err := fn(sp); err != nil {
				return err
			}
		}
		if n < ScanPage {
			return nil
		}
	}
}

// TaskFields names the durable value columns of a task row, in the order
// TaskPayloads takes them.
var TaskFields = [4]string{"input", "checkpoint", "output", "error_details"}

// TaskPayloads appends to page the non-NULL value columns of task id,
// given as codec and data column pairs in the order of TaskFields.
func TaskPayloads(page []*store.ScannedPayload, id string, codecs [4]*string, data [4][]byte) []*store.ScannedPayload {
	for i, f := range TaskFields {
		if codecs[i] == nil && data[i] == nil {
			continue
		}
		page = append(page, &store.ScannedPayload{Table: "tasks", Row: id, Field: f, Payload: ToPayload(codecs[i], data[i])})
	}
	return page
}

// EventPayload is the scanned payload of event seq of task taskID.
func EventPayload(taskID string, seq int64, payload string) *store.ScannedPayload {
	return &store.ScannedPayload{
		Table: "task_events", Row: fmt.Sprintf("%s#%d", taskID, seq),
		Field: "payload", Document: json.RawMessage(payload),
	}
}

// KeyPayload is the scanned stored body of an idempotency key, or nil for
// a key with no body.
func KeyPayload(client, key string, body []byte) *store.ScannedPayload {
	if len(body) == 0 {
		return nil
	}
	return &store.ScannedPayload{
		Table: "idempotency_keys", Row: client + "/" + key,
		Field: "body", Document: json.RawMessage(body),
	}
}
