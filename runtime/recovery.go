package runtime

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/store"
)

// recoverTasks runs at Open, before any work starts. It applies the start-up
// recovery of persistence §11.3 through the store (one transaction per new
// state and its event), returns the running tasks kept running by policy
// resume, to be continued from their last checkpoint (workflows continue
// from their journal through the store's claim instead), and arms the
// scheduler for the queued tasks that fall due later (retries that were
// waiting when the server stopped).
//
// On a shared store it never calls TaskRecover, which would take the tasks
// of live hosts: it takes over only the tasks whose lease expired
// (TaskReclaim, as the reclaim loop does later), and releases the
// idempotency keys left in flight longer than StaleKeysAfter.
func (e *Engine) recoverTasks(ctx context.Context) ([]*store.Task, error) {
	if e.store.Shared() {
		resumed, err := e.reclaim(ctx, true)
		if err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		e.wf.markDue()
		if err := e.armQueued(ctx); err != nil {
			return nil, err
		}
		return resumed, nil
	}
	rec, err := e.store.TaskRecover(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	// One line says what the recovery did (the store's own is at debug
	// level).
	if n := len(rec.Failed) + len(rec.Requeued) + len(rec.Resumed) + len(rec.Cancelled) + rec.Queued + rec.IdempotencyKeysReleased; n > 0 {
		e.log.Info("recovered tasks", "failed", len(rec.Failed), "requeued", len(rec.Requeued),
			"resumed", len(rec.Resumed), "cancelled", len(rec.Cancelled), "queued", rec.Queued,
			"idempotency_keys_released", rec.IdempotencyKeysReleased)
	}
	resumed := make([]*store.Task, 0, len(rec.Resumed))
	var workflows []string
	for _, id := range rec.Resumed {
		t, err := e.store.TaskGet(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("recover: resume %s: %w", id, err)
		}
		switch {
		case t.Status != store.StatusRunning:
		case t.Kind == store.KindWorkflow:
			// A workflow continues from its journal: a waiting one keeps
			// waiting, one that was in a run is claimed and runs again.
			workflows = append(workflows, id)
		default:
			resumed = append(resumed, t)
		}
	}
	if err := e.store.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: workflows}); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	e.wf.markDue() // timers that fell due while the server was down fire now
	if err := e.armQueued(ctx); err != nil {
		return nil, err
	}
	return resumed, nil
}

// armQueued arms the scheduler for the queued tasks that fall due later.
func (e *Engine) armQueued(ctx context.Context) error {
	now := e.now()
	cursor := ""
	for {
		ts, err := e.store.TaskList(ctx, &store.TaskListParams{
			Statuses: []store.Status{store.StatusQueued}, Cursor: cursor, Limit: 1000,
		})
		if err != nil {
			return fmt.Errorf("recover: list queued tasks: %w", err)
		}
		for _, t := range ts {
			if t.NotBefore.After(now) {
				e.sched.wakeAt(t.NotBefore)
			}
		}
		if len(ts) < 1000 {
			break
		}
		cursor = ts[len(ts)-1].ID
	}
	return nil
}
