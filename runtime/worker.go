package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/callrec"
	"github.com/weft-run/weft/runtime/internal/leases"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/store"
)

// The cancellation causes of a plugin call besides errShutdown.
var (
	errCancelRequested = errors.New("task cancel requested")
	errAttemptTimeout  = errors.New("attempt timed out")
	errTotalTimeout    = errors.New("task timed out")
)

// EventAttemptFailed is the event appended, in the same transaction as the
// move back to queued, when a failed attempt is retried. Its payload holds
// the attempt, the error and the time of the next attempt.
const EventAttemptFailed = "task.attempt_failed"

// worker runs one task at a time. Its Call is reused from task to task, so
// the hot path allocates little beyond what the store returns.
type worker struct {
	e    *Engine
	task *store.Task
	call Call
	logs callrec.Log
	// progress throttles the progress reports of the call in progress.
	progress *callrec.Progress
	// next is work handed to this worker by the run that ended: the
	// activity a workflow scheduled, or the workflow an activity woke. It
	// runs right away, without a claim.
	next *workItem
	// parent and fold are those of the work item in progress.
	parent *store.Task
	fold   *foldedEnd
	// reg is the registration of the call in progress in Engine.running.
	reg *runningCall
	// mark is runningCalls.mark when the run in progress began: the mark
	// of the work it hands over in next.
	mark uint64
	// lease is the lease of the task in progress this host holds (the zero
	// key for none), and token its fencing token, passed on every write
	// for the task (0 when the task holds no lease).
	lease leases.Key
	token int64
	// callCancel stops the call in progress.
	callCancel context.CancelCauseFunc
	// beat is the heartbeat watch of the activity call in progress, nil
	// without a heartbeat timeout.
	beat *beat
}

// hold makes t's lease the one of the run in progress: its token fences
// the run's writes, and the heartbeat renews it.
func (w *worker) hold(t *store.Task) {
	token := int64(0)
	if t.Lease.Held() {
		token = t.Lease.Token
	}
	if w.lease.ID == t.ID && w.lease.Token == token {
		w.token = token
		return
	}
	w.releaseLease()
	w.lease, w.token = w.e.leases.Hold(t, w.e.cfg.Host, w.e.cfg.LeaseTTL, time.Now()), token
}

// releaseLease gives up the lease registration of the run in progress.
func (w *worker) releaseLease() {
	w.e.leases.Release(w.lease)
	w.lease, w.token = leases.Key{}, 0
}

// fenced reports whether err says the lease of task id (token) is lost,
// and then stops the call and says so once.
func (w *worker) fenced(id string, token int64, err error) bool {
	if !errors.Is(err, store.ErrLeaseLost) {
		return false
	}
	k := leases.Key{ID: id, Token: token}
	if id == w.lease.ID && token == w.lease.Token {
		k = w.lease
	}
	w.e.leaseLost(k, "a write for the task was refused: "+err.Error())
	return true
}

// leaseGone reports whether the run in progress lost its lease.
func (w *worker) leaseGone() bool { return w.e.leases.IsLost(w.lease) }

// worker is the loop of one worker goroutine.
func (e *Engine) worker() {
	defer e.wg.Done()
	w := &worker{e: e}
	w.call.Wasm = w.wasm
	w.call.Log = w.logLine
	w.call.SaveCheckpoint = w.saveCheckpoint
	w.progress = callrec.NewProgress(e.store, e.cfg.ProgressInterval, e.log)
	w.call.Progress = func(done, total int64, msg string) {
		w.beat.beat() // a progress report is a heartbeat too
		w.progress.Report(done, total, msg)
	}
	w.call.Heartbeat = func() { w.beat.beat() }
	for {
		select {
		case it := <-e.sched.work:
			// Whoever handed the item over counted it (admission).
			tk := e.adm.TicketOf(it.task)
			w.run(it)
			for w.next != nil {
				it, w.next = *w.next, nil
				if it.mark == 0 {
					it.mark = w.mark // the run that handed it over committed it
				}
				tk = e.adm.Hand(tk, it.task)
				w.run(it)
			}
			e.adm.Release(tk)
			e.sched.free <- struct{}{}
		case <-e.runCtx.Done():
			return
		}
	}
}

