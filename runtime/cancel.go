package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// TaskTerminate ends a task at once (persistence §11.2), a workflow
// without its own say (TaskCancel asks it). A queued
// or loading task becomes cancelled; a running one becomes cancelling, its
// plugin call is stopped, and its worker then writes cancelled; a
// workflow's activities are cancelled and its child workflows get their
// parent close policy. Terminating a cancelling or finished task succeeds
// and changes nothing. It returns the task as it is after the call, and
// fault.NotFound for a task the caller may not see.
func (e *Engine) TaskTerminate(ctx context.Context, who Caller, id string) (*store.Task, error) {
	t, err := e.cancelable(ctx, who, id)
	if err != nil || t.Status.IsTerminal() {
		return t, err
	}
	return e.cancelTask(ctx, id)
}

// cancelable returns task id for a cancel or terminate by who: one the
// caller may see that no workflow started.
func (e *Engine) cancelable(ctx context.Context, who Caller, id string) (*store.Task, error) {
	t, err := e.visibleTask(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if !t.Status.IsTerminal() && t.ParentTaskID != "" {
		return nil, fault.Errorf(fault.Conflict, "task %s was started by workflow %s; cancel the workflow instead", id, t.ParentTaskID)
	}
	return t, nil
}

// watcherKey is the key of workflow t in Engine.watchers.
func watcherKey(t *store.Task) string { return t.ModuleDigest + "\x00" + t.Function }

// noteWatcher notes whether a run of workflow t watched its cancel request.
func (e *Engine) noteWatcher(t *store.Task, watched bool) {
	k := watcherKey(t)
	if v, ok := e.watchers.Load(k); !ok || v.(bool) != watched {
		e.watchers.Store(k, watched)
	}
}

// watches reports whether workflow t may handle its cancel request: its
// function's last run on this host watched it, or none ran yet. A cancel
// of a workflow that does not ends it at once, as TaskTerminate, rather
// than through its next run.
func (e *Engine) watches(t *store.Task) bool {
	v, ok := e.watchers.Load(watcherKey(t))
	return !ok || v.(bool)
}

// cancelWorkflow cancels workflow t for clientID ("" for the engine): it
// asks a workflow that may watch its cancel request (requestCancel) and
// terminates one that does not (cancelTask).
func (e *Engine) cancelWorkflow(ctx context.Context, t *store.Task, clientID string) (*store.Task, error) {
	if e.watches(t) {
		return e.requestCancel(ctx, t.ID, clientID)
	}
	return e.cancelTask(ctx, t.ID)
}

// requestCancel asks workflow id to cancel (docs/workflows.md,
// "Cancellation"): the request is recorded once in its log, with the
// cancel_requested_at of the task, and wakes it. Its next run cancels the
// activities and child workflows it had open and resolves its cancel
// future; a workflow whose run does not watch the request is ended
// by that run. A workflow asked before, or finished, is left as it is.
func (e *Engine) requestCancel(ctx context.Context, id, clientID string) (*store.Task, error) {
	d, err := journal.Encode(&journal.CancelRequested{ClientID: clientID})
	if err != nil {
		return nil, fault.Wrap("cancel request", err)
	}
	start := time.Now()
	_, err = e.store.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: []store.EventDraft{d}, Wake: true, CancelRequest: true})
	e.metrics.ObserveWrite("event_append", time.Since(start))
	switch {
	case err == nil:
		e.wf.markDue()
		e.sched.notify()
		e.stopStuckRun(id)
	case errors.Is(err, store.ErrCancelRequested), errors.Is(err, store.ErrTaskFinished):
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "task %q not found", id)
	default:
		return nil, fault.Wrap("cancel request", err)
	}
	t, err := e.store.TaskGet(ctx, id)
	if err != nil {
		return nil, fault.Wrap("cancel request", err)
	}
	return t, nil
}

// stopStuckRun terminates workflow id if the run in progress on this host
// when its cancel request arrived is still going after Config.CancelGrace.
func (e *Engine) stopStuckRun(id string) {
	calls := e.running.of(id)
	if len(calls) == 0 {
		return
	}
	time.AfterFunc(e.cfg.CancelGrace, func() {
		if e.runCtx.Err() != nil || !e.running.any(calls) {
			return
		}
		e.log.Warn("a workflow run outlasted its cancel request; terminating it", "task_id", id, "grace", e.cfg.CancelGrace)
		if _, err := e.cancelTask(e.runCtx, id); err != nil {
			e.log.Error("terminate a stuck workflow run", "task_id", id, "error", err)
		}
	})
}

// cancelTargets carries a workflow's cancel request to the child tasks it
// had open then (journal.Journal.TakeCancelTargets): an activity is
// cancelled — one still queued ends at once, with its end in the
// workflow's log; a running one is asked to stop (activity `cancelled`) —
// and a child workflow is asked to cancel in turn, unless its parent close
// policy is abandon.
func (e *Engine) cancelTargets(ctx context.Context, parent *store.Task, ids []string) {
	for _, id := range ids {
		c, err := e.store.TaskGet(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			e.log.Error("cancel request of a child task", "task_id", id, "workflow_id", parent.ID, "error", err)
			continue
		case c.Status.IsTerminal() || c.ParentTaskID != parent.ID:
			continue
		case c.Kind == store.KindWorkflow:
			if c.ParentClosePolicy != store.ParentCloseAbandon {
				if _, err := e.cancelWorkflow(ctx, c, ""); err != nil {
					e.log.Error("cancel request of a child workflow", "task_id", c.ID, "error", err)
				}
			}
			continue
		}
		e.cancelActivity(ctx, c)
	}
}

// cancelActivity cancels activity c of a workflow that goes on running: a
// queued one ends cancelled with its end in the workflow's log, in one
// transaction; a running one becomes cancelling and its call is asked to
// stop (its worker then writes the end, with the workflow's event). A
// task that moved meanwhile is read again.
func (e *Engine) cancelActivity(ctx context.Context, c *store.Task) {
	for range 3 {
		var p *store.TaskTransitionParams
		switch c.Status {
		case store.StatusQueued, store.StatusLoading:
			p = &store.TaskTransitionParams{
				ID: c.ID, From: []store.Status{c.Status}, To: store.StatusCancelled,
				Error: &store.TaskError{Code: string(fault.Cancelled), Type: string(fault.Cancelled), Message: "the workflow was asked to cancel", NonRetryable: true},
			}
			e.childOutcome(c, p)
		case store.StatusRunning:
			p = &store.TaskTransitionParams{ID: c.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCancelling}
		default:
			return // cancelling or ended
		}
		t, err := e.store.TaskTransition(ctx, p)
		switch {
		case err == nil && t.Status == store.StatusCancelling:
			e.running.cancel(c.ID, errCancelRequested)
			return
		case err == nil:
			e.taskFinished(t)
			e.wf.markDue()
			e.sched.notify()
			return
		case !errors.Is(err, store.ErrConflict):
			e.log.Error("cancel an activity", "task_id", c.ID, "error", err)
			return
		}
		if c, err = e.store.TaskGet(ctx, c.ID); err != nil {
			return
		}
	}
}
