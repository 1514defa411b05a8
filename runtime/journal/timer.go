package journal

import "time"

// The timer events: a run starts a durable timer; a later run (or the same
// one, for a timer of zero) records that it fell due.
const (
	// EventTimerStarted records a durable timer and when it fires.
	EventTimerStarted = "timer.started"
	// EventTimerFired records a timer that fell due.
	EventTimerFired = "timer.fired"
)

// TimerStarted is the payload of EventTimerStarted.
type TimerStarted struct {
	// Attempt is the workflow attempt whose run started the timer.
	Attempt int `json:"attempt,omitempty"`
	// FutureID is the step.
	FutureID int64 `json:"future_id,omitempty"`
	// DurationMS is the timer's duration, in milliseconds.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// FireAt is when the timer fires. Required.
	FireAt *time.Time `json:"fire_at,omitempty"`
}

// Type implements Event.
func (*TimerStarted) Type() string { return EventTimerStarted }

func (p *TimerStarted) slot(key []byte) slot {
	if string(key) == "duration_ms" {
		return slot{int64: &p.DurationMS}
	}
	return stepSlot(key, &p.Attempt, &p.FutureID)
}

// TimerFired is the payload of EventTimerFired.
type TimerFired struct {
	// Attempt and FutureID name the timer's step.
	Attempt  int   `json:"attempt,omitempty"`
	FutureID int64 `json:"future_id,omitempty"`
}

// Type implements Event.
func (*TimerFired) Type() string { return EventTimerFired }

func (p *TimerFired) slot(key []byte) slot { return stepSlot(key, &p.Attempt, &p.FutureID) }
