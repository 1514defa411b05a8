package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// runWorkflow runs the workflow task t once it is running: it replays the
// workflow over its journal (docs/workflows.md), then commits what the run
// recorded together with the workflow's next state, all in one
// transaction. A workflow that waits stays running, holds no worker and no
// wasm instance, and is claimed again when an activity ends, a timer falls
// due or a signal arrives. When the log grew during the run (a signal, an
// activity's end), the commit is refused and the workflow runs again at
// once over the longer journal. A run that goes on from an activity's end
// (w.fold) commits that end with its own.
func (w *worker) runWorkflow(ctx, callCtx context.Context, t *store.Task, deadline time.Time, timeout time.Duration) {
	e := w.e
	defer func() { w.call.Log = w.logLine }()
	f := w.fold
	w.fold = nil
	for {
		j := f.journal()
		if j == nil {
			var err error
			if j, err = e.jcache.Load(ctx, e.store, t); err != nil {
				w.unfold(ctx, f)
				w.settle(ctx, callCtx, t, deadline, nil, fault.Wrap("read journal", err))
				return
			}
		}
		if targets := j.TakeCancelTargets(); len(targets) > 0 {
			e.cancelTargets(ctx, t, targets)
		}
		r := journal.NewReplay(t, j, e.now(), journal.Record, e.mods.FunctionDigest)
		r.CheckWorkflowIDs(e.childWorkflowID)
		w.logs.Reset()
		w.call.Workflow = r
		w.call.Log = func(level, msg string) { w.workflowLog(r, level, msg) }
		w.call.LogReplayed = j.Logged()
		res, err := w.invoke(callCtx, t, timeout)
		w.call.Workflow, w.call.LogReplayed = nil, 0
		if res != nil {
			e.noteWatcher(t, res.HandlesCancel)
		}
		logs := w.workflowLogEvents()
		if cause := context.Cause(callCtx); errors.Is(cause, errShutdown) || errors.Is(cause, errCancelRequested) ||
			errors.Is(cause, errLeaseLost) {
			if !errors.Is(cause, errLeaseLost) {
				w.appendLogs(ctx, t.ID, logs)
			}
			w.unfold(ctx, f)
			w.settle(ctx, callCtx, t, deadline, res, err)
			return
		}
		if err == nil && res != nil && !res.HandlesCancel && j.CancelRequested() {
			// The run did not watch its cancel request: the request ends it.
			w.unfold(ctx, f)
			w.workflowCancelled(ctx, t, "the workflow was cancelled (its run does not watch its cancel request)", logs)
			return
		}
		if err == nil && res != nil && res.Error == nil {
			how := "returned"
			if res.Suspended {
				how = "suspended"
			}
			err = r.Ended(how)
		}
		var nd *journal.NondeterminismError
		if errors.As(r.Err(), &nd) {
			w.appendLogs(ctx, t.ID, logs)
			w.unfold(ctx, f)
			w.workflowFailed(ctx, t, nd)
			w.abandonActivities(ctx, t, j)
			return
		}
		if err == nil && res != nil && res.Error != nil {
			w.unfold(ctx, f)
			if j.CancelRequested() && res.Error.Type == string(fault.Cancelled) {
				w.workflowCancelled(ctx, t, res.Error.Message, append(r.Events(), logs...))
				return
			}
			w.workflowError(ctx, callCtx, t, deadline, res, r, j, logs)
			w.abandonActivities(ctx, t, j)
			return
		}
		if err != nil || res == nil {
			w.appendLogs(ctx, t.ID, logs)
			w.unfold(ctx, f)
			w.settle(ctx, callCtx, t, deadline, res, err) // a retry starts a new attempt from scratch
			w.abandonActivities(ctx, t, j)
			return
		}
		var (
			next  *store.Task
			again bool
		)
		switch {
		case res.Suspended:
			next, again = w.workflowWait(ctx, callCtx, t, j, r, f, logs)
		case res.ContinueAsNew:
			if next, again = w.workflowContinued(ctx, t, r, f, res.Output, logs); !again {
				w.abandonActivities(ctx, t, j)
			}
		default:
			if next, again = w.workflowCompleted(ctx, t, r, f, res.Output, logs); !again {
				w.abandonActivities(ctx, t, j)
			}
		}
		if !again {
			return
		}
		t, f = next, nil
		w.hold(t)
		if !w.e.leases.SetCancel(w.lease, w.callCancel) {
			return
		}
	}
}