// run takes one task from loading (or, resumed, from running) to its next
// status. Every status change is a compare-and-set through the store: when a
// cancel wins a race, the worker finishes the cancel instead.
func (w *worker) run(it workItem) {
	e := w.e
	w.task, w.parent, w.fold = it.task, it.parent, it.fold
	// Whatever this run commits and hands over in w.next commits after
	// this mark (see the registration below).
	w.mark = e.running.mark()
	ctx := context.Background() // writes finish even during shutdown
	defer func() {
		// An activity's end that no run of its workflow took is written
		// alone.
		if f := w.fold; f != nil {
			w.fold = nil
			if p := w.unfold(ctx, f); p != nil && e.runCtx.Err() == nil && w.next == nil {
				w.next = &workItem{task: p, resumed: true, fresh: true}
			}
		}
		w.task, w.parent = nil, nil
	}()
	w.hold(it.task)
	defer w.releaseLease()
	if e.runCtx.Err() != nil {
		return // shutdown: a claimed task stays loading, for start-up recovery
	}
	if !w.load(ctx, it) {
		return
	}

	callCtx, cancel := context.WithCancelCause(e.runCtx)
	defer cancel(nil)
	w.callCancel = cancel
	if !e.leases.SetCancel(w.lease, cancel) {
		return // the lease was lost while the task loaded
	}
	// Register before the move to running: a cancel that commits after the
	// move then finds the call to stop, and one that commits before it makes
	// the move fail.
	//
	// A task handed over running (fresh, or resumed) has no such move: it
	// was running in the store before this registration, and a cancel may
	// have committed in between and found no call to stop. Such a cancel
	// counts a miss in runningCalls, under the lock that orders its look-up
	// and this registration, and add returns the count. When it still
	// equals the item's mark, taken before the commit that made the task
	// running, no cancel of any task missed its call since, and the task
	// runs without a read (the hot path stays one commit). Otherwise start
	// reads the task again, as it always does for a resumed task without a
	// mark: a cancel that committed before the read is seen there, and one
	// that commits after it finds the registered call. No interleaving loses
	// a cancel, and the record is one counter. A fresh workflow run needs
	// none of this: TaskCancel ends a workflow it finds without a call at
	// once (cancelWaiting), and the run's commit, a compare-and-set from
	// running, is then refused.
	if h := e.hookRegister; h != nil {
		h(it.task.ID)
	}
	var misses uint64
	w.reg, misses = e.running.add(it.task.ID, cancel)
	defer e.running.remove(w.reg)
	if it.fresh && it.task.Kind != store.KindWorkflow && it.mark != misses {
		it.fresh = false // read it again
	}
	t, ok := w.start(ctx, it)
	if !ok {
		return
	}
	w.task = t
	w.hold(t)
	if !e.leases.SetCancel(w.lease, cancel) {
		return
	}

	// The call ends at the earliest of the attempt's timeout and the
	// task's total, execution and run deadlines, each with its own cause.
	// A retry may start only before the total and execution deadlines.
	deadline := retryBy(t)
	timeout, cause := t.Timeout, errAttemptTimeout
	if end := endOf(t); !end.at.IsZero() {
		if left := end.at.Sub(e.now()); timeout == 0 || left < timeout {
			timeout, cause = max(left, time.Nanosecond), end.cause
		}
	}
	if timeout > 0 {
		var stop context.CancelFunc
		callCtx, stop = context.WithTimeoutCause(callCtx, timeout, cause)
		defer stop()
	}
	if t.Kind == store.KindWorkflow {
		w.runWorkflow(ctx, callCtx, t, deadline, timeout)
		return
	}
	w.logs.Reset()
	w.progress.Begin(t.ID, w.token)
	w.beat = startBeat(t.HeartbeatTimeout, cancel)
	res, err := w.invoke(callCtx, t, timeout)
	w.beat.stop()
	w.beat = nil
	if !errors.Is(context.Cause(callCtx), errLeaseLost) {
		w.fenced(t.ID, w.token, w.logs.Flush(ctx, e.store, t.ID, w.token, true))
	}
	w.progress.End(ctx)
	w.settle(ctx, callCtx, t, deadline, res, err)
}

// load checks the task's deadlines and loads its module while the task is
// loading (or running, when resumed: a waiting workflow woken by its
// deadline ends here). It ends the task and returns false when either
// fails; on shutdown it returns false and writes nothing.
func (w *worker) load(ctx context.Context, it workItem) bool {
	e, t := w.e, it.task
	from := store.StatusLoading
	if it.resumed {
		from = store.StatusRunning
	}
	if end := endOf(t); !end.at.IsZero() && !e.now().Before(end.at) {
		if errors.Is(end.cause, errTotalTimeout) {
			w.fail(ctx, t, from, &store.TaskError{
				Code: string(fault.Timeout), Type: string(fault.Timeout),
				Message: "task timed out before its attempt could start", NonRetryable: true,
			})
			return false
		}
		w.timedOut(ctx, t, from, end.cause)
		return false
	}
	if err := e.mods.Load(e.runCtx, t.ModuleDigest); err != nil {
		if e.runCtx.Err() == nil {
			w.fail(ctx, t, from, taskErrorOf(err))
		}
		return false
	}
	return true
}

