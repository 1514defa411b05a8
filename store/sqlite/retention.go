package sqlite

import (
	"context"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// The finished tasks of one purge batch, oldest first. The same selection
// runs in each statement of the batch's transaction, so it names the same
// rows each time.
const purgeSelect = `SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ?
	ORDER BY finished_at, id LIMIT ?`

// RetentionPurge implements store.Store. Each batch is its own job, so other
// writes run between batches and no batch holds the writer for long.
func (db *DB) RetentionPurge(ctx context.Context, p *store.RetentionPurgeParams) (*store.RetentionPurgeResult, error) {
	cutoff := ms(p.OlderThan)
	var n int64 // the keys' cutoff, taken once the tasks are purged
	res, err := backend.Purge(p, func(batch int) (b backend.PurgeBatch, err error) {
		err = db.write(ctx, func(t *tx) error {
			b = backend.PurgeBatch{}
			var err error
			if b.Events, err = t.affected("DELETE FROM task_events WHERE task_id IN ("+purgeSelect+")", cutoff, batch); err != nil {
				return err
			}
			if b.Responses, err = t.affected("DELETE FROM responses WHERE task_id IN ("+purgeSelect+")", cutoff, batch); err != nil {
				return err
			}
			b.Tasks, err = t.affected("DELETE FROM tasks WHERE id IN ("+purgeSelect+")", cutoff, batch)
			t.w.cache.reset() // only finished rows were deleted, which the cache never holds; stay exact anyway
			return err
		})
		return b, err
	}, func(batch int) (b backend.PurgeBatch, err error) {
		if n == 0 {
			n = ms(now())
		}
		err = db.write(ctx, func(t *tx) error {
			var err error
			b.IdempotencyKeys, err = t.affected(`DELETE FROM idempotency_keys WHERE rowid IN
				(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, n, batch)
			return err
		})
		return b, err
	})
	if err == nil && (res.Tasks > 0 || res.IdempotencyKeys > 0) {
		db.log.Debug("purged", "tasks", res.Tasks, "events", res.Events, "idempotency_keys", res.IdempotencyKeys)
	}
	return res, err
}

// affected runs a statement and returns the rows it changed.
func (t *tx) affected(query string, args ...any) (int64, error) {
	r, err := t.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}
