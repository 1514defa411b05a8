package journal

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// NondeterminismError reports a workflow run that asked for something other
// than what its journal recorded at the same step (docs/workflows.md,
// "Determinism"). The engine fails the task with fault.Nondeterminism and
// this message.
type NondeterminismError struct {
	// TaskID is the workflow task.
	TaskID string
	// Step is the 1-based command number (the future id).
	Step int64
	// Recorded describes what the journal recorded at Step.
	Recorded string
	// Asked describes what the run asked for instead, or how it ended
	// ("returned", "suspended") without asking for Recorded.
	Asked string
}

// Error returns the message.
func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("workflow %s is not deterministic at step %d: the journal recorded %s, but the workflow %s",
		e.TaskID, e.Step, e.Recorded, e.Asked)
}

// Mode says what a run does with commands beyond its journal.
type Mode int

const (
	// Record records new commands, decides which timers and signal timeouts
	// are due, and creates child tasks: a real run.
	Record Mode = iota
	// Check records nothing: new commands stay pending. It checks that
	// another module version replays the journal (deploy --check-replay).
	Check
)

// DigestFunc returns the digest an activity or child workflow of another
// module than the workflow's runs on, the latest version's, whose manifest
// must list function with kind. An error with a fault.Code other than
// fault.Internal (an unknown module or function) fails the step's future;
// any other fails the run.
type DigestFunc func(ctx context.Context, module, function string, kind store.Kind) (string, error)

// WorkflowIDFunc checks that a child workflow may take workflow id for
// owner: an error with a fault.Code other than fault.Internal (an open run
// holds it) fails the child's future; any other fails the run.
type WorkflowIDFunc func(ctx context.Context, owner, workflowID string) error

// Replay is the WorkflowHost of one run of a workflow: it answers each
// command from the journal when the run made it before and records it
// otherwise; futures are answered from the resolutions of the journal and
// of this run. What the run records (Events, Children) is committed by the
// engine with the workflow's next state. It is used by one goroutine.
type Replay struct {
	t      *store.Task
	j      *Journal
	mode   Mode
	now    time.Time // the run's wall-clock time, decided once
	digest DigestFunc
	wid    WorkflowIDFunc

	step int64 // commands asked so far
	// reads and readBytes count the results the run read; inBytes are the
	// bytes of the workflow's input and of its commands' inputs.
	reads, readBytes, inBytes int64
	lines                     int       // log lines the run logged so far
	clock                     time.Time // the workflow's deterministic time
	rnd                       *rand.ChaCha8
	err                       error // the first error, which fails the run

	// What the run records, committed with the workflow's next state.
	drafts   []store.EventDraft
	children []*store.TaskInsertParams
	// fresh are the commands of this run beyond the journal.
	fresh []*command
}

var _ WorkflowHost = (*Replay)(nil)

// NewReplay prepares a run of workflow t over journal j, which the run
// then owns, at wall-clock time now; digest resolves the activities of
// other modules (nil for Check, which schedules none). In Record it first
// resolves the recorded timers and signal timeouts that fell due by now,
// in time order.
func NewReplay(t *store.Task, j *Journal, now time.Time, mode Mode, digest DigestFunc) *Replay {
	r := &Replay{t: t, j: j, mode: mode, now: now.UTC().Truncate(time.Millisecond), clock: j.start, digest: digest}
	if r.clock.IsZero() {
		r.clock = r.now
	}
	r.rnd = rand.NewChaCha8(seedOf(t.ID, t.Attempt))
	r.inBytes = int64(len(t.Input.Data))
	if mode == Record {
		r.fireDue()
	}
	return r
}

// CheckWorkflowIDs makes the run check the workflow ids of the child
// workflows it starts with fn; without it, only the store's insert does.
func (r *Replay) CheckWorkflowIDs(fn WorkflowIDFunc) { r.wid = fn }

// fireDue records the recorded timers and signal timeouts due by r.now.
func (r *Replay) fireDue() {
	var due []*command
	for _, c := range r.j.commands {
		if _, done := r.j.res[c.step]; done {
			continue
		}
		if at, ok := c.dueAt(); ok && !at.After(r.now) {
			due = append(due, c)
		}
	}
	slices.SortFunc(due, func(a, b *command) int {
		at, _ := a.dueAt()
		bt, _ := b.dueAt()
		if c := at.Compare(bt); c != 0 {
			return c
		}
		return int(a.step - b.step)
	})
	for _, c := range due {
		r.fire(c)
	}
}

