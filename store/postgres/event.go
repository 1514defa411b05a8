package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// EventAppend implements store.Store.
func (db *DB) EventAppend(ctx context.Context, p *store.EventAppendParams) ([]*store.Event, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("append events: %w", err)
	}
	var out []*store.Event
	err := db.writeRows(ctx, func(t *tx) error {
		n := now()
		if p.CancelRequest {
			if err := t.withTask(p.TaskID, func(task *store.Task) error {
				if err := backend.RequestCancel(task, n); err != nil {
					return err
				}
				t.laterOne("UPDATE tasks SET cancel_requested_at = $1 WHERE id = $2 AND cancel_requested_at IS NULL", task.CancelRequestedAt, task.ID)
				return nil
			}); err != nil {
				return err
			}
		}
		var err error
		if out, err = t.appendEvents(p.TaskID, p.Events, n, p.Wake, p.Progress, p.Lease); err != nil {
			return err
		}
		if p.Idempotency != nil {
			if err := t.completeKey(p.Idempotency); err != nil {
				return fmt.Errorf("idempotency key: %w", err)
			}
		}
		return nil
	}, p.TaskID)
	if err != nil {
		return nil, fmt.Errorf("append events: %w", err)
	}
	return out, nil
}

// appendEvents appends ds to the log of the unfinished task taskID. The
// task row is locked first and the sequence numbers are taken from its
// last_seq, so concurrent appends to one log take turns and leave no gap.
// wake makes a queued task claimable now, or a waiting workflow due now,
// and a non-nil progress becomes the task's progress, updated at n. A
// fence other than 0 is the lease token the writer holds
// (store.CheckLease).
func (t *tx) appendEvents(taskID string, ds []store.EventDraft, n time.Time, wake bool, progress *store.TaskProgress, fence int64) ([]*store.Event, error) {
	var out []*store.Event
	err := t.withTask(taskID, func(task *store.Task) error {
		a, err := backend.Append(task, len(ds), n, wake, progress, fence)
		if err != nil {
			return err
		}
		if a.WorkAppeared {
			t.workAppeared()
		}
		if progress != nil {
			t.laterOne("UPDATE tasks SET last_seq = $1, updated_at = $2, not_before = $3, progress = $4 WHERE id = $5 AND last_seq = $6",
				task.LastSeq, n, task.NotBefore, backend.MarshalProgress(task.Progress), taskID, a.Prev)
		} else {
			t.laterOne("UPDATE tasks SET last_seq = $1, updated_at = $2, not_before = $3 WHERE id = $4 AND last_seq = $5",
				task.LastSeq, n, task.NotBefore, taskID, a.Prev)
		}
		if a.WakeWorkflow {
			t.wakeWorkflow(taskID, n)
		}
		out = backend.Events(taskID, a.Prev+1, ds, n)
		t.insertEvents(taskID, a.Prev+1, ds, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertEvents adds ds from sequence number first on.
func (t *tx) insertEvents(taskID string, first int64, ds []store.EventDraft, n time.Time) {
	for i, d := range ds {
		payload := backend.DraftPayload(d)
		t.insertEvent(taskID, first+int64(i), d.Type, payload, n)
	}
}

// eventRows are event rows waiting for flushEvents, column by column.
type eventRows struct {
	taskIDs  []string
	seqs     []int64
	types    []string
	payloads []string
	times    []time.Time
}

// insertEvent adds one event row to the transaction's rows, written
// together before the commit (flushEvents).
func (t *tx) insertEvent(taskID string, seq int64, typ string, payload []byte, n time.Time) {
	e := &t.events
	e.taskIDs = append(e.taskIDs, taskID)
	e.seqs = append(e.seqs, seq)
	e.types = append(e.types, typ)
	e.payloads = append(e.payloads, string(payload))
	e.times = append(e.times, n)
	t.touch(taskID)
}

// flushEvents queues the transaction's event rows as one statement, one
// array per column: a write appends several events (a status change and
// its journal events, a child's start), and a statement per row would cost
// the server far more than a row.
func (t *tx) flushEvents() {
	e := &t.events
	if len(e.taskIDs) == 0 {
		return
	}
	t.later(`INSERT INTO task_events (task_id, seq, type, payload, created_at)
		SELECT u.task_id, u.seq, u.type, u.payload::json, u.created_at
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS u (task_id, seq, type, payload, created_at)`,
		e.taskIDs, e.seqs, e.types, e.payloads, e.times)
	*e = eventRows{}
}

// eventBlock is how many events EventList allocates at once.
const eventBlock = 256

// EventList implements store.Store.
func (db *DB) EventList(ctx context.Context, p *store.EventListParams) ([]*store.Event, error) {
	limit := backend.EventListLimit(p.Limit)
	rows, err := db.query(ctx, `SELECT seq, type, payload::text, created_at FROM task_events
		WHERE task_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, p.TaskID, p.From, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	var (
		out     []*store.Event
		block   []store.Event // events are allocated in blocks: a journal reads thousands
		payload string
		created time.Time
	)
	for rows.Next() {
		if len(block) == 0 {
			block = make([]store.Event, min(limit-len(out), eventBlock))
		}
		e := &block[0]
		block = block[1:]
		e.TaskID = p.TaskID
		if err := rows.Scan(&e.Seq, &e.Type, &payload, &created); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		e.Payload = json.RawMessage(payload)
		e.CreatedAt = fromTS(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", db.closedOr(err))
	}
	if len(out) == 0 {
		row, err := db.queryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1", p.TaskID)
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		var one int
		if err := row.Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("list events: task %s: %w", p.TaskID, store.ErrNotFound)
		} else if err != nil {
			return nil, fmt.Errorf("list events: %w", db.closedOr(err))
		}
	}
	return out, nil
}
