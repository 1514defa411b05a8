package postgres

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
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
	store.StatusQueued:     {"not_before"},
	store.StatusLoading:    {"attempt"},
	store.StatusRunning:    {"attempt", "started_at"},
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
	cpCodec, cp := payloadArgs(task.Checkpoint)
	args := []any{
		string(task.Status), task.UpdatedAt, task.LastSeq, cpCodec, cp,
		task.Lease.Host, task.Lease.Token, tsOrNull(task.Lease.ExpiresAt),
	}
	switch task.Status {
	case store.StatusQueued:
		args = append(args, task.NotBefore)
	case store.StatusLoading:
		args = append(args, task.Attempt)
	case store.StatusRunning:
		args = append(args, task.Attempt, tsOrNull(task.StartedAt))
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		outCodec, out := payloadArgs(task.Output)
		args = append(args, outCodec, out)
		args = append(args, errorArgs(task.Error)...)
		args = append(args, task.FinishedAt)
	}
	return append(args, task.ID, string(from), lastSeq)
}

// moveFrom locks the task id and moves it as m says when its status is one
// of from. Otherwise it returns the current task and ErrConflict, or
// ErrLeaseLost when the task no longer holds m.fence.
func (t *tx) moveFrom(id string, from []store.Status, m *move, n time.Time) (*store.Task, error) {
	var out *store.Task
	err := t.withTask(id, func(task *store.Task) error {
		out = task
		if err := store.CheckLease(task, m.fence); err != nil {
			return err
		}
		if !slices.Contains(from, task.Status) {
			return fmt.Errorf("%w: task %s is %s, expected %s", store.ErrConflict, id, task.Status, joinStatuses(from))
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
	if !store.CanTransition(from, m.to) {
		return fmt.Errorf("%w: no transition %s → %s", store.ErrInvalid, from, m.to)
	}
	switch {
	case m.grant != nil:
		if err := t.applyGrant(task, m.grant); err != nil {
			return err
		}
	case m.to == store.StatusQueued || m.to.IsTerminal():
		releaseLease(task)
	}
	if m.to == store.StatusQueued {
		t.workAppeared()
	}
	if from == store.StatusQueued && (m.to == store.StatusLoading || m.to == store.StatusRunning) {
		task.Attempt++ // a new attempt starts
	}
	switch m.to {
	case store.StatusQueued:
		task.NotBefore = n
		if !m.notBefore.IsZero() {
			task.NotBefore = msTime(m.notBefore)
		}
	case store.StatusRunning:
		if task.StartedAt.IsZero() {
			task.StartedAt = n
		}
	case store.StatusCompleted:
		task.Output, task.Error, task.FinishedAt = m.output, nil, n
	case store.StatusFailed, store.StatusCancelled:
		task.Output, task.Error, task.FinishedAt = store.Payload{}, m.err, n
	}
	if m.clearCheckpoint {
		task.Checkpoint = store.Payload{}
	}
	task.Status = m.to
	task.UpdatedAt = n
	prev := task.LastSeq
	seq := prev + 1
	task.LastSeq += int64(len(m.events)) + 1
	t.laterOne(moveSQL[m.to], moveArgs(task, from, prev)...)
	t.insertEvents(task.ID, seq, m.events, n)
	return t.statusEvent(task, from, m.reason, n)
}

func joinStatuses(ss []store.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, "|")
}

// statusEvent writes the status event at task.LastSeq and, for a terminal
// status, the response row; the terminal event carries the response.
func (t *tx) statusEvent(task *store.Task, from store.Status, reason string, n time.Time) error {
	var (
		typ     string
		payload []byte
	)
	switch task.Status {
	case store.StatusRunning:
		typ = store.EventResponseInProgress
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		typ = store.TerminalEventType(task.Status)
		b, err := json.Marshal(responseOf(task))
		if err != nil {
			return fmt.Errorf("response document: %w", err)
		}
		payload = b
		t.later(`INSERT INTO responses (task_id, status, created_at, finished_at) VALUES ($1, $2, $3, $4)`,
			task.ID, string(task.Status), task.CreatedAt, n)
	default:
		typ = store.EventStatusChanged
	}
	if payload == nil {
		payload = statusPayload(task.Status, from, task.Attempt, reason)
	}
	t.insertEvent(task.ID, task.LastSeq, typ, payload, n)
	return nil
}

// statusPayload is the payload of a non-terminal status event.
func statusPayload(to, from store.Status, attempt int, reason string) []byte {
	b, _ := json.Marshal(store.StatusEvent{Status: to, From: from, Attempt: attempt, Reason: reason}) // plain strings and ints
	return b
}

// responseOf builds the response document of a finished task.
func responseOf(task *store.Task) *store.Response {
	return &store.Response{
		ID:            task.ResponseID(),
		Object:        store.ResponseObject,
		TaskID:        task.ID,
		OwnerClientID: task.OwnerClientID,
		Status:        task.Status,
		Output:        task.Output,
		Error:         task.Error,
		CreatedAt:     task.CreatedAt,
		FinishedAt:    task.FinishedAt,
	}
}