// workflowLog is Call.Log during a workflow run. A run replays the code
// that earlier runs of the attempt already ran, so its first lines are
// those they logged: they are dropped, and the lines past them go to the
// plugin's logger and, with the run's commit, to the task's log.
func (w *worker) workflowLog(r *journal.Replay, level, msg string) {
	if r.LogLine() {
		w.logs.Add(levelName(level), msg, w.e.now())
	}
}

// workflowLogEvents takes the log events of the run that ended.
func (w *worker) workflowLogEvents() []store.EventDraft {
	return w.logs.Take()
}

// appendLogs appends the log events of a run that commits nothing.
func (w *worker) appendLogs(ctx context.Context, id string, logs []store.EventDraft) {
	if len(logs) == 0 {
		return
	}
	if _, err := w.e.store.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: logs, Lease: w.token}); err != nil &&
		!errors.Is(err, store.ErrTaskFinished) && !w.fenced(id, w.token, err) {
		w.e.log.Error("workflow log", "task_id", id, "error", err)
	}
}

// workflowFailed fails a workflow whose run broke its journal.
func (w *worker) workflowFailed(ctx context.Context, t *store.Task, nd *journal.NondeterminismError) {
	w.fail(ctx, t, store.StatusRunning, &store.TaskError{
		Code: string(fault.Nondeterminism), Type: string(fault.Nondeterminism),
		Message: nd.Error(), NonRetryable: true,
	})
}

// workflowError handles a workflow that returned an application error: a
// retry starts a new attempt from scratch; a workflow that fails for good
// keeps what its last run recorded (a timeout, say) in its journal.
func (w *worker) workflowError(ctx, callCtx context.Context, t *store.Task, deadline time.Time, res *CallResult, r *journal.Replay, j *journal.Journal, logs []store.EventDraft) {
	te, retryable := w.classify(callCtx, res, nil)
	if retryable && !j.CancelRequested() { // a workflow asked to cancel starts no new attempt
		if at, ok := retry.Next(t.Retry, t.Attempt, w.e.now(), deadline); ok {
			w.retry(ctx, t, te, at)
			return
		}
	}
	w.finish(ctx, &store.TaskTransitionParams{
		ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed, Error: te, Events: append(r.Events(), logs...),
	})
}

// workflowCancelled ends workflow t cancelled after its cancel request:
// it returned an error of type cancelled, or its run did not watch
// the request. events are what its last run recorded, if it commits them,
// and its log lines. Its open activities are then cancelled and its child
// workflows get their parent close policy.
func (w *worker) workflowCancelled(ctx context.Context, t *store.Task, msg string, events []store.EventDraft) {
	w.finish(ctx, &store.TaskTransitionParams{
		ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCancelled, Events: events,
		Error: &store.TaskError{Code: string(fault.Cancelled), Type: string(fault.Cancelled), Message: msg, NonRetryable: true},
	})
	if w.e.runCtx.Err() == nil {
		w.e.cancelChildren(ctx, t.ID)
	}
}

