package sqlite

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

// grant is a lease to hand out: to host, for ttl.
type grant struct {
	host string
	ttl  time.Duration
}

// newGrant returns the lease a claim by host with ttl gives.
func newGrant(host string, ttl time.Duration) *grant {
	return &grant{host: host, ttl: store.LeaseTTLOr(ttl)}
}

// apply gives task a new lease from n on: the next token.
func (g *grant) apply(task *store.Task, n time.Time) {
	task.Lease = store.Lease{Host: g.host, Token: task.Lease.Token + 1, ExpiresAt: n.Add(g.ttl)}
}

// releaseLease drops the lease task holds, keeping its token.
func releaseLease(task *store.Task) {
	task.Lease.Host, task.Lease.ExpiresAt = "", time.Time{}
}

// moveColumns lists, per target status, the columns a move writes besides
// status, updated_at, last_seq and the checkpoint. Each target writes only
// its own columns, so SQLite rewrites only the indexes those columns are in.
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
var moveSQL = func() map[store.Status]string {
	out := make(map[store.Status]string, len(moveColumns))
	for st, cols := range moveColumns {
		set := "status = ?, updated_at = ?, last_seq = ?, checkpoint_codec = ?, checkpoint = ?, lease_host = ?, lease_token = ?, lease_expires_at = ?"
		for _, c := range cols {
			set += ", " + c + " = ?"
		}
		out[st] = "UPDATE tasks SET " + set + " WHERE id = ? AND status = ? AND last_seq = ?"
	}
	return out
}()

// moveArgs returns the values of the columns of moveColumns[task.Status],
// then the id and the expected status and last sequence number.
func moveArgs(task *store.Task, from store.Status, lastSeq int64) []any {
	cpCodec, cp := payloadArgs(task.Checkpoint)
	args := []any{
		string(task.Status), ms(task.UpdatedAt), task.LastSeq, cpCodec, cp,
		task.Lease.Host, task.Lease.Token, msOrNull(task.Lease.ExpiresAt),
	}
	switch task.Status {
	case store.StatusQueued:
		args = append(args, ms(task.NotBefore))
	case store.StatusLoading:
		args = append(args, task.Attempt)
	case store.StatusRunning:
		args = append(args, task.Attempt, msOrNull(task.StartedAt))
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		outCodec, out := payloadArgs(task.Output)
		args = append(args, outCodec, out)
		args = append(args, errorArgs(task.Error)...)
		args = append(args, ms(task.FinishedAt))
	}
	return append(args, task.ID, string(from), lastSeq)
}

// moveFrom reads the task id and moves it as m says when its status is one
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

// move applies m to task, the current row, writes the changed columns
// (compare-and-set on status and last_seq) and the events, and leaves task
// as it now is in the database. A stale row gives errStale with nothing
// written.
func (t *tx) move(task *store.Task, m *move, n time.Time) error {
	from := task.Status
	if !store.CanTransition(from, m.to) {
		return fmt.Errorf("%w: no transition %s → %s", store.ErrInvalid, from, m.to)
	}
	if from == store.StatusQueued && (m.to == store.StatusLoading || m.to == store.StatusRunning) {
		task.Attempt++ // a new attempt starts
	}
	switch m.to {
	case store.StatusQueued:
		task.NotBefore = n
		if !m.notBefore.IsZero() {
			task.NotBefore = m.notBefore.UTC().Truncate(time.Millisecond)
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
	switch {
	case m.grant != nil:
		m.grant.apply(task, n)
	case m.to == store.StatusQueued || m.to.IsTerminal():
		releaseLease(task)
	}
	if m.to == store.StatusQueued {
		t.workAppeared()
	}
	task.Status = m.to
	task.UpdatedAt = n
	prev := task.LastSeq
	seq := prev + 1
	task.LastSeq += int64(len(m.events)) + 1
	if err := t.execOne(moveSQL[m.to], moveArgs(task, from, prev)...); err != nil {
		return err
	}
	t.cachePut(task)
	if err := t.insertEvents(task.ID, seq, m.events, n); err != nil {
		return err
	}
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
		resp := responseOf(task)
		b, err := json.Marshal(resp)
		if err != nil {
			return fmt.Errorf("response document: %w", err)
		}
		payload = b
		if _, err := t.exec(`INSERT INTO responses (task_id, status, created_at, finished_at) VALUES (?, ?, ?, ?)`,
			task.ID, string(task.Status), ms(task.CreatedAt), ms(n)); err != nil {
			return err
		}
	default:
		typ = store.EventStatusChanged
	}
	if payload == nil {
		payload = statusPayload(task.Status, from, task.Attempt, reason)
	}
	return t.insertEvent(task.ID, task.LastSeq, typ, payload, n)
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