// start moves a claimed task from loading to running and returns it; a
// resumed task is running already, so start only checks that no cancel
// arrived meanwhile. It returns false when the task must not run.
func (w *worker) start(ctx context.Context, it workItem) (*store.Task, bool) {
	e, id := w.e, it.task.ID
	if it.fresh {
		return it.task, true
	}
	if it.resumed {
		cur, err := e.store.TaskGet(ctx, id)
		switch {
		case err != nil:
			e.log.Error("resume task", "task_id", id, "error", err)
			return nil, false
		case cur.Status == store.StatusCancelling:
			w.cancelled(ctx, id)
			return nil, false
		case cur.Status != store.StatusRunning:
			return nil, false
		case e.store.Shared() && cur.Lease.Held() && cur.Lease.Host != e.cfg.Host:
			return nil, false // taken over by another host meanwhile
		}
		return cur, true
	}
	t, err := w.transition(ctx, &store.TaskTransitionParams{
		ID: id, From: []store.Status{store.StatusLoading}, To: store.StatusRunning,
	})
	if err != nil {
		if w.fenced(id, w.token, err) {
			return nil, false
		}
		if !benign(err) {
			// The store refused the start: the task goes back to the
			// queue once it takes writes again.
			e.healer.add(transitionItem(it.task, &store.TaskTransitionParams{
				ID: id, From: []store.Status{store.StatusLoading}, To: store.StatusQueued, Reason: "store_error", Lease: w.token,
			}), err)
		}
		return nil, false // cancelled while loading, or written again later
	}
	return t, true
}

// invoke runs the plugin call of t through the worker's reusable Call.
func (w *worker) invoke(ctx context.Context, t *store.Task, timeout time.Duration) (*CallResult, error) {
	w.call.TaskID = t.ID
	w.call.Attempt = t.Attempt
	w.call.Module = t.Module
	w.call.Digest = t.ModuleDigest
	w.call.Function = t.Function
	w.call.Input = t.Input.Data
	// A checkpoint survives only where it should: retries and the retry
	// policy of recovery clear it, resume keeps it (persistence §11.3).
	w.call.Checkpoint = t.Checkpoint.Data
	w.call.Timeout = timeout
	w.call.MemoryLimit = t.MemoryLimit
	start := time.Now()
	res, err := w.e.exec.Call(ctx, &w.call)
	w.e.metrics.ObserveCall(t.Module, time.Since(start), err == nil && res != nil && res.Error == nil)
	w.call.Input, w.call.Checkpoint = nil, nil
	return res, err
}

// settle writes the outcome of a call: completed, a retry, failed, or
// cancelled; after a shutdown it writes nothing.
func (w *worker) settle(ctx, callCtx context.Context, t *store.Task, deadline time.Time, res *CallResult, err error) {
	if err == nil && res != nil && res.Error == nil {
		if verr := codec.ValidateFrame(res.Output, codec.DefaultLimits); verr != nil {
			w.fail(ctx, t, store.StatusRunning, &store.TaskError{
				Code: string(fault.CodeOf(verr)), Type: string(fault.CodeOf(verr)),
				Message: "plugin output: " + fault.Message(verr), NonRetryable: true,
			})
			return
		}
		w.finish(ctx, &store.TaskTransitionParams{
			ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			Output: store.Payload{Codec: codec.CodecAvro, Data: res.Output},
		})
		return
	}
	switch c := context.Cause(callCtx); {
	case errors.Is(c, errShutdown):
		// Leave the task to start-up recovery (persistence §11.3).
		w.e.log.Debug("call stopped by shutdown", "task_id", t.ID)
		return
	case errors.Is(c, errLeaseLost) || w.leaseGone():
		// Another host owns the task now: nothing more is written.
		return
	case errors.Is(c, errCancelRequested):
		w.cancelled(ctx, t.ID)
		return
	}
	te, retryable := w.classify(callCtx, res, err)
	if retryable {
		if at, ok := retry.Next(t.Retry, t.Attempt, w.e.now(), deadline); ok {
			w.retry(ctx, t, te, at)
			return
		}
	}
	w.fail(ctx, t, store.StatusRunning, te)
}

