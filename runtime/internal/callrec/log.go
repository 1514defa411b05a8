package callrec

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/weft-run/weft/store"
)

// EventLog is the type of the events that carry a plugin's log lines: its
// log import and every line it wrote to stdout or stderr. The payload is
// {"level", "message", "time"}; a final {"dropped": N} says how many lines
// of the call went over MaxLogEvents.
const EventLog = "task.log"

// Bounds of the log lines a call records as task events. A guest that logs
// more still reaches the plugin's logger; its task's event log records the
// first MaxLogEvents lines of each call and how many were dropped.
const (
	// MaxLogEvents is the most log events one call appends.
	MaxLogEvents = 1000
	// logFlushLines is how many buffered lines trigger an append while the
	// call still runs, so a long call's lines appear as it goes.
	logFlushLines = 64
)

// Log buffers the log lines of one call and appends them to the task's
// event log in batches. It is used by one worker at a time.
type Log struct {
	pending  []store.EventDraft
	recorded int
	dropped  int
}

// Reset prepares the buffer for the next call.
func (l *Log) Reset() {
	l.pending, l.recorded, l.dropped = l.pending[:0], 0, 0
}

// Add buffers one line; it reports whether the buffer is due for a flush.
func (l *Log) Add(level, msg string, at time.Time) bool {
	if l.recorded+len(l.pending) >= MaxLogEvents {
		l.dropped++
		return false
	}
	payload, err := json.Marshal(struct {
		Level   string    `json:"level"`
		Message string    `json:"message"`
		Time    time.Time `json:"time"`
	}{level, msg, at.UTC()})
	if err != nil {
		return false
	}
	l.pending = append(l.pending, store.EventDraft{Type: EventLog, Payload: payload})
	return len(l.pending) >= logFlushLines
}

// CountDropped buffers the event that counts the lines dropped so far, if
// any, and starts counting again.
func (l *Log) CountDropped() {
	if l.dropped == 0 {
		return
	}
	payload, _ := json.Marshal(struct {
		Dropped int `json:"dropped"`
	}{l.dropped})
	l.pending = append(l.pending, store.EventDraft{Type: EventLog, Payload: payload})
	l.dropped = 0
}

// Flush appends the buffered lines, and with final the count of dropped
// ones, to task id's event log, fenced by lease (0 for none), and returns
// the append's error. A task that has already finished, or whose lease was
// lost, keeps its log as it is: its lines still went to the plugin's
// logger.
func (l *Log) Flush(ctx context.Context, s store.Store, id string, lease int64, final bool) error {
	if final {
		l.CountDropped()
	}
	if len(l.pending) == 0 {
		return nil
	}
	n := len(l.pending)
	_, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: l.pending, Lease: lease})
	if err == nil {
		l.recorded += n
	}
	l.pending = l.pending[:0]
	return err
}

// Take returns the buffered events, with the count of dropped lines, and
// empties the buffer for the next call: a workflow run commits them with
// its journal.
func (l *Log) Take() []store.EventDraft {
	l.CountDropped()
	out := slices.Clone(l.pending)
	l.Reset()
	return out
}
