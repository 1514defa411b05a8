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

// Recovery is what persistence §11.3 does with one leftover task: the
// status it moves to and how, decided by RecoveryOf.
type Recovery struct {
	// To is the status the task moves to (RecoveryTarget).
	To Status
	// Stay reports a task that keeps its row and its log as they are: a
	// queued task left queued.
	Stay bool
	// Resume reports a running task with policy resume: it stays running
	// with its checkpoint and gets a recovered event and a fresh lease.
	Resume bool
	// ClearCheckpoint reports a move back to queued under policy retry,
	// whose next attempt starts from scratch.
	ClearCheckpoint bool
	// Error is the error of a move to failed.
	Error *TaskError
}

// RecoveryOf applies the persistence §11.3 table to task and records the
// outcome in res (the task's id in the list of its kind, or the count of
// tasks left queued). It returns false for a task in a status recovery
// leaves alone. A backend writes the move the Recovery describes, with
// the reason CodeServerRestarted, in the transaction that read the task.
func RecoveryOf(task *Task, res *TaskRecoverResult) (Recovery, bool) {
	to, ok := RecoveryTarget(task.Status, task.OnRestart)
	if !ok {
		return Recovery{}, false
	}
	r := Recovery{To: to}
	switch {
	case to == StatusFailed:
		r.Error = &TaskError{
			Code:    CodeServerRestarted,
			Message: fmt.Sprintf("the server restarted while the task was %s (on_restart=%s)", task.Status, task.OnRestart),
		}
		res.Failed = append(res.Failed, task.ID)
	case to == StatusCancelled:
		res.Cancelled = append(res.Cancelled, task.ID)
	case to == StatusQueued && task.Status == StatusQueued:
		r.Stay = true
		res.Queued++
	case to == StatusQueued:
		r.ClearCheckpoint = task.OnRestart == OnRestartRetry
		res.Requeued = append(res.Requeued, task.ID)
	default: // running, policy resume
		r.Resume = true
		res.Resumed = append(res.Resumed, task.ID)
	}
	return r, true
}

// Add appends the tasks of part to r and adds its counts.
func (r *TaskRecoverResult) Add(part *TaskRecoverResult) {
	r.Failed = append(r.Failed, part.Failed...)
	r.Requeued = append(r.Requeued, part.Requeued...)
	r.Resumed = append(r.Resumed, part.Resumed...)
	r.Cancelled = append(r.Cancelled, part.Cancelled...)
	r.Queued += part.Queued
	r.IdempotencyKeysReleased += part.IdempotencyKeysReleased
}