// workflowCompleted ends a workflow that returned its output, with what its
// last run recorded. It returns the workflow to run again, and true, when
// the run went on from an activity's end but the log grew meanwhile.
func (w *worker) workflowCompleted(ctx context.Context, t *store.Task, r *journal.Replay, f *foldedEnd, output []byte, logs []store.EventDraft) (*store.Task, bool) {
	if verr := codec.ValidateFrame(output, codec.DefaultLimits); verr != nil {
		w.unfold(ctx, f)
		w.fail(ctx, t, store.StatusRunning, &store.TaskError{
			Code: string(fault.CodeOf(verr)), Type: string(fault.CodeOf(verr)),
			Message: "plugin output: " + fault.Message(verr), NonRetryable: true,
		})
		return nil, false
	}
	out := store.Payload{Codec: codec.CodecAvro, Data: output}
	if f == nil && len(r.Children()) == 0 && w.parent != nil && t.ParentTaskID == w.parent.ID {
		// A child workflow its parent's commit started on this worker ends
		// as an activity does: its end goes on into the parent's next run,
		// which commits both (foldEnd), or is written with the parent's
		// event alone.
		w.finish(ctx, &store.TaskTransitionParams{
			ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: out, Events: append(r.Events(), logs...),
		})
		return nil, false
	}
	p := &store.WorkflowCommitParams{
		ID: t.ID, Events: append(r.Events(), logs...), Children: r.Children(),
		To: store.StatusCompleted, Output: out,
	}
	if !w.e.parentOutcome(t, p) {
		w.unfold(ctx, f)
		w.settle(ctx, ctx, t, time.Time{}, nil, fault.Errorf(fault.Internal, "encode the end of child workflow %s", t.ID))
		return nil, false
	}
	done, err := w.commitRun(ctx, f, p)
	if err != nil {
		if next := w.unfold(ctx, f); next != nil {
			return next, true
		}
		w.lost(ctx, t.ID, err, rerunItem(t.ID))
		return nil, false
	}
	if len(r.Children()) > 0 {
		w.e.sched.notify()
	}
	w.e.armChildren(r.Children())
	w.e.taskFinished(done.Task)
	if p.WakeParent {
		w.e.wf.markDue()
		w.e.sched.notify()
	}
	return nil, false
}

// parentOutcome adds to p, when t is a child workflow, the journal event
// its parent receives of its end, and wakes the parent; false when the
// event does not encode.
func (e *Engine) parentOutcome(t *store.Task, p *store.WorkflowCommitParams) bool {
	if t.ParentTaskID == "" {
		return true
	}
	ev := journal.ActivityEnd(&store.TaskTransitionParams{ID: t.ID, To: p.To, Output: p.Output, Error: p.Error})
	d, err := journal.Encode(ev)
	if err != nil {
		e.log.Error("child workflow outcome event", "task_id", t.ID, "error", err)
		return false
	}
	p.ParentEvents, p.WakeParent = []store.EventDraft{d}, true
	return true
}

