package runtime

import (
	"context"
	"encoding/json"
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

// taskLog buffers the log lines of one call and appends them to the task's
// event log in batches. It is used by one worker at a time.
type taskLog struct {
	pending  []store.EventDraft
	recorded int
	dropped  int
}

// reset prepares the buffer for the next call.
func (l *taskLog) reset() {
	l.pending, l.recorded, l.dropped = l.pending[:0], 0, 0
}

// add buffers one line; it reports whether the buffer is due for a flush.
func (l *taskLog) add(level, msg string, at time.Time) bool {
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

// countDropped buffers the event that counts the lines dropped so far, if
// any, and starts counting again.
func (l *taskLog) countDropped() {
	if l.dropped == 0 {
		return
	}
	payload, _ := json.Marshal(struct {
		Dropped int `json:"dropped"`
	}{l.dropped})
	l.pending = append(l.pending, store.EventDraft{Type: EventLog, Payload: payload})
	l.dropped = 0
}

// flush appends the buffered lines, and with final the count of dropped
// ones, to task id's event log. A task that has already finished keeps its
// log as it is: its lines still went to the plugin's logger.
func (l *taskLog) flush(ctx context.Context, s store.Store, id string, final bool) {
	if final {
		l.countDropped()
	}
	if len(l.pending) == 0 {
		return
	}
	n := len(l.pending)
	if _, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: l.pending}); err == nil {
		l.recorded += n
	}
	l.pending = l.pending[:0]
}
