package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// The journal event types of a workflow task (docs/workflows.md). Commands
// (scheduled, started, waiting) are written by the workflow's runs;
// resolutions by whoever resolves them: a child activity's end, the run
// that finds a timer or a signal timeout due, a signal.
const (
	// EventActivityScheduled records an activity the workflow scheduled and
	// the child task that runs it.
	EventActivityScheduled = "activity.scheduled"
	// EventActivityCompleted records the result of a child activity task.
	EventActivityCompleted = "activity.completed"
	// EventActivityFailed records the error of a child activity task that
	// failed for good, or of an activity that could not be scheduled.
	EventActivityFailed = "activity.failed"
	// EventTimerStarted records a durable timer and when it fires.
	EventTimerStarted = "timer.started"
	// EventTimerFired records a timer that fell due.
	EventTimerFired = "timer.fired"
	// EventSignalWaiting records a wait for the next signal of a name.
	EventSignalWaiting = "signal.waiting"
	// EventSignalTimedOut records a signal wait whose timeout passed before
	// a signal of its name arrived.
	EventSignalTimedOut = "signal.timed_out"
)

// journalEvent is the payload of every journal event type; each type uses
// some of the fields. attempt and future_id name the command (the step) of
// the attempt that wrote it; a child's end names its task instead.
type journalEvent struct {
	Attempt  int    `json:"attempt,omitempty"`
	FutureID int64  `json:"future_id,omitempty"`
	TaskID   string `json:"task_id,omitempty"`

	// activity.scheduled
	Module   string           `json:"module,omitempty"`
	Function string           `json:"function,omitempty"`
	Digest   string           `json:"module_digest,omitempty"`
	Input    store.Payload    `json:"input_envelope,omitzero"`
	Options  *activityOptions `json:"options,omitempty"`

	// activity.completed, activity.failed
	Output   store.Payload    `json:"output_envelope,omitzero"`
	Error    *store.TaskError `json:"error,omitempty"`
	FailedAt *time.Time       `json:"failed_at,omitempty"` // an activity that could not be scheduled

	// timer.started
	DurationMS int64      `json:"duration_ms,omitempty"`
	FireAt     *time.Time `json:"fire_at,omitempty"`

	// signal.waiting, signal.received
	Name      string        `json:"name,omitempty"`
	TimeoutMS *int64        `json:"timeout_ms,omitempty"`
	Deadline  *time.Time    `json:"deadline,omitempty"`
	Payload   store.Payload `json:"payload_envelope,omitzero"`
}

// activityOptions are the recorded options of an activity, compared on
// replay.
type activityOptions struct {
	TimeoutMS int64        `json:"timeout_ms,omitempty"`
	Retry     *retryRecord `json:"retry,omitempty"`
}

// retryRecord is a recorded activity retry policy, in the words of a
// task's retry policy (maximum_attempts, maximum_interval_ms).
type retryRecord struct {
	MaxAttempts            int      `json:"maximum_attempts,omitempty"`
	InitialIntervalMS      int64    `json:"initial_interval_ms,omitempty"`
	BackoffCoefficient     float64  `json:"backoff_coefficient,omitempty"`
	MaxIntervalMS          int64    `json:"maximum_interval_ms,omitempty"`
	NonRetryableErrorTypes []string `json:"non_retryable_error_types,omitempty"`
}