// fire resolves the due timer or signal wait c and records it.
func (r *Replay) fire(c *command) {
	if c.kind == commandTimer {
		r.j.resolve(c.step, c.fireAt, OutcomeValue, nullFrame)
		r.record(&TimerFired{Attempt: r.t.Attempt, FutureID: c.step})
		return
	}
	r.j.dropWait(c)
	r.j.resolve(c.step, c.deadline, OutcomeTimeout, nil)
	r.record(&SignalTimedOut{Attempt: r.t.Attempt, FutureID: c.step})
}

// record appends a journal event to what the run commits.
func (r *Replay) record(p Event) {
	d, err := Encode(p)
	if err != nil {
		_ = r.fail(err)
		return
	}
	r.drafts = append(r.drafts, d)
}

// fail keeps the first error of the run.
func (r *Replay) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// next takes the next step for the command c: it checks c against the
// journal when the step was recorded, and otherwise records it as new and
// returns it as stored (nil for a recorded step).
func (r *Replay) next(c command) (*command, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.step++
	c.step = r.step
	r.inBytes += int64(len(c.input))
	if r.step <= int64(len(r.j.commands)) {
		rec := r.j.commands[r.step-1]
		if !c.same(rec) {
			return nil, r.fail(&NondeterminismError{TaskID: r.t.ID, Step: r.step, Recorded: rec.describe(), Asked: "asked for " + c.describe()})
		}
		return nil, nil
	}
	fresh := new(command)
	*fresh = c
	r.fresh = append(r.fresh, fresh)
	r.j.commands = append(r.j.commands, fresh)
	return fresh, nil
}

// ScheduleActivity implements WorkflowHost. A new activity becomes a child
// task, pinned to the workflow's own digest for its own module and to the
// latest version for another; an unknown module or function resolves the
// future at once with the error.
func (r *Replay) ScheduleActivity(ctx context.Context, call *ActivityCommand) (int64, error) {
	module := call.Module
	if module == "" {
		module = r.t.Module
	}
	c, err := r.next(command{kind: commandActivity, module: module, function: call.Function, input: call.Input, options: optionsOf(call)})
	if err != nil || c == nil || r.mode == Check {
		return r.step, err
	}
	c.input = append([]byte(nil), call.Input...) // the caller's buffer is not ours to keep
	ev := &ActivityScheduled{
		Attempt: r.t.Attempt, FutureID: c.step, Module: module, Function: call.Function,
		Input: store.Payload{Codec: codec.CodecAvro, Data: c.input}, Options: c.options.record(),
	}
	kind := store.KindActivity
	if call.Child != nil {
		kind = store.KindWorkflow
	}
	c.taskID = store.NewID(store.TaskIDPrefix)
	workflowID := ""
	if kind == store.KindWorkflow {
		workflowID = c.taskID
		if call.Child.WorkflowID != "" {
			workflowID = call.Child.WorkflowID
		}
	}
	digest, cerr := r.activityDigest(ctx, module, call.Function, kind)
	if cerr == nil && call.Child != nil && call.Child.WorkflowID != "" {
		for _, other := range r.children {
			if other.WorkflowID == workflowID {
				cerr = fault.Errorf(fault.WorkflowIDInUse, "workflow_id %q is held by the child %s this run starts", workflowID, other.ID)
			}
		}
		if cerr == nil && r.wid != nil {
			cerr = r.wid(ctx, r.t.OwnerClientID, workflowID)
		}
	}
	if cerr != nil {
		c.taskID = ""
		var re *fault.Error
		if !errors.As(cerr, &re) || re.Code == fault.Internal {
			return 0, r.fail(cerr)
		}
		r.record(ev)
		te := &store.TaskError{Code: string(re.Code), Type: string(re.Code), Message: re.Message, NonRetryable: true}
		r.record(&ActivityFailed{Attempt: r.t.Attempt, FutureID: c.step, Error: te, FailedAt: &r.now})
		frame, err := errorValueFrame(te)
		if err != nil {
			return 0, r.fail(err)
		}
		r.j.resolve(c.step, r.now, OutcomeError, frame)
		return c.step, nil
	}
	ev.TaskID, ev.Digest = c.taskID, digest
	r.record(ev)
	timeout, retry := c.options.policy()
	scheduleToStart, heartbeat := c.options.timeouts()
	child := &store.TaskInsertParams{
		ID: c.taskID, Module: module, ModuleDigest: digest, Function: call.Function, Kind: kind,
		Input: ev.Input, OnRestart: r.t.OnRestart, Timeout: timeout, Retry: retry,
		ScheduleToStartTimeout: scheduleToStart, HeartbeatTimeout: heartbeat,
		OwnerClientID: r.t.OwnerClientID, ParentTaskID: r.t.ID, WorkflowID: workflowID,
	}
	if call.Child != nil {
		child.ParentClosePolicy = call.Child.ParentClosePolicy
	}
	r.children = append(r.children, child)
	r.j.byTask[c.taskID] = c.step
	return c.step, nil
}

