package runtime

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/store"
)

// MaxTimeoutMS is the longest timeout a task may ask for, in milliseconds:
// ten years. Every timeout field of a request (timeout_ms,
// execution_timeout_ms, run_timeout_ms, schedule_to_start_timeout_ms,
// heartbeat_timeout_ms) is between 0 (none) and this.
const MaxTimeoutMS = 10 * 365 * 24 * 3600 * 1000

// The causes of the calls a timeout stops, besides errAttemptTimeout and
// errTotalTimeout.
var (
	errExecutionTimeout = errors.New("workflow execution timed out")
	errRunTimeout       = errors.New("workflow run timed out")
	errHeartbeatTimeout = errors.New("activity heartbeat timed out")
)

// overdueBatch caps the queued tasks one pass of the overdue sweep fails;
// a full batch is followed by another pass at once.
const overdueBatch = 100

// endBy is the time by which a task's run must end and the cause that ends
// it then: the earliest of its total deadline (retry.total_timeout_ms),
// its execution deadline and its run deadline. The zero time when it has
// none.
type endBy struct {
	at    time.Time
	cause error
}

// retryBy returns the earliest of t's total and execution deadlines: no
// new attempt may start at or after it.
func retryBy(t *store.Task) time.Time {
	return earliest(retry.TotalDeadline(t), t.Deadline)
}

// endOf returns the time by which the current attempt of t must end.
func endOf(t *store.Task) endBy {
	var e endBy
	for _, c := range []endBy{
		{retry.TotalDeadline(t), errTotalTimeout},
		{t.Deadline, errExecutionTimeout},
		{t.RunDeadline, errRunTimeout},
	} {
		if !c.at.IsZero() && (e.at.IsZero() || c.at.Before(e.at)) {
			e = c
		}
	}
	return e
}

// earliest returns the earlier of two times, the zero time meaning none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// timeoutError is the task error of a task stopped by cause, one of the
// deadline causes, and whether its retry policy may retry it.
func timeoutError(t *store.Task, cause error) (*store.TaskError, bool) {
	switch {
	case errors.Is(cause, errExecutionTimeout):
		return &store.TaskError{
			Code: string(fault.ExecutionTimeout), Type: string(fault.ExecutionTimeout), NonRetryable: true,
			Message: "the workflow did not finish within its execution timeout (deadline " + t.Deadline.Format(time.RFC3339Nano) + ")",
		}, false
	case errors.Is(cause, errRunTimeout):
		te := &store.TaskError{
			Code: string(fault.RunTimeout), Type: string(fault.RunTimeout),
			Message: "attempt " + strconv.Itoa(t.Attempt) + " of the workflow did not finish within its run timeout of " + t.RunTimeout.String(),
		}
		return te, !retry.NonRetryableType(t.Retry, te.Type)
	case errors.Is(cause, errHeartbeatTimeout):
		te := &store.TaskError{
			Code: string(fault.HeartbeatTimeout), Type: string(fault.HeartbeatTimeout),
			Message: "the activity sent no heartbeat for " + t.HeartbeatTimeout.String(),
		}
		return te, !retry.NonRetryableType(t.Retry, te.Type)
	}
	return &store.TaskError{Code: string(fault.Timeout), Type: string(fault.Timeout), Message: "task timed out", NonRetryable: true}, false
}

// timedOut ends a task whose deadline passed before its call could start
// (a waiting workflow woken by it, a task claimed too late): failed, or
// for a run or heartbeat timeout that its policy retries, queued again for
// a new attempt. A workflow's unfinished activities are cancelled.
func (w *worker) timedOut(ctx context.Context, t *store.Task, from store.Status, cause error) {
	e := w.e
	te, retryable := timeoutError(t, cause)
	if retryable {
		if at, ok := retry.Next(t.Retry, t.Attempt, e.now(), retryBy(t)); ok {
			w.requeue(ctx, t, from, te, at)
			w.endChildren(ctx, t)
			return
		}
	}
	te.NonRetryable = true
	w.fail(ctx, t, from, te)
	w.endChildren(ctx, t)
}

// endChildren cancels the unfinished activities of workflow t, which a
// timeout ended or sent back to queued.
func (w *worker) endChildren(ctx context.Context, t *store.Task) {
	if t.Kind != store.KindWorkflow || w.e.runCtx.Err() != nil {
		return
	}
	w.e.jcache.Drop(t.ID)
	w.e.cancelChildren(ctx, t.ID)
}

// beat is an activity's heartbeat watch: it stops the call with
// errHeartbeatTimeout when no heartbeat comes within the interval. One
// timer per call; a heartbeat resets it.
type beat struct {
	timer *time.Timer
	d     time.Duration
}

// startBeat arms the heartbeat watch of a call that cancel stops; nil when
// d is zero (no heartbeat timeout).
func startBeat(d time.Duration, cancel context.CancelCauseFunc) *beat {
	if d <= 0 {
		return nil
	}
	return &beat{timer: time.AfterFunc(d, func() { cancel(errHeartbeatTimeout) }), d: d}
}

