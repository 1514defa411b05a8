package backend

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
)

// Change is what a status move does to a task row besides its lease, its
// sequence numbers and its events (persistence §11.2).
type Change struct {
	// To is the status the task moves to.
	To store.Status
	// NotBefore is when a task moved to queued may be claimed; zero means
	// now.
	NotBefore time.Time
	// Output is the result of a move to completed.
	Output store.Payload
	// Err is the error of a move to failed or cancelled.
	Err *store.TaskError
	// ClearCheckpoint drops the task's checkpoint.
	ClearCheckpoint bool
}

// CheckFrom returns the error of a move of task, the current row, that
// expects one of the statuses from and holds the lease token fence (0:
// not fenced): ErrLeaseLost when the task no longer holds the lease,
// ErrConflict when it is in another status, and nil when the move may go
// on.
func CheckFrom(task *store.Task, from []store.Status, fence int64) error {
	if err := store.CheckLease(task, fence); err != nil {
		return err
	}
	if !slices.Contains(from, task.Status) {
		return fmt.Errorf("%w: task %s is %s, expected %s", store.ErrConflict, task.ID, task.Status, joinStatuses(from))
	}
	return nil
}

func joinStatuses(ss []store.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, "|")
}

// CheckTransition returns ErrInvalid when the state machine has no
// transition from the task's status to c.To.
func (c *Change) CheckTransition(task *store.Task) error {
	if !store.CanTransition(task.Status, c.To) {
		return fmt.Errorf("%w: no transition %s → %s", store.ErrInvalid, task.Status, c.To)
	}
	return nil
}

// Apply changes task's columns as the move to c.To at n says: a new
// attempt from queued, the claimable time of a queued task, the start of
// a running one, the output or error and finish time of a finished one,
// the checkpoint, then the status and updated_at. It leaves the lease and
// the sequence numbers to the caller.
func (c *Change) Apply(task *store.Task, n time.Time) {
	if task.Status == store.StatusQueued && (c.To == store.StatusLoading || c.To == store.StatusRunning) {
		task.Attempt++ // a new attempt starts
		task.RunDeadline = RunDeadline(task, n)
	}
	switch c.To {
	case store.StatusQueued:
		task.NotBefore = n
		if !c.NotBefore.IsZero() {
			task.NotBefore = c.NotBefore.UTC().Truncate(time.Millisecond)
		}
		task.StartDeadline = StartDeadline(task)
	case store.StatusRunning:
		if task.StartedAt.IsZero() {
			task.StartedAt = n
		}
	case store.StatusCompleted:
		task.Output, task.Error, task.FinishedAt = c.Output, nil, n
	case store.StatusFailed, store.StatusCancelled:
		task.Output, task.Error, task.FinishedAt = store.Payload{}, c.Err, n
	}
	if c.ClearCheckpoint {
		task.Checkpoint = store.Payload{}
	}
	task.Status = c.To
	task.UpdatedAt = n
}

// RunDeadline is the run deadline of an attempt of task that starts at n:
// n plus its run timeout, or the zero time without one.
func RunDeadline(task *store.Task, n time.Time) time.Time {
	if task.RunTimeout <= 0 {
		return time.Time{}
	}
	return n.Add(task.RunTimeout).UTC().Truncate(time.Millisecond)
}

// StartDeadline is the start deadline of task queued until its NotBefore:
// NotBefore plus its schedule-to-start timeout, or its execution deadline
// when that is earlier; the zero time when it has neither.
func StartDeadline(task *store.Task) time.Time {
	d := task.Deadline
	if task.ScheduleToStartTimeout > 0 {
		if s := task.NotBefore.Add(task.ScheduleToStartTimeout); d.IsZero() || s.Before(d) {
			d = s
		}
	}
	if d.IsZero() {
		return d
	}
	return d.UTC().Truncate(time.Millisecond)
}

// ReleasesLease reports whether a move to st without a new lease drops
// the task's lease: a move back to queued or to a terminal status.
func ReleasesLease(st store.Status) bool {
	return st == store.StatusQueued || st.IsTerminal()
}

// TransitionChange returns the move a TaskTransition with params p makes.
func TransitionChange(p *store.TaskTransitionParams) Change {
	c := Change{To: p.To, NotBefore: p.NotBefore, ClearCheckpoint: p.ClearCheckpoint}
	switch p.To {
	case store.StatusCompleted:
		c.Output = p.Output
	case store.StatusFailed, store.StatusCancelled:
		c.Err = p.Error
	}
	return c
}

// CancelTarget returns the status TaskCancel moves a task in status st to,
// and false when the task is left as it is (cancelling or finished).
func CancelTarget(st store.Status) (store.Status, bool) {
	switch st {
	case store.StatusQueued, store.StatusLoading:
		return store.StatusCancelled, true
	case store.StatusRunning:
		return store.StatusCancelling, true
	default:
		return st, false
	}
}

// CheckChildEnd returns the error of folding the end of child, the
// current row, into a commit of workflow parentID: ErrInvalid when it is
// not a child of parentID, ErrConflict when it is not running.
func CheckChildEnd(child *store.Task, parentID string) error {
	switch {
	case child.ParentTaskID != parentID:
		return fmt.Errorf("%w: task %s is not a child of %s", store.ErrInvalid, child.ID, parentID)
	case child.Status != store.StatusRunning:
		return fmt.Errorf("%w: task %s is %s, expected running", store.ErrConflict, child.ID, child.Status)
	}
	return nil
}

// CheckWaiting returns ErrConflict unless workflow task waits in its
// current attempt, given the attempt of its wait row and the error of
// reading it (ErrNotFound: no wait row).
func CheckWaiting(task *store.Task, attempt int, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: workflow %s is not waiting", store.ErrConflict, task.ID)
	case err != nil:
		return err
	case attempt != task.Attempt:
		return fmt.Errorf("%w: workflow %s waits in attempt %d, not %d", store.ErrConflict, task.ID, attempt, task.Attempt)
	}
	return nil
}
