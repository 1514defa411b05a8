package backend

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

var emptyObject = json.RawMessage("{}")

// DraftPayload returns the payload d is stored with: {} when it has none.
func DraftPayload(d store.EventDraft) json.RawMessage {
	if d.Payload == nil {
		return emptyObject
	}
	return d.Payload
}

// Appended is what an append of events did to its task's row in memory
// (Append).
type Appended struct {
	// Prev is the task's last sequence number before the append; the
	// events take Prev+1 on.
	Prev int64
	// WorkAppeared reports a queued task wake made claimable now.
	WorkAppeared bool
	// WakeWorkflow reports a running workflow the append wakes: its wait
	// becomes due now.
	WakeWorkflow bool
}

// Append checks an append of count events to task, the current row, by a
// writer holding the lease token fence (0: not fenced), and applies it to
// the row: the sequence numbers, updated_at, not_before for wake, and the
// progress, updated at n, when progress is not nil. It returns
// ErrLeaseLost for a lost lease and ErrTaskFinished for a finished task.
func Append(task *store.Task, count int, n time.Time, wake bool, progress *store.TaskProgress, fence int64) (Appended, error) {
	if err := store.CheckLease(task, fence); err != nil {
		return Appended{}, err
	}
	if task.Status.IsTerminal() {
		return Appended{}, fmt.Errorf("task %s: %w", task.ID, store.ErrTaskFinished)
	}
	a := Appended{Prev: task.LastSeq}
	if wake && task.Status == store.StatusQueued && task.NotBefore.After(n) {
		task.NotBefore = n
		a.WorkAppeared = true
	}
	task.LastSeq += int64(count)
	task.UpdatedAt = n
	if progress != nil {
		pr := *progress
		pr.UpdatedAt = n
		task.Progress = &pr
	}
	a.WakeWorkflow = wake && task.Status == store.StatusRunning && task.Kind == store.KindWorkflow
	return a, nil
}

// RequestCancel records at n the cancel request of task, which the append
// that carries it writes (store.EventAppendParams.CancelRequest).
func RequestCancel(task *store.Task, n time.Time) error {
	switch {
	case task.Status.IsTerminal():
		return fmt.Errorf("task %s: %w", task.ID, store.ErrTaskFinished)
	case task.Kind != store.KindWorkflow:
		return fmt.Errorf("task %s is an activity: a cancel request is a workflow's", task.ID)
	case !task.CancelRequestedAt.IsZero():
		return fmt.Errorf("task %s: %w", task.ID, store.ErrCancelRequested)
	}
	task.CancelRequestedAt = n.UTC().Truncate(time.Millisecond)
	return nil
}

// Events returns the events ds become in the log of taskID from sequence
// number first on, written at n.
func Events(taskID string, first int64, ds []store.EventDraft, n time.Time) []*store.Event {
	out := make([]*store.Event, len(ds))
	for i, d := range ds {
		out[i] = &store.Event{TaskID: taskID, Seq: first + int64(i), Type: d.Type, Payload: DraftPayload(d), CreatedAt: n}
	}
	return out
}

// EventListLimit returns the page size of an EventList asked for limit:
// 1000 for none, at most 10000.
func EventListLimit(limit int) int {
	if limit <= 0 {
		limit = 1000
	}
	return min(limit, 10000)
}