// classify turns a failed call into the task error to store and whether the
// retry policy may retry it.
func (w *worker) classify(callCtx context.Context, res *CallResult, err error) (*store.TaskError, bool) {
	t := w.task
	if err == nil && res != nil && res.Error != nil {
		pe := res.Error
		te := &store.TaskError{
			Code: string(fault.Application), Message: pe.Message, Type: pe.Type, NonRetryable: pe.NonRetryable,
		}
		if len(pe.Details) > 0 {
			te.Details = store.Payload{Codec: codec.CodecAvro, Data: append([]byte(nil), pe.Details...)}
		}
		return te, !pe.NonRetryable && !retry.NonRetryableType(t.Retry, pe.Type)
	}
	if err == nil {
		err = errors.New("executor returned no result")
	}
	code := fault.CodeOf(err)
	msg := fault.Message(err)
	switch c := context.Cause(callCtx); {
	case errors.Is(c, errTotalTimeout):
		return &store.TaskError{Code: string(fault.Timeout), Type: string(fault.Timeout), Message: "task timed out", NonRetryable: true}, false
	case errors.Is(c, errExecutionTimeout), errors.Is(c, errRunTimeout), errors.Is(c, errHeartbeatTimeout):
		return timeoutError(t, c)
	case errors.Is(c, errAttemptTimeout):
		code, msg = fault.Timeout, "attempt timed out after "+t.Timeout.String()
	}
	if code == fault.Internal {
		w.e.log.Error("plugin call", "task_id", t.ID, "module", t.Module, "function", t.Function, "error", err)
	}
	te := &store.TaskError{Code: string(code), Type: string(code), Message: msg}
	return te, retry.RetryableCode(code) && !retry.NonRetryableType(t.Retry, string(code))
}

// retry moves the running task back to queued until at, with an
// attempt_failed event in the same transaction, and wakes the scheduler at
// that time.
func (w *worker) retry(ctx context.Context, t *store.Task, te *store.TaskError, at time.Time) {
	w.requeue(ctx, t, store.StatusRunning, te, at)
}

// requeue is retry from status from (running, or loading).
func (w *worker) requeue(ctx context.Context, t *store.Task, from store.Status, te *store.TaskError, at time.Time) {
	payload, err := json.Marshal(attemptFailed{Attempt: t.Attempt, Error: te, RetryAt: at.UTC()})
	if err != nil {
		w.e.log.Error("attempt failed event", "task_id", t.ID, "error", err)
		payload = []byte("{}")
	}
	p := &store.TaskTransitionParams{
		ID: t.ID, From: []store.Status{from}, To: store.StatusQueued,
		NotBefore: at, ClearCheckpoint: true, Reason: "retry",
		Events: []store.EventDraft{{Type: EventAttemptFailed, Payload: payload}},
	}
	nt, err := w.transition(ctx, p)
	if err == nil {
		w.e.sched.wakeAt(at)
		w.e.overdue.armAt(w.e, nt.StartDeadline)
		return
	}
	w.lost(ctx, t.ID, err, transitionItem(w.task, p))
}

// attemptFailed is the payload of EventAttemptFailed.
type attemptFailed struct {
	Attempt int              `json:"attempt"`
	Error   *store.TaskError `json:"error"`
	RetryAt time.Time        `json:"retry_at"`
}

// fail moves the task from `from` to failed with te.
func (w *worker) fail(ctx context.Context, t *store.Task, from store.Status, te *store.TaskError) {
	w.finish(ctx, &store.TaskTransitionParams{ID: t.ID, From: []store.Status{from}, To: store.StatusFailed, Error: te})
}

// finish writes a terminal status and records the task's duration. The
// end of an activity that its workflow just started goes on into the
// workflow's next run instead, which commits both (foldEnd).
func (w *worker) finish(ctx context.Context, p *store.TaskTransitionParams) {
	w.fence(p)
	if w.foldEnd(p) {
		return
	}
	t, err := w.transition(ctx, p)
	if err != nil {
		w.lost(ctx, p.ID, err, transitionItem(w.task, p))
		return
	}
	w.e.taskFinished(t)
}

// lost handles a write that did not happen: after a lost race with a
// cancel, the worker completes the cancel; a write the store refused is
// kept, as redo, to be written again (StoreRetry).
func (w *worker) lost(ctx context.Context, id string, err error, redo *healItem) {
	token := w.token
	if redo != nil && redo.p != nil {
		token = redo.p.Lease
	}
	switch {
	case w.fenced(id, token, err):
		// Another host owns the task now: no retry, no cancel.
	case errors.Is(err, store.ErrConflict):
		w.cancelled(ctx, id)
	case benign(err):
		w.e.log.Error("task transition", "task_id", id, "error", err)
	default:
		w.e.healer.add(redo, err)
	}
}