// workflowContinued ends a workflow that continued as new, with what its
// last run recorded, and inserts its next run in the same commit: the
// same function, owner, options and execution deadline, with input as
// its input, under the workflow id of the run (its task id when it has
// none), on the latest version of the module that still exports the
// function as a workflow (else the run's own). It returns the workflow to
// run again, and true, when the run went on from an activity's end but
// the log grew meanwhile.
func (w *worker) workflowContinued(ctx context.Context, t *store.Task, r *journal.Replay, f *foldedEnd, input []byte, logs []store.EventDraft) (*store.Task, bool) {
	e := w.e
	if verr := codec.ValidateFrame(input, codec.DefaultLimits); verr != nil {
		w.unfold(ctx, f)
		w.fail(ctx, t, store.StatusRunning, &store.TaskError{
			Code: string(fault.CodeOf(verr)), Type: string(fault.CodeOf(verr)),
			Message: "continue_as_new input: " + fault.Message(verr), NonRetryable: true,
		})
		return nil, false
	}
	if t.ParentTaskID != "" {
		w.unfold(ctx, f)
		w.fail(ctx, t, store.StatusRunning, &store.TaskError{
			Code: string(fault.Invalid), Type: "continue_as_new_in_child", NonRetryable: true,
			Message: "a child workflow cannot continue as new; its parent awaits this run",
		})
		return nil, false
	}
	digest := t.ModuleDigest
	if m, kind, err := e.mods.Function(ctx, t.Module, t.Function); err == nil && kind == store.KindWorkflow {
		digest = m.Digest
	}
	wid := t.WorkflowID
	if wid == "" {
		wid = t.ID
	}
	next := &store.TaskInsertParams{
		ID: store.NewID(store.TaskIDPrefix), Module: t.Module, ModuleDigest: digest, Function: t.Function,
		Kind: store.KindWorkflow, Input: store.Payload{Codec: codec.CodecAvro, Data: input}, OnRestart: t.OnRestart,
		Timeout: t.Timeout, Deadline: t.Deadline, RunTimeout: t.RunTimeout, MemoryLimit: t.MemoryLimit,
		Retry: t.Retry, OwnerClientID: t.OwnerClientID, WorkflowID: wid,
	}
	ev, err := continuedEvent(next)
	if err != nil {
		w.unfold(ctx, f)
		w.settle(ctx, ctx, t, time.Time{}, nil, fault.Wrap("continue as new", err))
		return nil, false
	}
	done, err := w.commitRun(ctx, f, &store.WorkflowCommitParams{
		ID: t.ID, Events: append(append(r.Events(), logs...), ev), Children: r.Children(),
		To: store.StatusCompleted, Output: store.Payload{Codec: codec.CodecAvro, Data: nullFrame}, Next: next,
	})
	if err != nil {
		if nt := w.unfold(ctx, f); nt != nil {
			return nt, true
		}
		w.lost(ctx, t.ID, err, rerunItem(t.ID))
		return nil, false
	}
	if len(r.Children()) > 0 {
		e.sched.notify()
	}
	e.armChildren(r.Children())
	e.taskFinished(done.Task)
	if done.Next != nil {
		e.overdue.armAt(e, done.Next.StartDeadline)
		e.sched.notify()
	}
	return nil, false
}

// continuedEvent is the workflow.continued_as_new event of a run that
// continues as next.
func continuedEvent(next *store.TaskInsertParams) (store.EventDraft, error) {
	b, err := json.Marshal(struct {
		NextTaskID string        `json:"next_task_id"`
		WorkflowID string        `json:"workflow_id"`
		Input      store.Payload `json:"input_envelope"`
	}{next.ID, next.WorkflowID, next.Input})
	return store.EventDraft{Type: EventContinuedAsNew, Payload: b}, err
}

// EventContinuedAsNew is the event a workflow run that continues as new
// writes before its end: next_task_id, workflow_id and input_envelope of
// the next run.
const EventContinuedAsNew = "workflow.continued_as_new"

