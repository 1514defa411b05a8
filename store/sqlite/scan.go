package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// PayloadScan implements store.Store. It reports the durable value columns
// of tasks (input, checkpoint, output, error_details), every event payload,
// and the stored bodies of idempotency keys, backend.ScanPage rows per
// query.
func (db *DB) PayloadScan(ctx context.Context, fn func(*store.ScannedPayload) error) error {
	if err := backend.Scan(db.scanTasks(ctx), fn); err != nil {
		return fmt.Errorf("scan payloads: tasks: %w", err)
	}
	if err := backend.Scan(db.scanEvents(ctx), fn); err != nil {
		return fmt.Errorf("scan payloads: task_events: %w", err)
	}
	if err := backend.Scan(db.scanKeys(ctx), fn); err != nil {
		return fmt.Errorf("scan payloads: idempotency_keys: %w", err)
	}
	return nil
}

// scanPage is one page of backend.Scan.
type scanPage = func() ([]*store.ScannedPayload, int, error)

func (db *DB) scanTasks(ctx context.Context) scanPage {
	cursor := ""
	return func() ([]*store.ScannedPayload, int, error) {
		rows, err := db.query(ctx, `SELECT id, input_codec, input, checkpoint_codec, checkpoint, output_codec, output,
			error_details_codec, error_details FROM tasks WHERE id > ? ORDER BY id LIMIT ?`, cursor, backend.ScanPage)
		return readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
			var (
				codecs [4]*string
				data   [4][]byte
			)
			if err := rows.Scan(&cursor, &codecs[0], &data[0], &codecs[1], &data[1], &codecs[2], &data[2],
				&codecs[3], &data[3]); err != nil {
				return nil, err
			}
			return backend.TaskPayloads(page, cursor, codecs, data), nil
		})
	}
}

func (db *DB) scanEvents(ctx context.Context) scanPage {
	taskID, seq := "", int64(-1)
	return func() ([]*store.ScannedPayload, int, error) {
		rows, err := db.query(ctx, `SELECT task_id, seq, payload FROM task_events
			WHERE (task_id, seq) > (?, ?) ORDER BY task_id, seq LIMIT ?`, taskID, seq, backend.ScanPage)
		return readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
			var payload string
			if err := rows.Scan(&taskID, &seq, &payload); err != nil {
				return nil, err
			}
			return append(page, backend.EventPayload(taskID, seq, payload)), nil
		})
	}
}

func (db *DB) scanKeys(ctx context.Context) scanPage {
	client, key := "", ""
	return func() ([]*store.ScannedPayload, int, error) {
		rows, err := db.query(ctx, `SELECT client_id, key, body FROM idempotency_keys
			WHERE (client_id, key) > (?, ?) ORDER BY client_id, key LIMIT ?`, client, key, backend.ScanPage)
		return readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
			var body []byte
			if err := rows.Scan(&client, &key, &body); err != nil {
				return nil, err
			}
			if sp := backend.KeyPayload(client, key, body); sp != nil {
				page = append(page, sp)
			}
			return page, nil
		})
	}
}

// readPage reads every row of one page of a scan with row, which scans
// the current row and appends its payloads, and closes rows. It returns
// the payloads and the number of rows read.
func readPage(rows *sql.Rows, err error, row func([]*store.ScannedPayload) ([]*store.ScannedPayload, error)) ([]*store.ScannedPayload, int, error) {
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var (
		page []*store.ScannedPayload
		n    int
	)
	for rows.Next() {
		n++
		if page, err = row(page); err != nil {
			return nil, 0, classify(err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, classify(err)
	}
	return page, n, nil
}
