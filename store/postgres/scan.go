package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// PayloadScan implements store.Store. It reports the durable value columns
// of tasks (input, checkpoint, output, error_details), every event payload,
// and the stored bodies of idempotency keys, backend.ScanPage rows per
// query. Each page is its own statement, so the scan sees rows committed
// while it runs page by page.
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
			error_details_codec, error_details FROM tasks WHERE id > $1 ORDER BY id LIMIT $2`, cursor, backend.ScanPage)
		return db.readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
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
		rows, err := db.query(ctx, `SELECT task_id, seq, payload::text FROM task_events
			WHERE (task_id, seq) > ($1, $2) ORDER BY task_id, seq LIMIT $3`, taskID, seq, backend.ScanPage)
		return db.readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
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
			WHERE (client_id, key) > ($1, $2) ORDER BY client_id, key LIMIT $3`, client, key, backend.ScanPage)
		return db.readPage(rows, err, func(page []*store.ScannedPayload) ([]*store.ScannedPayload, error) {
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
func (db *DB) readPage(rows pgx.Rows, err error, row func([]*store.ScannedPayload) ([]*store.ScannedPayload, error)) ([]*store.ScannedPayload, int, error) {
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
			return nil, 0, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, db.closedOr(err)
	}
	return page, n, nil
}