// workflowWait commits a suspended run: the workflow waits. It returns the
// task to run again, and true, when the log grew during the run.
func (w *worker) workflowWait(ctx, callCtx context.Context, t *store.Task, j *journal.Journal, r *journal.Replay, f *foldedEnd, logs []store.EventDraft) (*store.Task, bool) {
	e := w.e
	// A workflow waits until its earliest timer or signal timeout, or
	// until its total, execution or run deadline: claimed then, load ends
	// it.
	wake, children := earliest(r.WakeAt(), endOf(t).at), r.Children()
	if n := j.LastSeq() + 1 + int64(len(r.Events())+len(logs)); n > e.cfg.MaxHistoryEvents {
		w.unfold(ctx, f)
		w.fail(ctx, t, store.StatusRunning, &store.TaskError{
			Code: string(fault.HistoryLimitExceeded), Type: string(fault.HistoryLimitExceeded), NonRetryable: true,
			Message: fmt.Sprintf("the workflow's log would hold %d events, more than the limit of %d; a workflow that runs this long should continue as new", n, e.cfg.MaxHistoryEvents),
		})
		w.abandonActivities(ctx, t, j)
		return nil, false
	}
	res, err := w.commitRun(ctx, f, &store.WorkflowCommitParams{
		ID: t.ID, LastSeq: j.LastSeq(), Events: append(r.Events(), logs...), Children: children, Wait: true, WakeAt: wake,
		StartChild: len(children) > 0,
	})
	switch {
	case err != nil && f != nil:
		if next := w.unfold(ctx, f); next != nil {
			return next, true
		}
		w.lost(ctx, t.ID, err, rerunItem(t.ID))
		return nil, false
	case errors.Is(err, store.ErrConflict) && res != nil && res.Task.Status == store.StatusRunning:
		return res.Task, true // an event arrived during the run: run over it
	case err != nil:
		w.lost(ctx, t.ID, err, rerunItem(t.ID))
		return nil, false
	}
	cur := res.Task
	if res.Started != nil {
		// This worker runs the first new activity itself, at once; the
		// scheduler hands out the others. Its end may go on into the
		// workflow's next run.
		w.next = &workItem{task: res.Started, resumed: true, fresh: true, parent: cur}
	}
	if len(children) > 1 || (len(children) == 1 && res.Started == nil) {
		e.sched.notify()
	}
	e.armChildren(children)
	if !wake.IsZero() {
		e.wf.armAt(e, wake)
	}
	// What the run added to the journal is now in the log, right after
	// what it read: the journal is the log's, up to cur.LastSeq.
	j.Committed(cur.LastSeq, logs)
	e.signals.Settle(j)
	e.jcache.Put(j)
	// The workflow waits and holds no call: a cancel that arrives from now
	// on finds no call to stop and ends the task itself; one that came
	// during the run left its cause on callCtx.
	e.running.remove(w.reg)
	w.releaseLease() // a waiting workflow holds no lease
	if errors.Is(context.Cause(callCtx), errCancelRequested) {
		w.cancelled(ctx, t.ID)
	}
	return nil, false
}

// abandonActivities cancels the unfinished activities of workflow t once
// its run ended it (completed, failed, or sent back to queued for a new
// attempt from scratch): nothing awaits them any more. It reads the task
// only when the journal j holds such activities; a cancelled workflow's
// activities are cancelled by the cancel itself, and on shutdown the
// workflow and its activities are left to start-up recovery.
func (w *worker) abandonActivities(ctx context.Context, t *store.Task, j *journal.Journal) {
	if !j.PendingActivities() || w.e.runCtx.Err() != nil {
		return
	}
	cur, err := w.e.store.TaskGet(ctx, t.ID)
	switch {
	case err != nil:
		w.e.log.Error("abandoned activities", "task_id", t.ID, "error", err)
		return
	case cur.Status == store.StatusRunning && cur.Attempt == t.Attempt,
		cur.Status == store.StatusCancelling, cur.Status == store.StatusCancelled:
		return
	}
	w.e.cancelChildren(ctx, t.ID)
}

// commitRun commits a run of a workflow, with the activity's end the run
// went on from, if any.
func (w *worker) commitRun(ctx context.Context, f *foldedEnd, p *store.WorkflowCommitParams) (*store.WorkflowCommitResult, error) {
	if f != nil {
		p.EndChild, p.LastSeq, p.At = f.end, f.lastSeq, f.at
	}
	p.Lease, p.Host, p.LeaseTTL = w.token, w.e.cfg.Host, w.e.cfg.LeaseTTL
	start := time.Now()
	res, err := w.e.store.WorkflowCommit(ctx, p)
	w.e.metrics.ObserveWrite("workflow_commit", time.Since(start))
	if err == nil && res.Ended != nil {
		w.e.taskFinished(res.Ended)
	}
	return res, err
}

