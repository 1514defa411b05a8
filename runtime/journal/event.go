package journal

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/store"
)

// ErrUnknownEvent is returned by Decode for an event type that is not one of
// the journal's.
var ErrUnknownEvent = errors.New("not a journal event type")

// Event is the payload of one journal event: one Go type per event type,
// each in its own file with its type name constant. The JSON of a payload
// is what the store keeps; it is the same, byte for byte, as the engine
// wrote before the payloads were typed, so that existing logs replay.
//
// # Notes
//
// Only package journal implements Event.
type Event interface {
	// Type is the event's type name, such as "activity.scheduled".
	Type() string
	// slot returns the field the fast path decodes the value of key
	// into; the zero slot hands the value to encoding/json.
	slot(key []byte) slot
}

// IsJournalType reports whether events of type typ are journal events, the
// ones Decode reads.
func IsJournalType(typ string) bool {
	switch typ {
	case EventActivityScheduled, EventActivityCompleted, EventActivityFailed, EventTimerStarted,
		EventTimerFired, EventSignalWaiting, EventSignalReceived, EventSignalTimedOut, EventCancelRequested:
		return true
	}
	return false
}

// Decode decodes the payload of a journal event of type typ. A replay
// decodes every event of a journal, so the common shapes take a direct path
// and only the rarer ones go through encoding/json; both give the same
// result. It returns ErrUnknownEvent for a type that is not a journal
// event's.
func Decode(typ string, payload []byte) (Event, error) {
	switch typ {
	case EventActivityScheduled:
		return decodeAs(payload, new(ActivityScheduled))
	case EventActivityCompleted:
		return decodeAs(payload, new(ActivityCompleted))
	case EventActivityFailed:
		return decodeAs(payload, new(ActivityFailed))
	case EventTimerStarted:
		return decodeAs(payload, new(TimerStarted))
	case EventTimerFired:
		return decodeAs(payload, new(TimerFired))
	case EventSignalWaiting:
		return decodeAs(payload, new(SignalWaiting))
	case EventSignalReceived:
		return decodeAs(payload, new(SignalReceived))
	case EventSignalTimedOut:
		return decodeAs(payload, new(SignalTimedOut))
	case EventCancelRequested:
		return decodeAs(payload, new(CancelRequested))
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, typ)
}

// decodeAs decodes payload into p, a new payload of its type.
func decodeAs[P interface {
	*T
	Event
}, T any](payload []byte, p P) (Event, error) {
	if err := decodeFast(payload, p); err != nil {
		*p = *new(T)
		if err := json.Unmarshal(payload, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Encode returns ev as the draft of an event to append to a log.
func Encode(ev Event) (store.EventDraft, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return store.EventDraft{}, fmt.Errorf("journal event %s: %w", ev.Type(), err)
	}
	return store.EventDraft{Type: ev.Type(), Payload: b}, nil
}

// stepSlot is the slot of the keys that name the step of the attempt that
// wrote an event: attempt and future_id.
func stepSlot(key []byte, attempt *int, futureID *int64) slot {
	switch string(key) {
	case "attempt":
		return slot{int: attempt}
	case "future_id":
		return slot{int64: futureID}
	}
	return slot{}
}
