package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// move is one status change of a task (persistence §11.2: the status and
// its event change together).
type move struct {
	to     store.Status
	reason string // written into the status event
	// events are appended before the status event.
	events []store.EventDraft
	// output is the result of a move to completed.
	output store.Payload
	// err is the error of a move to failed or cancelled.
	err *store.TaskError
	// notBefore is when a task moved to queued may be claimed; zero means
	// now.
	notBefore       time.Time
	clearCheckpoint bool
	// fence is the lease token the writer holds, 0 for a write that is not
	// fenced (see store.CheckLease).
	fence int64
	// grant, when set, gives the task a new lease (a claim).
	grant *grant
}

// moveColumns lists, per target status, the columns a move writes besides
// status, updated_at, last_seq and the checkpoint.
var moveColumns = map[store.Status][]string{
	store.StatusQueued:     {"not_before", "start_deadline"},
	store.StatusLoading:    {"attempt", "run_deadline"},
	store.StatusRunning:    {"attempt", "started_at", "run_deadline"},
	store.StatusCancelling: nil,
	store.StatusCompleted:  finishColumns,
	store.StatusFailed:     finishColumns,
	store.StatusCancelled:  finishColumns,
}

var finishColumns = []string{
	"output_codec", "output", "error_code", "error_message", "error_type",
	"error_non_retryable", "error_details_codec", "error_details", "finished_at",
}

// moveSQL holds the UPDATE of each target status, built from moveColumns.
// The WHERE clause compares status and last_seq with the locked row the
// move was computed from.
var moveSQL = func() map[store.Status]string {
	out := make(map[store.Status]string, len(moveColumns))
	for st, cols := range moveColumns {
		set := []string{
			"status = $1", "updated_at = $2", "last_seq = $3", "checkpoint_codec = $4", "checkpoint = $5",
			"lease_host = $6", "lease_token = $7", "lease_expires_at = $8",
		}
		for _, c := range cols {
			set = append(set, fmt.Sprintf("%s = $%d", c, len(set)+1))
		}
		n := len(set)
		out[st] = fmt.Sprintf("UPDATE tasks SET %s WHERE id = $%d AND status = $%d AND last_seq = $%d",
			strings.Join(set, ", "), n+1, n+2, n+3)
	}
	return out
}()

// moveArgs returns the values of the columns of moveColumns[task.Status],
// then the id and the expected status and last sequence number.
func moveArgs(task *store.Task, from store.Status, lastSeq int64) []any {
	cpCodec, cp := backend.PayloadArgs(task.Checkpoint)
	args := []any{
		string(task.Status), task.UpdatedAt, task.LastSeq, cpCodec, cp,
		task.Lease.Host, task.Lease.Token, tsOrNull(task.Lease.ExpiresAt),
	}
	switch task.Status {
	case store.StatusQueued:
		args = append(args, task.NotBefore, tsOrNull(task.StartDeadline))
	case store.StatusLoading:
		args = append(args, task.Attempt, tsOrNull(task.RunDeadline))
	case store.StatusRunning:
		args = append(args, task.Attempt, tsOrNull(task.StartedAt), tsOrNull(task.RunDeadline))
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		outCodec, out := backend.PayloadArgs(task.Output)
		args = append(args, outCodec, out)
		args = append(args, errorArgs(task.Error)...)
		args = append(args, task.FinishedAt)
	}
	return append(args, task.ID, string(from), lastSeq)
}

// withChange returns the move that makes c.
func withChange(c backend.Change) *move {
	return &move{to: c.To, notBefore: c.NotBefore, output: c.Output, err: c.Err, clearCheckpoint: c.ClearCheckpoint}
}

// change is the part of m backend.Change applies.
func (m *move) change() *backend.Change {
	return &backend.Change{To: m.to, NotBefore: m.notBefore, Output: m.output, Err: m.err, ClearCheckpoint: m.clearCheckpoint}
}

// moveFrom locks the task id and moves it as m says when its status is one
// of from. Otherwise it returns the current task and ErrConflict, or
// ErrLeaseLost when the task no longer holds m.fence.
func (t *tx) moveFrom(id string, from []store.Status, m *move, n time.Time) (*store.Task, error) {
	var out *store.Task
	err := t.withTask(id, func(task *store.Task) error {
		out = task
		if err := backend.CheckFrom(task, from, m.fence); err != nil {
			return err
		}
		return t.move(task, m, n)
	})
	return out, err
}

// move applies m to task, the locked current row, writes the changed
// columns and the events, and leaves task as it now is in the database.
// A move with a grant reads the database's clock first (tx.clock).
func (t *tx) move(task *store.Task, m *move, n time.Time) error {
	from := task.Status
	c := m.change()
	if err := c.CheckTransition(task); err != nil {
		return err
	}
	switch {
	case m.grant != nil:
		if err := t.applyGrant(task, m.grant); err != nil {
			return err
		}
	case backend.ReleasesLease(m.to):
		releaseLease(task)
	}
	if m.to == store.StatusQueued {
		t.workAppeared()
	}
	c.Apply(task, n)
	prev := task.LastSeq
	seq := prev + 1
	task.LastSeq += int64(len(m.events)) + 1
	t.laterOne(moveSQL[m.to], moveArgs(task, from, prev)...)
	t.insertEvents(task.ID, seq, m.events, n)
	return t.statusEvent(task, from, m.reason, n)
}

// statusEvent writes the status event at task.LastSeq and, for a terminal
// status, the response row; the terminal event carries the response.
func (t *tx) statusEvent(task *store.Task, from store.Status, reason string, n time.Time) error {
	typ, payload, err := store.StatusEventOf(task, from, reason)
	if err != nil {
		return err
	}
	if task.Status.IsTerminal() {
		t.later(`INSERT INTO responses (task_id, status, created_at, finished_at) VALUES ($1, $2, $3, $4)`,
			task.ID, string(task.Status), task.CreatedAt, n)
	}
	t.insertEvent(task.ID, task.LastSeq, typ, payload, n)
	return nil
}
