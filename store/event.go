package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// The event types the store writes itself. Only the store writes status
// event types; EventAppend refuses them.
const (
	// EventResponseCreated is the first event of every task (sequence 0).
	EventResponseCreated = "response.created"
	// EventResponseInProgress records a move to running.
	EventResponseInProgress = "response.in_progress"
	// EventStatusChanged records a move to queued, loading or cancelling.
	EventStatusChanged = "task.status_changed"
	// EventRecovered records a running task kept running by start-up
	// recovery (policy resume), and the takeover of a task whose lease
	// expired (TaskReclaim), before whatever the takeover does to it.
	EventRecovered = "task.recovered"
	// EventResponseCompleted is the terminal event of a completed task.
	EventResponseCompleted = "response.completed"
	// EventResponseFailed is the terminal event of a failed task.
	EventResponseFailed = "response.failed"
	// EventResponseCancelled is the terminal event of a cancelled task.
	EventResponseCancelled = "response.cancelled"
	// EventLog is a log line of a task, appended through EventAppend.
	EventLog = "task.log"
	// EventProgress is a progress report of a task's activity, appended
	// through EventAppend with EventAppendParams.Progress.
	EventProgress = "task.progress"
)

// IsStatusEvent reports whether events of type typ record a status: their
// payload has a "status" field naming the task's status after the event.
func IsStatusEvent(typ string) bool {
	switch typ {
	case EventResponseCreated, EventResponseInProgress, EventStatusChanged, EventRecovered,
		EventResponseCompleted, EventResponseFailed, EventResponseCancelled:
		return true
	}
	return false
}

// IsTerminalEvent reports whether typ is one of the three terminal types.
func IsTerminalEvent(typ string) bool {
	return typ == EventResponseCompleted || typ == EventResponseFailed || typ == EventResponseCancelled
}

// TerminalEventType returns the terminal event type of a terminal status.
func TerminalEventType(s Status) string {
	switch s {
	case StatusCompleted:
		return EventResponseCompleted
	case StatusFailed:
		return EventResponseFailed
	case StatusCancelled:
		return EventResponseCancelled
	}
	return ""
}

// Event is one entry of a task's log.
type Event struct {
	// TaskID is the task whose log holds the event.
	TaskID string
	// Seq is the sequence number: 0 for the first event, then +1 with no
	// gaps.
	Seq int64
	// Type names the event, such as response.created or task.log.
	Type string
	// Payload is a JSON document.
	Payload json.RawMessage
	// CreatedAt is when the event was committed.
	// Millisecond precision, UTC.
	CreatedAt time.Time
}

// StatusEvent is the payload of a non-terminal status event
// (response.created, response.in_progress, task.status_changed,
// task.recovered). The terminal events carry a Response instead, whose
// status field has the same meaning.
type StatusEvent struct {
	// Status is the task's status after the event.
	Status Status `json:"status"`
	// From is the status before, absent on response.created.
	From Status `json:"from,omitempty"`
	// Attempt is the task's attempt counter after the event.
	Attempt int `json:"attempt"`
	// Reason says why, such as server_restarted or lease_expired, when
	// there is one.
	Reason string `json:"reason,omitempty"`
	// PreviousHost is the host whose lease expired, on the task.recovered
	// event of a takeover; absent otherwise.
	PreviousHost string `json:"previous_host,omitempty"`
	// Host is the host taking over, on the task.recovered event of a
	// takeover; absent otherwise.
	Host string `json:"host,omitempty"`
}

// EventDraft is an event to append; the store assigns the sequence number
// and time.
type EventDraft struct {
	// Type names the event. Required; status event types are reserved.
	Type string
	// Payload is a JSON document. Defaults to {}.
	Payload json.RawMessage
}

// EventAppendParams are the params of Store.EventAppend.
type EventAppendParams struct {
	// TaskID is the task. Required.
	TaskID string
	// Events are appended in order. Required.
	Events []EventDraft
	// Wake makes a queued task claimable now, or a waiting workflow
	// claimable through WorkflowClaim (a signal). Defaults to false.
	Wake bool
	// Idempotency, when set, completes that in-flight idempotency key with
	// its status and body in the same transaction, so that a crash never
	// leaves appended events behind a key that recovery frees. Defaults to
	// nil.
	Idempotency *IdempotencyKeyCompleteParams
	// Progress, when set, becomes the task's progress (Task.Progress) in
	// the same transaction, recorded at the time of the append; its
	// UpdatedAt is ignored. Done and Total must not be negative. Defaults
	// to nil: the progress stays as it is.
	Progress *TaskProgress
	// Lease fences the append, as TaskTransitionParams.Lease: a runner's
	// log lines and progress carry the token of its claim. Defaults to 0
	// (not fenced: a signal, an API write).
	Lease int64
	// CancelRequest records the append as the cancel request of a workflow
	// task (Task.CancelRequestedAt, set to the append's time in the same
	// transaction). A task that was asked before gets nothing appended and
	// the call returns ErrCancelRequested; an activity task, an error.
	// Defaults to false.
	CancelRequest bool
}

// EventListParams are the params of Store.EventList.
type EventListParams struct {
	// TaskID is the task. Required.
	TaskID string
	// From is the first sequence number returned. Defaults to 0.
	From int64
	// Limit caps the page. Defaults to 1000; at most 10000.
	Limit int
}

// StatusPayload is the payload of a non-terminal status event: a
// StatusEvent with no host fields.
func StatusPayload(to, from Status, attempt int, reason string) []byte {
	b, _ := json.Marshal(StatusEvent{Status: to, From: from, Attempt: attempt, Reason: reason}) // plain strings and ints
	return b
}

// StatusEventOf returns the type and payload of the event a move of task
// from the status from to its current one writes at task.LastSeq
// (persistence §11.2): response.in_progress for running, the terminal
// event carrying the Response (ResponseOf) for a finished task, and
// task.status_changed otherwise.
func StatusEventOf(task *Task, from Status, reason string) (typ string, payload []byte, err error) {
	switch task.Status {
	case StatusRunning:
		return EventResponseInProgress, StatusPayload(task.Status, from, task.Attempt, reason), nil
	case StatusCompleted, StatusFailed, StatusCancelled:
		b, err := json.Marshal(ResponseOf(task))
		if err != nil {
			return "", nil, fmt.Errorf("response document: %w", err)
		}
		return TerminalEventType(task.Status), b, nil
	default:
		return EventStatusChanged, StatusPayload(task.Status, from, task.Attempt, reason), nil
	}
}
