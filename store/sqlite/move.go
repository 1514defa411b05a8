package sqlite

import (
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
	cpCodec, cp := backend.PayloadArgs(task.Checkpoint)
	args := []any{
		string(task.Status), ms(task.UpdatedAt), task.LastSeq, cpCodec, cp,
		task.Lease.Host, task.Lease.Token, msOrNull(task.Lease.ExpiresAt),
	}
	switch task.Status {
	case store.StatusQueued:
		args = append(args, ms(task.NotBefore), msOrNull(task.StartDeadline))
	case store.StatusLoading:
		args = append(args, task.Attempt, msOrNull(task.RunDeadline))
	case store.StatusRunning:
		args = append(args, task.Attempt, msOrNull(task.StartedAt), msOrNull(task.RunDeadline))
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		outCodec, out := backend.PayloadArgs(task.Output)
		args = append(args, outCodec, out)
		args = append(args, errorArgs(task.Error)...)
		args = append(args, ms(task.FinishedAt))
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

// moveFrom reads the task id and moves it as m says when its status is one
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

// move applies m to task, the current row, writes the changed columns
// (compare-and-set on status and last_seq) and the events, and leaves task
// as it now is in the database. A stale row gives errStale with nothing
// written.
func (t *tx) move(task *store.Task, m *move, n time.Time) error {
	from := task.Status
	c := m.change()
	if err := c.CheckTransition(task); err != nil {
		return err
	}
	c.Apply(task, n)
	switch {
	case m.grant != nil:
		m.grant.apply(task, n)
	case backend.ReleasesLease(m.to):
		releaseLease(task)
	}
	if m.to == store.StatusQueued {
		t.workAppeared()
	}
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

// statusEvent writes the status event at task.LastSeq and, for a terminal
// status, the response row; the terminal event carries the response.
func (t *tx) statusEvent(task *store.Task, from store.Status, reason string, n time.Time) error {
	typ, payload, err := store.StatusEventOf(task, from, reason)
	if err != nil {
		return err
	}
	if task.Status.IsTerminal() {
		if _, err := t.exec(`INSERT INTO responses (task_id, status, created_at, finished_at) VALUES (?, ?, ?, ?)`,
			task.ID, string(task.Status), ms(task.CreatedAt), ms(n)); err != nil {
			return err
		}
	}
	return t.insertEvent(task.ID, task.LastSeq, typ, payload, n)
}