// childOutcome adds to p, when it is the terminal transition of an
// activity that a workflow scheduled, the journal event the workflow
// receives, and reports whether it is.
func (e *Engine) childOutcome(child *store.Task, p *store.TaskTransitionParams) bool {
	if child == nil || child.ParentTaskID == "" || child.ID != p.ID {
		return false
	}
	ev := journal.ActivityEnd(p)
	if ev == nil {
		return false
	}
	d, err := journal.Encode(ev)
	if err != nil {
		e.log.Error("activity outcome event", "task_id", child.ID, "error", err)
		return false
	}
	p.ParentEvents = append(p.ParentEvents, d)
	p.WakeParent = true
	return true
}

// childEnd writes the end of an activity that a workflow scheduled, with
// the workflow's journal event. A workflow that waits is handed to this
// worker, which runs it next: no claim, no wake.
func (w *worker) childEnd(ctx context.Context, p *store.TaskTransitionParams) (*store.Task, error) {
	start := time.Now()
	res, err := w.e.store.WorkflowChildEnd(ctx, p)
	w.e.metrics.ObserveWrite("task_transition", time.Since(start))
	if res == nil {
		return nil, err
	}
	if err == nil && res.Parent != nil {
		w.next = &workItem{task: res.Parent, resumed: true}
	}
	return res.Task, err
}

// cancelChildren cancels the unfinished activities of a workflow that
// ended or was terminated, queued ones at once, running ones through
// cancelling, and applies their parent close policy to its child
// workflows: terminate ends one at once (TaskTerminate), request_cancel
// asks it to cancel (TaskCancel), abandon leaves it running.
func (e *Engine) cancelChildren(ctx context.Context, parentID string) {
	cursor := ""
	for {
		ts, err := e.store.TaskList(ctx, &store.TaskListParams{
			ParentTaskID: parentID, Cursor: cursor, Limit: 1000,
			Statuses: []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning},
		})
		if err != nil {
			e.log.Error("cancel workflow activities", "task_id", parentID, "error", err)
			return
		}
		for _, c := range ts {
			if c.Kind == store.KindWorkflow {
				var err error
				switch c.ParentClosePolicy {
				case store.ParentCloseAbandon: // an abandoned child runs on alone
				case store.ParentCloseRequestCancel:
					_, err = e.cancelWorkflow(ctx, c, "")
				default:
					_, err = e.cancelTask(ctx, c.ID)
				}
				if err != nil {
					e.log.Error("parent close policy of a child workflow", "task_id", c.ID, "policy", c.ParentClosePolicy, "error", err)
				}
				continue
			}
			t, changed, err := e.store.TaskCancel(ctx, c.ID)
			if err != nil {
				e.log.Error("cancel workflow activity", "task_id", c.ID, "error", err)
				continue
			}
			if t.Status == store.StatusCancelling {
				e.running.cancel(c.ID, errCancelRequested)
			}
			if changed && t.Status == store.StatusCancelled {
				e.taskFinished(t)
			}
		}
		if len(ts) < 1000 {
			return
		}
		cursor = ts[len(ts)-1].ID
	}
}

// cancelWaiting ends the cancel of a workflow that held no call when the
// cancel arrived: it was waiting.
func (e *Engine) cancelWaiting(ctx context.Context, id string) {
	e.jcache.Drop(id)
	t, err := e.store.TaskTransition(ctx, &store.TaskTransitionParams{
		ID: id, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled,
	})
	if err != nil {
		if !benign(err) {
			e.healer.add(rerunItem(id), err) // carries out the cancel
		}
		return
	}
	e.taskFinished(t)
}

// armChildren arms the overdue sweep for the activities a workflow's
// commit queued with a schedule-to-start timeout.
func (e *Engine) armChildren(children []*store.TaskInsertParams) {
	for _, c := range children {
		if c.ScheduleToStartTimeout > 0 {
			e.overdue.armAt(e, e.now().Add(c.ScheduleToStartTimeout))
		}
	}
}