// UnmarshalJSON reads a recorded policy, also under the names journals
// written before the vocabulary was unified used (max_attempts,
// max_interval_ms), so that those journals replay unchanged.
func (r *retryRecord) UnmarshalJSON(b []byte) error {
	type plain retryRecord
	var v struct {
		plain
		LegacyMaxAttempts   int   `json:"max_attempts"`
		LegacyMaxIntervalMS int64 `json:"max_interval_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = retryRecord(v.plain)
	if r.MaxAttempts == 0 {
		r.MaxAttempts = v.LegacyMaxAttempts
	}
	if r.MaxIntervalMS == 0 {
		r.MaxIntervalMS = v.LegacyMaxIntervalMS
	}
	return nil
}

// optionsOf records the options of an activity command; the zero value
// when every option is the default.
func optionsOf(c *ActivityCommand) activityOptions {
	o := activityOptions{TimeoutMS: c.Timeout.Milliseconds()}
	if r := c.Retry; r != nil {
		rr := retryRecord{
			MaxAttempts:            r.MaxAttempts,
			InitialIntervalMS:      r.InitialInterval.Milliseconds(),
			BackoffCoefficient:     r.BackoffCoefficient,
			MaxIntervalMS:          r.MaxInterval.Milliseconds(),
			NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		}
		if !rr.equal(&retryRecord{}) {
			o.Retry = &rr
		}
	}
	return o
}

// isZero reports whether every option is the default.
func (o activityOptions) isZero() bool { return o.TimeoutMS == 0 && o.Retry == nil }

// record returns the options as an event records them: nil for the
// defaults.
func (o activityOptions) record() *activityOptions {
	if o.isZero() {
		return nil
	}
	return &o
}

func (o activityOptions) equal(p activityOptions) bool {
	if o.TimeoutMS != p.TimeoutMS {
		return false
	}
	if o.Retry == nil || p.Retry == nil {
		return o.Retry == p.Retry
	}
	return o.Retry.equal(p.Retry)
}

func (r *retryRecord) equal(q *retryRecord) bool {
	if r.MaxAttempts != q.MaxAttempts || r.InitialIntervalMS != q.InitialIntervalMS ||
		r.BackoffCoefficient != q.BackoffCoefficient || r.MaxIntervalMS != q.MaxIntervalMS ||
		len(r.NonRetryableErrorTypes) != len(q.NonRetryableErrorTypes) {
		return false
	}
	for i, t := range r.NonRetryableErrorTypes {
		if q.NonRetryableErrorTypes[i] != t {
			return false
		}
	}
	return true
}

// policy is the attempt timeout and the task retry policy of a child
// activity.
func (o activityOptions) policy() (time.Duration, store.RetryPolicy) {
	var p store.RetryPolicy
	if r := o.Retry; r != nil {
		p = store.RetryPolicy{
			InitialInterval:        time.Duration(r.InitialIntervalMS) * time.Millisecond,
			BackoffCoefficient:     r.BackoffCoefficient,
			MaximumInterval:        time.Duration(r.MaxIntervalMS) * time.Millisecond,
			MaximumAttempts:        r.MaxAttempts,
			NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		}
		if p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1 {
			p.BackoffCoefficient = 0 // below 1 means the default
		}
		if p.MaximumInterval > 0 && p.InitialInterval > p.MaximumInterval {
			p.MaximumInterval = p.InitialInterval
		}
	}
	return time.Duration(o.TimeoutMS) * time.Millisecond, p
}

// commandKind tells the three commands apart.
type commandKind int

const (
	commandActivity commandKind = iota + 1
	commandTimer
	commandSignal
)

// command is one recorded command of a workflow attempt: step n is future
// id n.
type command struct {
	kind commandKind
	step int64

	// activity
	module, function string
	input            []byte
	options          activityOptions
	taskID           string

	// timer
	duration time.Duration
	fireAt   time.Time

	// signal
	name     string
	timeout  time.Duration // negative: none
	deadline time.Time     // zero: none
}

// describe renders a command for a nondeterminism message.
func (c *command) describe() string {
	switch c.kind {
	case commandActivity:
		s := fmt.Sprintf("activity %s.%s(%s)", c.module, c.function, valueText(c.input))
		if !c.options.isZero() {
			if b, err := json.Marshal(c.options); err == nil {
				s += " with options " + string(b)
			}
		}
		return s
	case commandTimer:
		return "timer " + c.duration.String()
	default:
		if c.timeout < 0 {
			return fmt.Sprintf("signal %q without timeout", c.name)
		}
		return fmt.Sprintf("signal %q with timeout %s", c.name, c.timeout)
	}
}

// same reports whether c asks for what the recorded command r recorded.
func (c *command) same(r *command) bool {
	if c.kind != r.kind {
		return false
	}
	switch c.kind {
	case commandActivity:
		return c.module == r.module && c.function == r.function && string(c.input) == string(r.input) && c.options.equal(r.options)
	case commandTimer:
		return c.duration == r.duration
	default:
		return c.name == r.name && c.timeout == r.timeout
	}
}

// valueText is the typed JSON projection of a frame, cut to stay readable.
func valueText(frame []byte) string {
	v, err := codec.DecodeFrame(frame)
	if err != nil {
		return fmt.Sprintf("<%d bytes>", len(frame))
	}
	b, err := codec.MarshalProjection(v)
	if err != nil {
		return fmt.Sprintf("<%d bytes>", len(frame))
	}
	const most = 200
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}

// resolution is how and when a future resolved.
type resolution struct {
	order   int       // position among the resolutions of the attempt
	at      time.Time // the workflow time it carries
	outcome Outcome
	frame   []byte
}

// signalMsg is a signal not consumed by a wait yet.
type signalMsg struct {
	payload []byte
	at      time.Time
}

// journal is the replay state of one workflow attempt, built from the
// task's log: the recorded commands, how their futures resolved and in
// which order, and the signals nobody waited for yet.
type journal struct {
	taskID  string
	attempt int
	start   time.Time // the attempt's start: the workflow clock's origin
	lastSeq int64
	// logged counts the log lines the attempt's runs recorded (task.log
	// events since its start): the lines a run logs first, again.
	logged   int
	started  bool // the attempt's start was read
	commands []*command
	byTask   map[string]int64 // child task id → step
	res      map[int64]*resolution
	// waits are the pending signal waits per name, oldest first.
	waits map[string][]int64
	// buffered are the signals per name that no wait consumed.
	buffered map[string][]signalMsg
}

func newJournal(t *store.Task) *journal {
	return &journal{
		taskID:   t.ID,
		attempt:  t.Attempt,
		start:    t.StartedAt,
		lastSeq:  -1,
		byTask:   map[string]int64{},
		res:      map[int64]*resolution{},
		waits:    map[string][]int64{},
		buffered: map[string][]signalMsg{},
	}
}

// resolve records the resolution of future step, once.
func (j *journal) resolve(step int64, at time.Time, outcome Outcome, frame []byte) *resolution {
	if _, ok := j.res[step]; ok {
		return nil
	}
	r := &resolution{order: len(j.res), at: at, outcome: outcome, frame: frame}
	j.res[step] = r
	return r
}

// readJournal reads the whole log of workflow task t and builds the
// journal of its current attempt.
func (e *Engine) readJournal(ctx context.Context, t *store.Task) (*journal, error) {
	return e.extendJournal(ctx, t, newJournal(t))
}

// journal returns the journal of a run of workflow task t: the one the
// task's last run left in the cache, brought up to date with the events
// appended since, or one read from the whole log.
func (e *Engine) journal(ctx context.Context, t *store.Task) (*journal, error) {
	if j := e.jcache.take(t.ID, t.Attempt); j != nil {
		return e.extendJournal(ctx, t, j)
	}
	return e.readJournal(ctx, t)
}

// journalPage is how many events one read of a journal takes from the
// store: events carry payloads, so a page is bounded in count.
const journalPage = 256

// extendJournal folds the events of t's log past j.lastSeq into j.
func (e *Engine) extendJournal(ctx context.Context, t *store.Task, j *journal) (*journal, error) {
	for from := j.lastSeq + 1; ; {
		evs, err := e.store.EventList(ctx, &store.EventListParams{TaskID: t.ID, From: from, Limit: journalPage})
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		for _, ev := range evs {
			if err := j.apply(ev); err != nil {
				return nil, fmt.Errorf("read journal of %s: event %d (%s): %w", t.ID, ev.Seq, ev.Type, err)
			}
			j.lastSeq = ev.Seq
		}
		if len(evs) < journalPage {
			return j, nil
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// apply folds one event of the log into the journal, in sequence order.
func (j *journal) apply(ev *store.Event) error {
	switch ev.Type {
	case store.EventResponseInProgress:
		var s store.StatusEvent
		if err := json.Unmarshal(ev.Payload, &s); err != nil {
			return err
		}
		if s.Attempt == j.attempt {
			j.start, j.started, j.logged = ev.CreatedAt, true, 0
		}
		return nil
	case EventLog:
		if j.started && isLogLine(ev.Payload) {
			j.logged++
		}
		return nil
	case EventActivityScheduled, EventActivityCompleted, EventActivityFailed, EventTimerStarted,
		EventTimerFired, EventSignalWaiting, EventSignalReceived, EventSignalTimedOut:
	default:
		return nil
	}
	var p journalEvent
	if err := decodeJournalEvent(ev.Payload, &p); err != nil {
		return err
	}
	switch ev.Type {
	case EventSignalReceived:
		frame := p.Payload.Data
		if len(frame) == 0 {
			frame = nullFrame
		}
		if w := j.waits[p.Name]; len(w) > 0 {
			j.waits[p.Name] = w[1:]
			j.resolve(w[0], ev.CreatedAt, OutcomeValue, frame)
			return nil
		}
		j.buffered[p.Name] = append(j.buffered[p.Name], signalMsg{payload: frame, at: ev.CreatedAt})
		return nil
	case EventActivityCompleted:
		if step, ok := j.byTask[p.TaskID]; ok {
			j.resolve(step, ev.CreatedAt, OutcomeValue, p.Output.Data)
		}
		return nil
	case EventActivityFailed:
		step, ok := j.byTask[p.TaskID]
		if p.TaskID == "" && p.Attempt == j.attempt {
			step, ok = p.FutureID, p.FutureID >= 1 && p.FutureID <= int64(len(j.commands))
		}
		if !ok {
			return nil
		}
		frame, err := errorValueFrame(p.Error)
		if err != nil {
			return err
		}
		at := ev.CreatedAt
		if p.FailedAt != nil {
			at = *p.FailedAt
		}
		j.resolve(step, at, OutcomeError, frame)
		return nil
	}
	if p.Attempt != j.attempt {
		return nil // an earlier attempt's journal
	}
	switch ev.Type {
	case EventActivityScheduled, EventTimerStarted, EventSignalWaiting:
		if p.FutureID != int64(len(j.commands))+1 {
			return fmt.Errorf("command of step %d after step %d", p.FutureID, len(j.commands))
		}
		c := &command{step: p.FutureID}
		switch ev.Type {
		case EventActivityScheduled:
			c.kind, c.module, c.function, c.input, c.taskID = commandActivity, p.Module, p.Function, p.Input.Data, p.TaskID
			if p.Options != nil {
				c.options = *p.Options
			}
			if p.TaskID != "" {
				j.byTask[p.TaskID] = c.step
			}
		case EventTimerStarted:
			if p.FireAt == nil {
				return fmt.Errorf("timer without fire_at")
			}
			c.kind, c.duration, c.fireAt = commandTimer, time.Duration(p.DurationMS)*time.Millisecond, *p.FireAt
		default:
			c.kind, c.name, c.timeout = commandSignal, p.Name, -1
			if p.TimeoutMS != nil && *p.TimeoutMS >= 0 {
				c.timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
			}
			if p.Deadline != nil {
				c.deadline = *p.Deadline
			}
		}
		j.commands = append(j.commands, c)
		if c.kind == commandSignal {
			j.waitSignal(c, ev.CreatedAt)
		}
	case EventTimerFired:
		if c := j.command(p.FutureID, commandTimer); c != nil {
			j.resolve(c.step, c.fireAt, OutcomeValue, nullFrame)
		}
	case EventSignalTimedOut:
		if c := j.command(p.FutureID, commandSignal); c != nil {
			j.dropWait(c)
			j.resolve(c.step, c.deadline, OutcomeTimeout, nil)
		}
	}
	return nil
}

// waitSignal registers the signal wait c: it consumes the oldest buffered
// signal of its name at once, or waits for the next one.
func (j *journal) waitSignal(c *command, at time.Time) *resolution {
	if b := j.buffered[c.name]; len(b) > 0 {
		j.buffered[c.name] = b[1:]
		return j.resolve(c.step, b[0].at, OutcomeValue, b[0].payload)
	}
	j.waits[c.name] = append(j.waits[c.name], c.step)
	return nil
}

// dropWait removes the signal wait c from the pending waits.
func (j *journal) dropWait(c *command) {
	w := j.waits[c.name]
	for i, s := range w {
		if s == c.step {
			j.waits[c.name] = append(w[:i:i], w[i+1:]...)
			return
		}
	}
}

// pendingActivities reports whether an activity the attempt scheduled as a
// child task has not ended yet.
func (j *journal) pendingActivities() bool {
	for _, c := range j.commands {
		if c.kind == commandActivity && c.taskID != "" {
			if _, done := j.res[c.step]; !done {
				return true
			}
		}
	}
	return false
}

// command returns the recorded command of step if it has kind k.
func (j *journal) command(step int64, k commandKind) *command {
	if step < 1 || step > int64(len(j.commands)) {
		return nil
	}
	if c := j.commands[step-1]; c.kind == k {
		return c
	}
	return nil
}

// errorValueFrame is the error Value (ABI §8) of a failed activity task:
// its type (the code when the plugin gave none), message, non_retryable
// flag and details.
func errorValueFrame(te *store.TaskError) ([]byte, error) {
	if te == nil {
		te = &store.TaskError{Code: string(fault.Internal), Message: "the activity failed without an error"}
	}
	typ := te.Type
	if typ == "" {
		typ = te.Code
	}
	details := codec.Null()
	if len(te.Details.Data) > 0 {
		v, err := codec.DecodeFrame(te.Details.Data)
		if err != nil {
			return nil, fmt.Errorf("activity error details: %w", err)
		}
		details = v
	}
	return codec.EncodeFrame(codec.Map(
		codec.Entry{Key: "type", Value: codec.String(typ)},
		codec.Entry{Key: "message", Value: codec.String(te.Message)},
		codec.Entry{Key: "non_retryable", Value: codec.Bool(te.NonRetryable)},
		codec.Entry{Key: "details", Value: details},
	))
}

// isLogLine reports whether payload, that of a task.log event, is a line
// the plugin logged rather than the count {"dropped": N} of the lines a
// call went over MaxLogEvents by. It decodes the count's field: the text
// of a line may hold anything, the word "dropped" included.
func isLogLine(payload []byte) bool {
	var p struct {
		Dropped *int64 `json:"dropped"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return true // not the count, which the engine writes itself
	}
	return p.Dropped == nil
}