// activityDigest returns the digest an activity or child workflow (kind)
// of module runs on: the workflow's own for its own module, else the one
// r.digest resolves.
func (r *Replay) activityDigest(ctx context.Context, module, function string, kind store.Kind) (string, error) {
	if module == r.t.Module {
		return r.t.ModuleDigest, nil
	}
	return r.digest(ctx, module, function, kind)
}

// StartTimer implements WorkflowHost. A new timer fires at the run's time
// plus d; one of zero fires at once.
func (r *Replay) StartTimer(_ context.Context, d time.Duration) (int64, error) {
	c, err := r.next(command{kind: commandTimer, duration: d.Truncate(time.Millisecond)})
	if err != nil || c == nil || r.mode == Check {
		return r.step, err
	}
	c.fireAt = r.now.Add(c.duration)
	r.record(&TimerStarted{Attempt: r.t.Attempt, FutureID: c.step, DurationMS: c.duration.Milliseconds(), FireAt: &c.fireAt})
	if !c.fireAt.After(r.now) {
		r.fire(c)
	}
	return c.step, nil
}

// WaitSignal implements WorkflowHost. A new wait takes the oldest signal of
// its name that no wait took yet; without one it waits, until its deadline
// when it has a timeout.
func (r *Replay) WaitSignal(_ context.Context, name string, timeout time.Duration) (int64, error) {
	ask := command{kind: commandSignal, name: name, timeout: -1}
	if timeout >= 0 {
		ask.timeout = timeout.Truncate(time.Millisecond)
	}
	c, err := r.next(ask)
	if err != nil || c == nil || r.mode == Check {
		return r.step, err
	}
	ev := &SignalWaiting{Attempt: r.t.Attempt, FutureID: c.step, Name: name}
	ms := int64(-1)
	if c.timeout >= 0 {
		ms = c.timeout.Milliseconds()
		c.deadline = r.now.Add(c.timeout)
		ev.Deadline = &c.deadline
	}
	ev.TimeoutMS = &ms
	r.record(ev)
	if r.j.waitSignal(c) == nil && !c.deadline.IsZero() && !c.deadline.After(r.now) {
		r.fire(c)
	}
	return c.step, nil
}

// Await implements WorkflowHost. With all, the cancel future among ids is
// not waited for: see awaitAllOrCancel.
func (r *Replay) Await(_ context.Context, ids []int64, all bool) (int, bool, error) {
	if r.err != nil {
		return 0, false, r.err
	}
	for _, id := range ids {
		if id < CancelFuture || id > r.step {
			return 0, false, r.fail(fmt.Errorf("await of future %d, which the workflow never created", id))
		}
	}
	if all {
		if c := slices.Index(ids, CancelFuture); c >= 0 {
			return r.awaitAllOrCancel(ids, c)
		}
	}
	best, bestOrder := -1, 0
	var latest time.Time
	for i, id := range ids {
		res, ok := r.j.res[id]
		if !ok {
			if all {
				return 0, false, nil
			}
			continue
		}
		if best < 0 || res.order < bestOrder {
			best, bestOrder = i, res.order
		}
		if res.at.After(latest) {
			latest = res.at
		}
	}
	if best < 0 {
		return 0, false, nil
	}
	if all {
		best = 0
	} else {
		latest = r.j.res[ids[best]].at
	}
	r.advance(latest)
	return best, true, nil
}

