package runtime

import (
	"context"
	"time"

	"github.com/weft-run/weft/store"
)

// retentionLoop purges, every Config.RetentionInterval, the finished tasks
// older than the retention period with their events and responses, and the
// expired idempotency keys (persistence §11.2). The store deletes in small
// batches, each its own short transaction, and never touches an unfinished
// task.
func (e *Engine) retentionLoop(ctx context.Context) {
	defer e.wg.Done()
	tick := time.NewTicker(e.cfg.RetentionInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if _, err := e.purge(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("retention", "error", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// purge runs one retention pass.
func (e *Engine) purge(ctx context.Context) (*store.RetentionPurgeResult, error) {
	e.svc.Store(nil) // pick up configuration changes
	res, err := e.store.RetentionPurge(ctx, &store.RetentionPurgeParams{
		OlderThan: e.now().Add(-e.retention(ctx)), Batch: e.cfg.RetentionBatch,
	})
	if err != nil {
		return res, err
	}
	if res.Tasks > 0 || res.IdempotencyKeys > 0 {
		e.log.Debug("retention purged", "tasks", res.Tasks, "events", res.Events,
			"idempotency_keys", res.IdempotencyKeys, "batches", res.Batches)
	}
	return res, nil
}

// retention returns how long finished tasks are kept: Config.Retention, or
// the service configuration's period, or the default.
func (e *Engine) retention(ctx context.Context) time.Duration {
	if e.cfg.Retention > 0 {
		return e.cfg.Retention
	}
	if c := e.serviceConfig(ctx); c != nil && c.RetentionPeriod > 0 {
		return c.RetentionPeriod
	}
	return store.DefaultRetentionPeriod
}

// serviceConfig returns the service configuration, read once and then
// cached until the next retention pass; nil before the service exists.
func (e *Engine) serviceConfig(ctx context.Context) *store.ServiceConfig {
	if c := e.svc.Load(); c != nil {
		return c
	}
	c, err := e.store.ServiceGet(ctx)
	if err != nil {
		return nil
	}
	e.svc.Store(c)
	return c
}
