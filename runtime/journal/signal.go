package journal

import (
	"time"

	"github.com/weft-run/weft/store"
)

// The signal events: a run waits for a signal of a name; a signal arrives
// (TaskSignal appends it, waited for or not); a later run records that a
// wait's timeout passed first.
const (
	// EventSignalWaiting records a wait for the next signal of a name.
	EventSignalWaiting = "signal.waiting"
	// EventSignalReceived records a signal delivered to a workflow task: its
	// name and value.
	EventSignalReceived = "signal.received"
	// EventSignalTimedOut records a signal wait whose timeout passed before
	// a signal of its name arrived.
	EventSignalTimedOut = "signal.timed_out"
)

// SignalWaiting is the payload of EventSignalWaiting.
type SignalWaiting struct {
	// Attempt is the workflow attempt whose run waits.
	Attempt int `json:"attempt,omitempty"`
	// FutureID is the step.
	FutureID int64 `json:"future_id,omitempty"`
	// Name is the signal's name.
	Name string `json:"name,omitempty"`
	// TimeoutMS is the wait's timeout in milliseconds; -1 (or absent) for
	// none.
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
	// Deadline is when the wait times out; nil for none.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Type implements Event.
func (*SignalWaiting) Type() string { return EventSignalWaiting }

func (p *SignalWaiting) slot(key []byte) slot {
	if string(key) == "name" {
		return slot{str: &p.Name}
	}
	return stepSlot(key, &p.Attempt, &p.FutureID)
}

// SignalReceived is the payload of EventSignalReceived.
type SignalReceived struct {
	// Name is the signal's name.
	Name string `json:"name"`
	// Payload is the signal's value.
	Payload store.Payload `json:"payload_envelope"`
}

// Type implements Event.
func (*SignalReceived) Type() string { return EventSignalReceived }

func (p *SignalReceived) slot(key []byte) slot {
	switch string(key) {
	case "name":
		return slot{str: &p.Name}
	case "payload_envelope":
		return slot{env: &p.Payload}
	}
	return slot{}
}

// SignalTimedOut is the payload of EventSignalTimedOut.
type SignalTimedOut struct {
	// Attempt and FutureID name the wait's step.
	Attempt  int   `json:"attempt,omitempty"`
	FutureID int64 `json:"future_id,omitempty"`
}

// Type implements Event.
func (*SignalTimedOut) Type() string { return EventSignalTimedOut }

func (p *SignalTimedOut) slot(key []byte) slot { return stepSlot(key, &p.Attempt, &p.FutureID) }