// awaitAllOrCancel is Await of all of ids but the cancel future, at index
// c: it answers c when the cancel request resolved before the last of the
// others, and 0 when they all resolved first, so that a wait for every
// future of a step learns of the request at one point of the journal, in
// one call, the same on every replay.
func (r *Replay) awaitAllOrCancel(ids []int64, c int) (int, bool, error) {
	last, done := -1, true
	var latest time.Time
	for _, id := range ids {
		if id == CancelFuture {
			continue
		}
		res, ok := r.j.res[id]
		if !ok {
			done = false
			continue
		}
		last = max(last, res.order)
		if res.at.After(latest) {
			latest = res.at
		}
	}
	if cres, ok := r.j.res[CancelFuture]; ok && (!done || cres.order < last) {
		r.advance(cres.at)
		return c, true, nil
	}
	if !done {
		return 0, false, nil
	}
	r.advance(latest)
	return 0, true, nil
}

// advance moves the workflow's clock forward to at, the time of what an
// await answered.
func (r *Replay) advance(at time.Time) {
	if at.After(r.clock) {
		r.clock = at
	}
}

// Result implements WorkflowHost.
func (r *Replay) Result(_ context.Context, id int64) (FutureResult, error) {
	if r.err != nil {
		return FutureResult{}, r.err
	}
	res, ok := r.j.res[id]
	if !ok || id > r.step {
		return FutureResult{}, r.fail(fmt.Errorf("future %d is not resolved", id))
	}
	r.reads++
	r.readBytes += int64(len(res.frame))
	return FutureResult{Outcome: res.outcome, Frame: res.frame}, nil
}

// History implements WorkflowHost: the commands asked and results read
// so far, and their bytes with the input's. Both follow only the code path
// of the run, so every replay sees the same at the same point.
func (r *Replay) History() (length, size int64) {
	return r.step + r.reads, r.inBytes + r.readBytes
}

// Now implements WorkflowHost: the attempt's start, moved forward to the
// time of each resolution the workflow awaited.
func (r *Replay) Now() time.Time { return r.clock }

// Random implements WorkflowHost: a ChaCha8 stream seeded by the task and
// its attempt.
func (r *Replay) Random(p []byte) { _, _ = r.rnd.Read(p) }

// Ended checks, after a run that returned or suspended (how is "returned"
// or "suspended"), that it asked for every command the journal recorded;
// it returns a *NondeterminismError when it did not, or the run's error.
func (r *Replay) Ended(how string) error {
	if r.err != nil {
		return r.err
	}
	if n := int64(len(r.j.commands)) - int64(len(r.fresh)); r.step < n {
		rec := r.j.commands[r.step]
		return r.fail(&NondeterminismError{TaskID: r.t.ID, Step: r.step + 1, Recorded: rec.describe(), Asked: how + " without asking for it"})
	}
	return nil
}

// WakeAt is the earliest time a pending timer or signal wait falls due; the
// zero time when only an event can wake the workflow.
func (r *Replay) WakeAt() time.Time {
	var at time.Time
	for _, c := range r.j.commands {
		if _, done := r.j.res[c.step]; done {
			continue
		}
		if d, ok := c.dueAt(); ok && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	return at
}

// Err is the first error of the run, which fails it: a
// *NondeterminismError, a bad await, a failure to record; nil for none.
func (r *Replay) Err() error { return r.err }

// Events are the journal events the run recorded, to commit with the
// workflow's next state.
func (r *Replay) Events() []store.EventDraft { return r.drafts }

// Children are the activity tasks the run scheduled, to insert with its
// commit.
func (r *Replay) Children() []*store.TaskInsertParams { return r.children }

// Fresh is how many commands the run asked for beyond its journal.
func (r *Replay) Fresh() int { return len(r.fresh) }

// LogLine counts one log line of the run and reports whether it is new:
// a run replays the code that earlier runs of the attempt already ran, so
// its first lines are those they logged (Journal.Logged).
func (r *Replay) LogLine() bool {
	r.lines++
	return r.lines > r.j.logged
}

// seedOf is the seed of the random stream of a task's attempt.
func seedOf(id string, attempt int) [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(attempt))
	return sha256.Sum256(append([]byte("weft workflow random\x00"+id+"\x00"), b[:]...))
}
