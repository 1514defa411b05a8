package store

import "fmt"

// Status is the state of a task (BRIEF §3.3): queued → loading → running →
// completed | failed | cancelled, with cancelling on the way to cancelled.
type Status string

// The task statuses. The first four are unfinished; the last three are
// terminal and never change.
const (
	StatusQueued     Status = "queued"
	StatusLoading    Status = "loading"
	StatusRunning    Status = "running"
	StatusCancelling Status = "cancelling"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
)

// Statuses lists every status, unfinished ones first.
var Statuses = []Status{
	StatusQueued, StatusLoading, StatusRunning, StatusCancelling,
	StatusCompleted, StatusFailed, StatusCancelled,
}

// IsTerminal reports whether s is completed, failed or cancelled.
func (s Status) IsTerminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Valid reports whether s is one of the seven statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusLoading, StatusRunning, StatusCancelling,
		StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// transitions is the task state machine: the statuses each status may move
// to through TaskTransition. Terminal statuses move nowhere; cancelling only
// ends as cancelled, because the cancel already won.
var transitions = map[Status][]Status{
	StatusQueued:     {StatusLoading, StatusRunning, StatusCancelled, StatusFailed},
	StatusLoading:    {StatusRunning, StatusQueued, StatusCancelling, StatusCancelled, StatusFailed},
	StatusRunning:    {StatusQueued, StatusCancelling, StatusCompleted, StatusFailed, StatusCancelled},
	StatusCancelling: {StatusCancelled},
}

// CanTransition reports whether the state machine has an edge from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// OnRestart is a task's restart policy: what start-up recovery does with it
// when the server stopped before the task finished (persistence §11.3).
type OnRestart string

// The restart policies.
const (
	// OnRestartFail fails the task with error code server_restarted.
	OnRestartFail OnRestart = "fail"
	// OnRestartRetry queues the task again for a new attempt from scratch.
	OnRestartRetry OnRestart = "retry"
	// OnRestartResume lets a running task continue from its last checkpoint
	// and queues a queued or loading one again.
	OnRestartResume OnRestart = "resume"
)

// Valid reports whether p is one of the three policies.
func (p OnRestart) Valid() bool {
	return p == OnRestartFail || p == OnRestartRetry || p == OnRestartResume
}

// Kind tells an activity task from a workflow task.
type Kind string

// The task kinds.
const (
	KindActivity Kind = "activity"
	KindWorkflow Kind = "workflow"
)

// Valid reports whether k is activity or workflow.
func (k Kind) Valid() bool { return k == KindActivity || k == KindWorkflow }

// RecoveryTarget returns the status persistence §11.3 moves a leftover task
// in status s with policy p to, and whether s is a leftover status at all.
// A target equal to s means the task stays as it is.
func RecoveryTarget(s Status, p OnRestart) (Status, bool) {
	switch s {
	case StatusCancelling:
		return StatusCancelled, true
	case StatusQueued, StatusLoading, StatusRunning:
	default:
		return s, false
	}
	switch p {
	case OnRestartRetry:
		return StatusQueued, true
	case OnRestartResume:
		if s == StatusRunning {
			return StatusRunning, true
		}
		return StatusQueued, true
	default:
		return StatusFailed, true
	}
}

// ParseStatus returns the Status named s, or an ErrInvalid error.
func ParseStatus(s string) (Status, error) {
	if st := Status(s); st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("%w: unknown task status %q", ErrInvalid, s)
}
