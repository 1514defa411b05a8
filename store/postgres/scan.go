package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

// scanPage is the number of rows read per query of PayloadScan; fn runs
// between queries, never while a read is open.
const scanPage = 250

// PayloadScan implements store.Store. It reports the durable value columns
// of tasks (input, checkpoint, output, error_details), every event payload,
// and the stored bodies of idempotency keys. Each page is its own
// statement, so the scan sees rows committed while it runs page by page.
func (db *DB) PayloadScan(ctx context.Context, fn func(*store.ScannedPayload) error) error {
	if err := db.scanTasks(ctx, fn); err != nil {
		return fmt.Errorf("scan payloads: tasks: %w", err)
	}
	if err := db.scanEvents(ctx, fn); err != nil {
		return fmt.Errorf("scan payloads: task_events: %w", err)
	}
	if err := db.scanKeys(ctx, fn); err != nil {
		return fmt.Errorf("scan payloads: idempotency_keys: %w", err)
	}
	return nil
}

func (db *DB) scanTasks(ctx context.Context, fn func(*store.ScannedPayload) error) error {
	fields := []string{"input", "checkpoint", "output", "error_details"}
	for cursor := ""; ; {
		rows, err := db.query(ctx, `SELECT id, input_codec, input, checkpoint_codec, checkpoint, output_codec, output,
			error_details_codec, error_details FROM tasks WHERE id > $1 ORDER BY id LIMIT $2`, cursor, scanPage)
		if err != nil {
			return err
		}
		var (
			page []*store.ScannedPayload
			n    int
		)
		for rows.Next() {
			n++
			var (
				id     string
				codecs [4]*string
				data   [4][]byte
			)
			if err := rows.Scan(&id, &codecs[0], &data[0], &codecs[1], &data[1], &codecs[2], &data[2],
				&codecs[3], &data[3]); err != nil {
				rows.Close()
				return err
			}
			cursor = id
			for i, f := range fields {
				if codecs[i] == nil && data[i] == nil {
					continue
				}
				page = append(page, &store.ScannedPayload{
					Table: "tasks", Row: id, Field: f,
					Payload: toPayload(codecs[i], data[i]),
				})
			}
		}
		if last, err := db.deliverPage(rows, page, n, fn); err != nil || last {
			return err
		}
	}
}

func (db *DB) scanEvents(ctx context.Context, fn func(*store.ScannedPayload) error) error {
	taskID, seq := "", int64(-1)
	for {
		rows, err := db.query(ctx, `SELECT task_id, seq, payload::text FROM task_events
			WHERE (task_id, seq) > ($1, $2) ORDER BY task_id, seq LIMIT $3`, taskID, seq, scanPage)
		if err != nil {
			return err
		}
		var page []*store.ScannedPayload
		for rows.Next() {
			var payload string
			if err := rows.Scan(&taskID, &seq, &payload); err != nil {
				rows.Close()
				return err
			}
			page = append(page, &store.ScannedPayload{
				Table: "task_events", Row: fmt.Sprintf("%s#%d", taskID, seq),
				Field: "payload", Document: json.RawMessage(payload),
			})
		}
		if last, err := db.deliverPage(rows, page, len(page), fn); err != nil || last {
			return err
		}
	}
}

func (db *DB) scanKeys(ctx context.Context, fn func(*store.ScannedPayload) error) error {
	client, key := "", ""
	for {
		rows, err := db.query(ctx, `SELECT client_id, key, body FROM idempotency_keys
			WHERE (client_id, key) > ($1, $2) ORDER BY client_id, key LIMIT $3`, client, key, scanPage)
		if err != nil {
			return err
		}
		var (
			page []*store.ScannedPayload
			n    int
		)
		for rows.Next() {
			var body []byte
			if err := rows.Scan(&client, &key, &body); err != nil {
				rows.Close()
				return err
			}
			n++
			if len(body) == 0 {
				continue
			}
			page = append(page, &store.ScannedPayload{
				Table: "idempotency_keys", Row: client + "/" + key,
				Field: "body", Document: json.RawMessage(body),
			})
		}
		if last, err := db.deliverPage(rows, page, n, fn); err != nil || last {
			return err
		}
	}
}

// deliverPage ends one page of a scan: it closes rows, hands every payload
// read to fn, and reports whether the page was the last one (fewer than
// scanPage rows read).
func (db *DB) deliverPage(rows pgx.Rows, page []*store.ScannedPayload, n int, fn func(*store.ScannedPayload) error) (last bool, err error) {
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, db.closedOr(err)
	}
	for _, sp := range page {
		if err := fn(sp); err != nil {
			return false, err
		}
	}
	return n < scanPage, nil
}
