package sqlite

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/store"
)

// The finished tasks of one purge batch, oldest first. The same selection
// runs in each statement of the batch's transaction, so it names the same
// rows each time.
const purgeSelect = `SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ?
	ORDER BY finished_at, id LIMIT ?`

// RetentionPurge implements store.Store. Each batch is its own job, so other
// writes run between batches and no batch holds the writer for long.
func (db *DB) RetentionPurge(ctx context.Context, p *store.RetentionPurgeParams) (*store.RetentionPurgeResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("purge tasks: %w", err)
	}
	batch := p.Batch
	if batch == 0 {
		batch = store.DefaultRetentionBatch
	}
	res := &store.RetentionPurgeResult{}
	cutoff := ms(p.OlderThan)
	for {
		var tasks, events, responses int64
		err := db.write(ctx, func(t *tx) error {
			tasks, events, responses = 0, 0, 0
			var err error
			if events, err = t.affected("DELETE FROM task_events WHERE task_id IN ("+purgeSelect+")", cutoff, batch); err != nil {
				return err
			}
			if responses, err = t.affected("DELETE FROM responses WHERE task_id IN ("+purgeSelect+")", cutoff, batch); err != nil {
				return err
			}
			tasks, err = t.affected("DELETE FROM tasks WHERE id IN ("+purgeSelect+")", cutoff, batch)
			t.w.cache.reset() // only finished rows were deleted, which the cache never holds; stay exact anyway
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
	n := ms(now())
	for {
		var keys int64
		err := db.write(ctx, func(t *tx) error {
			var err error
			keys, err = t.affected(`DELETE FROM idempotency_keys WHERE rowid IN
				(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, n, batch)
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

// affected runs a statement and returns the rows it changed.
func (t *tx) affected(query string, args ...any) (int64, error) {
	r, err := t.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}
