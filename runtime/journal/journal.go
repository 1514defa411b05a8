package journal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

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

// Journal is the replay state of one workflow attempt, built from the
// task's log by Apply: the recorded commands, how their futures resolved
// and in which order, the pending signal waits and the signals nobody
// waited for yet. It is used by one goroutine at a time.
type Journal struct {
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
	// cancelTargets are the child tasks open at the cancel request, until
	// TakeCancelTargets hands them over.
	cancelTargets []string
}

// New returns the empty journal of the current attempt of workflow task t,
// before any event of its log.
func New(t *store.Task) *Journal {
	return &Journal{
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

// TaskID is the workflow task.
func (j *Journal) TaskID() string { return j.taskID }

// Attempt is the attempt the journal is of.
func (j *Journal) Attempt() int { return j.attempt }

// LastSeq is the sequence number of the last event applied; -1 for none.
func (j *Journal) LastSeq() int64 { return j.lastSeq }

// Logged is how many log lines the attempt's runs recorded: the lines its
// next run logs first repeat them.
func (j *Journal) Logged() int { return j.logged }

// Apply folds one event of the log into the journal, in sequence order,
// and makes ev.Seq its last sequence number. Events of other types than
// the journal's, and those of earlier attempts, change nothing else; a
// command out of step order, a timer without its fire time or a payload
// that does not decode is an error, after which the journal must not be
// used.
func (j *Journal) Apply(ev *store.Event) error {
	switch {
	case ev.Type == store.EventResponseInProgress:
		var s store.StatusEvent
		if err := json.Unmarshal(ev.Payload, &s); err != nil {
			return err
		}
		if s.Attempt == j.attempt {
			j.start, j.started, j.logged = ev.CreatedAt, true, 0
		}
	case ev.Type == store.EventLog:
		if j.started && IsLogLine(ev.Payload) {
			j.logged++
		}
	case IsJournalType(ev.Type):
		p, err := Decode(ev.Type, ev.Payload)
		if err != nil {
			return err
		}
		if err := j.apply(p, ev.CreatedAt); err != nil {
			return err
		}
	}
	j.lastSeq = ev.Seq
	return nil
}

// apply folds the journal event p, written at at.
func (j *Journal) apply(p Event, at time.Time) error {
	switch p := p.(type) {
	case *SignalReceived:
		frame := p.Payload.Data
		if len(frame) == 0 {
			frame = nullFrame
		}
		if w := j.waits[p.Name]; len(w) > 0 {
			j.waits[p.Name] = w[1:]
			j.resolve(w[0], at, OutcomeValue, frame)
			return nil
		}
		j.buffered[p.Name] = append(j.buffered[p.Name], signalMsg{payload: frame, at: at})
	case *ActivityCompleted:
		if step, ok := j.byTask[p.TaskID]; ok {
			j.resolve(step, at, OutcomeValue, p.Output.Data)
		}
	case *ActivityFailed:
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
		if p.FailedAt != nil {
			at = *p.FailedAt
		}
		j.resolve(step, at, OutcomeError, frame)
	case *ActivityScheduled:
		if p.Attempt != j.attempt {
			return nil // an earlier attempt's journal
		}
		c := &command{kind: commandActivity, step: p.FutureID, module: p.Module, function: p.Function, input: p.Input.Data, taskID: p.TaskID}
		if p.Options != nil {
			c.options = *p.Options
		}
		if err := j.add(c); err != nil {
			return err
		}
		if p.TaskID != "" {
			j.byTask[p.TaskID] = c.step
		}
	case *TimerStarted:
		if p.Attempt != j.attempt {
			return nil
		}
		if p.FireAt == nil {
			return fmt.Errorf("timer without fire_at")
		}
		return j.add(&command{kind: commandTimer, step: p.FutureID, duration: time.Duration(p.DurationMS) * time.Millisecond, fireAt: *p.FireAt})
	case *SignalWaiting:
		if p.Attempt != j.attempt {
			return nil
		}
		c := &command{kind: commandSignal, step: p.FutureID, name: p.Name, timeout: -1}
		if p.TimeoutMS != nil && *p.TimeoutMS >= 0 {
			c.timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
		}
		if p.Deadline != nil {
			c.deadline = *p.Deadline
		}
		if err := j.add(c); err != nil {
			return err
		}
		j.waitSignal(c)
	case *TimerFired:
		if c := j.command(p.Attempt, p.FutureID, commandTimer); c != nil {
			j.resolve(c.step, c.fireAt, OutcomeValue, nullFrame)
		}
	case *SignalTimedOut:
		if c := j.command(p.Attempt, p.FutureID, commandSignal); c != nil {
			j.dropWait(c)
			j.resolve(c.step, c.deadline, OutcomeTimeout, nil)
		}
	case *CancelRequested:
		j.applyCancel(at)
	}
	return nil
}

// add appends the recorded command c, which must be the next step.
func (j *Journal) add(c *command) error {
	if c.step != int64(len(j.commands))+1 {
		return fmt.Errorf("command of step %d after step %d", c.step, len(j.commands))
	}
	j.commands = append(j.commands, c)
	return nil
}

// resolve records the resolution of future step, once.
func (j *Journal) resolve(step int64, at time.Time, outcome Outcome, frame []byte) *resolution {
	if _, ok := j.res[step]; ok {
		return nil
	}
	r := &resolution{order: len(j.res), at: at, outcome: outcome, frame: frame}
	j.res[step] = r
	return r
}

// waitSignal registers the signal wait c: it consumes the oldest buffered
// signal of its name at once, or waits for the next one.
func (j *Journal) waitSignal(c *command) *resolution {
	if b := j.buffered[c.name]; len(b) > 0 {
		j.buffered[c.name] = b[1:]
		return j.resolve(c.step, b[0].at, OutcomeValue, b[0].payload)
	}
	j.waits[c.name] = append(j.waits[c.name], c.step)
	return nil
}

// dropWait removes the signal wait c from the pending waits.
func (j *Journal) dropWait(c *command) {
	w := j.waits[c.name]
	for i, s := range w {
		if s == c.step {
			j.waits[c.name] = append(w[:i:i], w[i+1:]...)
			return
		}
	}
}

// command returns the recorded command of step if the journal's attempt
// wrote it and it has kind k.
func (j *Journal) command(attempt int, step int64, k commandKind) *command {
	if attempt != j.attempt || step < 1 || step > int64(len(j.commands)) {
		return nil
	}
	if c := j.commands[step-1]; c.kind == k {
		return c
	}
	return nil
}

// PendingActivities reports whether an activity the attempt scheduled as a
// child task has not ended yet.
func (j *Journal) PendingActivities() bool {
	for _, c := range j.commands {
		if c.kind == commandActivity && c.taskID != "" {
			if _, done := j.res[c.step]; !done {
				return true
			}
		}
	}
	return false
}

// PendingSignals returns how many signals no wait consumed yet, and their
// bytes.
func (j *Journal) PendingSignals() (int, int64) {
	var (
		n    int
		size int64
	)
	for _, msgs := range j.buffered {
		for _, m := range msgs {
			n++
			size += int64(len(m.payload))
		}
	}
	return n, size
}

// size is the payload bytes the journal holds: the signals it buffers and
// the outcomes it resolved.
func (j *Journal) size() int64 {
	_, n := j.PendingSignals()
	for _, r := range j.res {
		n += int64(len(r.frame))
	}
	return n
}

// Committed brings the journal of a run up to the log once the run's
// events (which its Replay applied as it recorded them) and the log lines
// logs were committed right after what the journal had read, the log
// ending at lastSeq.
func (j *Journal) Committed(lastSeq int64, logs []store.EventDraft) {
	j.lastSeq = lastSeq
	for _, ev := range logs {
		if ev.Type == store.EventLog && IsLogLine(ev.Payload) {
			j.logged++ // as reading the log would count them
		}
	}
}

// String renders the journal's state, one line per command, resolution,
// pending wait and buffered signal, sorted, times as Unix milliseconds: two
// journals that replay alike render alike.
func (j *Journal) String() string {
	out := []string{fmt.Sprintf("attempt=%d start=%s last=%d logged=%d", j.attempt, milli(j.start), j.lastSeq, j.logged)}
	for _, c := range j.commands {
		line := fmt.Sprintf("cmd %d %s", c.step, c.describe())
		if c.taskID != "" {
			line += " task=" + c.taskID
		}
		if !c.fireAt.IsZero() {
			line += " fire=" + milli(c.fireAt)
		}
		if !c.deadline.IsZero() {
			line += " deadline=" + milli(c.deadline)
		}
		out = append(out, line)
		if r, ok := j.res[c.step]; ok {
			out = append(out, fmt.Sprintf("res %d order=%d at=%s outcome=%d frame=%x", c.step, r.order, milli(r.at), r.outcome, r.frame))
		}
	}
	if r, ok := j.res[CancelFuture]; ok {
		out = append(out, fmt.Sprintf("res cancel order=%d at=%s", r.order, milli(r.at)))
	}
	for name, w := range j.waits {
		if len(w) > 0 {
			out = append(out, fmt.Sprintf("waits %s %v", name, w))
		}
	}
	for name, b := range j.buffered {
		for _, m := range b {
			out = append(out, fmt.Sprintf("buffered %s %x %s", name, m.payload, milli(m.at)))
		}
	}
	slices.Sort(out[1:]) // map order
	return strings.Join(out, "\n")
}

// milli renders t as Unix milliseconds; "-" for the zero time.
func milli(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// nullFrame is the frame of the null value: what a timer and a signal
// without a value resolve to.
var nullFrame = func() []byte {
	f, err := codec.EncodeFrame(codec.Null())
	if err != nil {
		panic(err)
	}
	return f
}()