// cancelled ends a cancelling task as cancelled. A task in any other
// status is left alone: a queued or loading task was cancelled at once, a
// finished one stays finished.
func (w *worker) cancelled(ctx context.Context, id string) {
	p := &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled}
	t, err := w.transition(ctx, p)
	if err != nil {
		if !w.fenced(id, p.Lease, err) && !benign(err) {
			w.e.healer.add(transitionItem(w.task, p), err)
		}
		return
	}
	w.e.taskFinished(t)
}

// fence gives p, a write for the task in progress, the token of its lease,
// and the host and lease a hand-over (WorkflowChildEnd) claims with.
func (w *worker) fence(p *store.TaskTransitionParams) {
	if w.task != nil && p.ID == w.task.ID && p.Lease == 0 {
		p.Lease = w.token
	}
	p.Host, p.LeaseTTL = w.e.cfg.Host, w.e.cfg.LeaseTTL
}

// transition runs a store transition and measures it. The end of an
// activity that a workflow scheduled reaches the workflow's journal in the
// same transaction (childEnd).
func (w *worker) transition(ctx context.Context, p *store.TaskTransitionParams) (*store.Task, error) {
	w.fence(p)
	if w.e.childOutcome(w.task, p) {
		return w.childEnd(ctx, p)
	}
	start := time.Now()
	t, err := w.e.store.TaskTransition(ctx, p)
	w.e.metrics.ObserveWrite("task_transition", time.Since(start))
	return t, err
}

// wasm implements Call.Wasm.
func (w *worker) wasm(ctx context.Context) ([]byte, error) {
	return w.e.mods.Bytes(ctx, w.task.ModuleDigest)
}

// levelName returns the name of a guest log line's level, info for an
// unknown one. The executor writes the line to the daemon's log, within
// its budgets; the engine records it in the task's log.
func levelName(level string) string {
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel {
		lvl = hclog.Info
	}
	return lvl.String()
}

// logLine implements Call.Log for activities: the line goes to the plugin's
// logger and, in batches, to the task's event log.
func (w *worker) logLine(level, msg string) {
	if w.logs.Add(levelName(level), msg, w.e.now()) {
		w.fenced(w.task.ID, w.token, w.logs.Flush(context.Background(), w.e.store, w.task.ID, w.token, false))
	}
}

// saveCheckpoint implements Call.SaveCheckpoint.
func (w *worker) saveCheckpoint(ctx context.Context, frame []byte) error {
	w.beat.beat() // a checkpoint is a heartbeat too
	if err := codec.ValidateFrame(frame, codec.DefaultLimits); err != nil {
		return err
	}
	_, err := w.e.store.TaskCheckpoint(ctx, &store.TaskCheckpointParams{
		ID: w.task.ID, Checkpoint: store.Payload{Codec: codec.CodecAvro, Data: append([]byte(nil), frame...)},
		Lease: w.token,
	})
	switch {
	case w.fenced(w.task.ID, w.token, err):
		return fault.Errorf(fault.Conflict, "task %s is run by another host now", w.task.ID)
	case errors.Is(err, store.ErrConflict):
		return fault.Errorf(fault.Conflict, "task %s is no longer running", w.task.ID)
	case err != nil:
		return fault.Wrap("save checkpoint", err)
	}
	return nil
}

// resume hands the running tasks kept by start-up recovery or taken over
// from another host (policy resume) to the workers, each continuing from
// its last checkpoint. The leases of tasks taken over are renewed while
// they wait for a worker, until the worker holds them.
func (e *Engine) resume(ctx context.Context, tasks []*store.Task) {
	defer e.wg.Done()
	keys := make([]leases.Key, len(tasks))
	for i, t := range tasks {
		keys[i] = e.leases.Hold(t, e.cfg.Host, e.cfg.LeaseTTL, time.Now())
	}
	defer func() {
		for _, k := range keys {
			e.leases.Release(k)
		}
	}()
	for _, t := range tasks {
		select {
		case <-e.sched.free:
		case <-ctx.Done():
			return
		}
		if e.draining.Load() {
			e.sched.free <- struct{}{}
			return
		}
		e.adm.Hold(t)
		e.sched.work <- workItem{task: t, resumed: true}
	}
}

// taskErrorOf is the task error of a failure that happens before a call.
func taskErrorOf(err error) *store.TaskError {
	code := fault.CodeOf(err)
	return &store.TaskError{Code: string(code), Type: string(code), Message: fault.Message(err), NonRetryable: true}
}