// beat records a heartbeat: the interval starts again.
func (b *beat) beat() {
	if b != nil {
		b.timer.Reset(b.d)
	}
}

// stop disarms the watch once the call returned.
func (b *beat) stop() {
	if b != nil {
		b.timer.Stop()
	}
}

// overdueState wakes the overdue sweep (Engine.overdueLoop) at the
// earliest start deadline it knows of: the store's, as its last pass
// reported it, or an earlier one a new or requeued task brought. It holds
// one time, whatever the number of queued tasks, and nothing runs while no
// task has a start deadline.
type overdueState struct {
	mu   sync.Mutex
	next time.Time
	kick chan struct{}
}

// armAt makes the sweep run at t (the zero time: never) when that is
// earlier than the time it runs at.
func (s *overdueState) armAt(e *Engine, t time.Time) {
	if t.IsZero() {
		return
	}
	s.mu.Lock()
	earlier := s.next.IsZero() || t.Before(s.next)
	if earlier {
		s.next = t
	}
	s.mu.Unlock()
	if earlier {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// overdueLoop fails the queued tasks whose start deadline passed: an
// activity's schedule-to-start timeout, a queued workflow's execution
// deadline. It runs at start-up, then at the earliest start deadline it
// knows, in passes of at most overdueBatch tasks; on a shared store also
// every PollInterval, for the tasks other hosts queued. It runs apart from
// the scheduler, so it fires when every worker is busy or a task's module
// is refused admission.
func (e *Engine) overdueLoop(ctx context.Context) {
	defer e.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		full := e.sweepOverdue(ctx)
		if ctx.Err() != nil {
			return
		}
		if full {
			continue // more may be overdue
		}
		e.overdue.mu.Lock()
		next := e.overdue.next
		e.overdue.mu.Unlock()
		var wait time.Duration = -1
		if !next.IsZero() {
			wait = max(next.Sub(e.now()), 0)
		}
		if e.store.Shared() && (wait < 0 || wait > e.cfg.PollInterval) {
			wait = e.cfg.PollInterval
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-e.overdue.kick:
			timer.Stop()
			// An earlier deadline: wait for it, unless it passed.
			e.overdue.mu.Lock()
			next = e.overdue.next
			e.overdue.mu.Unlock()
			if next.After(e.now()) {
				e.waitUntil(ctx, timer, next)
			}
		}
	}
}

// waitUntil sleeps until t, an earlier kick, or ctx's end.
func (e *Engine) waitUntil(ctx context.Context, timer *time.Timer, t time.Time) {
	for {
		timer.Reset(max(t.Sub(e.now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
			return
		case <-e.overdue.kick:
			timer.Stop()
			e.overdue.mu.Lock()
			t = e.overdue.next
			e.overdue.mu.Unlock()
			if !t.After(e.now()) {
				return
			}
		}
	}
}

// sweepOverdue runs one pass of the overdue sweep and reports whether it
// found a full batch. It fails each overdue task by compare-and-set from
// queued (a claim that won the race keeps its task); an activity's end
// reaches its workflow's journal and wakes it, as any end does.
func (e *Engine) sweepOverdue(ctx context.Context) bool {
	now := e.now()
	e.overdue.mu.Lock()
	e.overdue.next = time.Time{}
	e.overdue.mu.Unlock()
	res, err := e.store.TaskOverdue(ctx, &store.TaskOverdueParams{Now: now, Limit: overdueBatch})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("overdue tasks", "error", err)
			e.overdue.armAt(e, now.Add(e.cfg.StoreRetry.MaxBackoff))
		}
		return false
	}
	for _, t := range res.Tasks {
		e.expire(ctx, t, now)
	}
	e.overdue.armAt(e, res.Next)
	return len(res.Tasks) == overdueBatch
}

// expire fails the queued task t, whose start deadline passed at now.
func (e *Engine) expire(ctx context.Context, t *store.Task, now time.Time) {
	te := &store.TaskError{
		Code: string(fault.ScheduleToStartTimeout), Type: string(fault.ScheduleToStartTimeout), NonRetryable: true,
		Message: "no worker started the task within its schedule-to-start timeout of " + t.ScheduleToStartTimeout.String(),
	}
	if !t.Deadline.IsZero() && !now.Before(t.Deadline) {
		te, _ = timeoutError(t, errExecutionTimeout)
	}
	p := &store.TaskTransitionParams{ID: t.ID, From: []store.Status{store.StatusQueued}, To: store.StatusFailed, Error: te}
	child := e.childOutcome(t, p)
	done, err := e.store.TaskTransition(ctx, p)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return // claimed or cancelled meanwhile
	case err != nil:
		if ctx.Err() == nil {
			e.log.Error("fail overdue task", "task_id", t.ID, "error", err)
			e.overdue.armAt(e, now.Add(e.cfg.StoreRetry.MaxBackoff))
		}
		return
	}
	e.taskFinished(done)
	if child {
		e.wf.markDue()
		e.sched.notify()
	}
	if t.Kind == store.KindWorkflow {
		e.jcache.Drop(t.ID)
		e.cancelChildren(ctx, t.ID)
	}
}
