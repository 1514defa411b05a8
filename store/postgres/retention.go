package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

// RetentionPurge implements store.Store. Each batch is its own short
// transaction: it locks the oldest finished tasks past the cutoff (skipping
// rows another transaction holds), then deletes their events, responses and
// rows.
func (db *DB) RetentionPurge(ctx context.Context, p *store.RetentionPurgeParams) (*store.RetentionPurgeResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("purge tasks: %w", err)
	}
	batch := p.Batch
	if batch == 0 {
		batch = store.DefaultRetentionBatch
	}
	res := &store.RetentionPurgeResult{}
	cutoff := msTime(p.OlderThan)
	for {
		var tasks, events, responses int64
		err := db.write(ctx, func(t *tx) error {
			tasks, events, responses = 0, 0, 0
			rows, err := t.query(`SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < $1
				ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, cutoff, batch)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(ids) == 0 {
				return err
			}
			if events, err = t.affected("DELETE FROM task_events WHERE task_id = ANY($1::text[])", ids); err != nil {
				return err
			}
			if responses, err = t.affected("DELETE FROM responses WHERE task_id = ANY($1::text[])", ids); err != nil {
				return err
			}
			tasks, err = t.affected("DELETE FROM tasks WHERE id = ANY($1::text[])", ids)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("purge tasks: %w", err)
		}
		if tasks == 0 {
			break
		}
		res.Batches++
		res.Tasks += int(tasks)
		res.Events += int(events)
		res.Responses += int(responses)
		if tasks < int64(batch) {
			break
		}
	}
	n := now()
	for {
		var keys int64
		err := db.write(ctx, func(t *tx) error {
			var err error
			keys, err = t.affected(`DELETE FROM idempotency_keys WHERE (client_id, key) IN
				(SELECT client_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, n, batch)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("purge idempotency keys: %w", err)
		}
		if keys == 0 {
			break
		}
		res.Batches++
		res.IdempotencyKeys += int(keys)
		if keys < int64(batch) {
			break
		}
	}
	if res.Tasks > 0 || res.IdempotencyKeys > 0 {
		db.log.Debug("purged", "tasks", res.Tasks, "events", res.Events, "idempotency_keys", res.IdempotencyKeys)
	}
	return res, nil
}
