package runtime

import (
	"context"
	"slices"
	"time"
)

// maxListedInterrupted bounds the task ids a shutdown names in its log.
const maxListedInterrupted = 50

// Drain is the first half of a graceful stop: the engine stops starting
// tasks (it claims none and starts none directly; new tasks are still
// accepted, queued, for the next start) and waits up to grace for the
// plugin calls in progress to finish. It returns the ids of the tasks whose
// calls were still running when it gave up, after logging them; Close then
// interrupts those calls, and start-up recovery applies each task's
// on_restart policy at the next Open. A grace of 0 or less stops the
// starts and returns at once. After Drain the engine starts nothing more:
// it is meant to be called once, just before Close.
func (e *Engine) Drain(ctx context.Context, grace time.Duration) []string {
	if !e.Ready() {
		return nil
	}
	e.draining.Store(true)
	start := time.Now()
	if grace > 0 {
		ctx, cancel := context.WithTimeout(ctx, grace)
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for e.running.len() > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}
	ids := e.running.ids()
	if len(ids) == 0 {
		e.log.Info("drained: no plugin call is running", "waited", time.Since(start).Round(time.Millisecond))
		return nil
	}
	listed := ids[:min(len(ids), maxListedInterrupted)]
	e.log.Warn("shutdown interrupts running plugin calls; their tasks are recovered by their on_restart policy at the next start",
		"calls", len(ids), "tasks", listed, "listed", len(listed), "waited", time.Since(start).Round(time.Millisecond))
	return ids
}

// ids returns the ids of the tasks with a call in progress, sorted.
func (r *runningCalls) ids() []string {
	r.mu.Lock()
	ids := make([]string, 0, len(r.m))
	for id := range r.m {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	slices.Sort(ids)
	return ids
}
