package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// RetentionPurge implements store.Store. Each batch is its own short
// transaction: it locks the oldest finished tasks past the cutoff (skipping
// rows another transaction holds), then deletes their events, responses and
// rows.
func (db *DB) RetentionPurge(ctx context.Context, p *store.RetentionPurgeParams) (*store.RetentionPurgeResult, error) {
	cutoff := msTime(p.OlderThan)
	var n time.Time // the keys' cutoff, taken once the tasks are purged
	res, err := backend.Purge(p, func(batch int) (b backend.PurgeBatch, err error) {
		err = db.write(ctx, func(t *tx) error {
			b = backend.PurgeBatch{}
			rows, err := t.query(`SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < $1
				ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, cutoff, batch)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(ids) == 0 {
				return err
			}
			if b.Events, err = t.affected("DELETE FROM task_events WHERE task_id = ANY($1::text[])", ids); err != nil {
				return err
			}
			if b.Responses, err = t.affected("DELETE FROM responses WHERE task_id = ANY($1::text[])", ids); err != nil {
				return err
			}
			b.Tasks, err = t.affected("DELETE FROM tasks WHERE id = ANY($1::text[])", ids)
			return err
		})
		return b, err
	}, func(batch int) (b backend.PurgeBatch, err error) {
		if n.IsZero() {
			n = now()
		}
		err = db.write(ctx, func(t *tx) error {
			var err error
			b.IdempotencyKeys, err = t.affected(`DELETE FROM idempotency_keys WHERE (client_id, key) IN
				(SELECT client_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, n, batch)
			return err
		})
		return b, err
	})
	if err == nil && (res.Tasks > 0 || res.IdempotencyKeys > 0) {
		db.log.Debug("purged", "tasks", res.Tasks, "events", res.Events, "idempotency_keys", res.IdempotencyKeys)
	}
	return res, err
}
