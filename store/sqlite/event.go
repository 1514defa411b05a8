package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// EventAppend implements store.Store.
func (db *DB) EventAppend(ctx context.Context, p *store.EventAppendParams) ([]*store.Event, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("append events: %w", err)
	}
	var out []*store.Event
	err := db.write(ctx, func(t *tx) error {
		n := now()
		if p.CancelRequest {
			if err := t.withTask(p.TaskID, func(task *store.Task) error {
				if err := backend.RequestCancel(task, n); err != nil {
					return err
				}
				t.cachePut(task)
				return t.execOne("UPDATE tasks SET cancel_requested_at = ? WHERE id = ? AND cancel_requested_at IS NULL", ms(task.CancelRequestedAt), task.ID)
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
	})
	if err != nil {
		return nil, fmt.Errorf("append events: %w", err)
	}
	return out, nil
}

// appendEvents appends ds to the log of the unfinished task taskID, taking
// the sequence numbers with one update; wake makes a queued task claimable
// now, or a waiting workflow due now, and a non-nil progress becomes the
// task's progress, updated at n. A fence other than 0 is the lease token
// the writer holds (store.CheckLease).
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
			if err := t.execOne("UPDATE tasks SET last_seq = ?, updated_at = ?, not_before = ?, progress = ? WHERE id = ? AND last_seq = ?",
				task.LastSeq, ms(n), ms(task.NotBefore), backend.MarshalProgress(task.Progress), taskID, a.Prev); err != nil {
				return err
			}
		} else if err := t.execOne("UPDATE tasks SET last_seq = ?, updated_at = ?, not_before = ? WHERE id = ? AND last_seq = ?",
			task.LastSeq, ms(n), ms(task.NotBefore), taskID, a.Prev); err != nil {
			return err
		}
		t.cachePut(task)
		if a.WakeWorkflow {
			if err := t.wakeWorkflow(taskID, n); err != nil {
				return err
			}
		}
		out = backend.Events(taskID, a.Prev+1, ds, n)
		return t.insertEvents(taskID, a.Prev+1, ds, n)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertEvents writes ds from sequence number first on.
func (t *tx) insertEvents(taskID string, first int64, ds []store.EventDraft, n time.Time) error {
	for i, d := range ds {
		payload := backend.DraftPayload(d)
		if err := t.insertEvent(taskID, first+int64(i), d.Type, payload, n); err != nil {
			return err
		}
	}
	return nil
}

// insertEvent adds one event row to the job's rows, written together at
// the end of the job (flushEvents).
func (t *tx) insertEvent(taskID string, seq int64, typ string, payload []byte, n time.Time) error {
	t.events = append(t.events, taskID, seq, typ, string(payload), ms(n))
	t.touch(taskID)
	return nil
}

// eventsPerInsert bounds the rows of one INSERT of events.
const eventsPerInsert = 32

// insertEventsSQL holds the INSERT of k event rows at index k.
var insertEventsSQL = func() []string {
	out := make([]string, eventsPerInsert+1)
	for k := 1; k <= eventsPerInsert; k++ {
		out[k] = "INSERT INTO task_events (task_id, seq, type, payload, created_at) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", k), ", ")
	}
	return out
}()

// flushEvents writes the job's event rows, many per statement: a job
// appends several events (a status change and its journal events, a
// child's start), and each statement costs far more than each row.
func (t *tx) flushEvents() error {
	const cols = 5
	for len(t.events) > 0 {
		k := min(len(t.events)/cols, eventsPerInsert)
		if _, err := t.exec(insertEventsSQL[k], t.events[:k*cols]...); err != nil {
			return fmt.Errorf("events of %v#%v: %w", t.events[0], t.events[1], err)
		}
		t.events = t.events[k*cols:]
	}
	return nil
}

// eventBlock is how many events EventList allocates at once.
const eventBlock = 256

// EventList implements store.Store.
func (db *DB) EventList(ctx context.Context, p *store.EventListParams) ([]*store.Event, error) {
	limit := backend.EventListLimit(p.Limit)
	rows, err := db.query(ctx, `SELECT seq, type, payload, created_at FROM task_events
		WHERE task_id = ? AND seq >= ? ORDER BY seq LIMIT ?`, p.TaskID, p.From, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	var (
		out     []*store.Event
		block   []store.Event // events are allocated in blocks: a journal reads thousands
		payload string
		created int64
	)
	for rows.Next() {
		if len(block) == 0 {
			block = make([]store.Event, min(limit-len(out), eventBlock))
		}
		e := &block[0]
		block = block[1:]
		e.TaskID = p.TaskID
		if err := rows.Scan(&e.Seq, &e.Type, &payload, &created); err != nil {
			return nil, fmt.Errorf("list events: %w", classify(err))
		}
		e.Payload = json.RawMessage(payload)
		e.CreatedAt = fromMS(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", classify(err))
	}
	if len(out) == 0 {
		var one int
		row, err := db.queryRow(ctx, "SELECT 1 FROM tasks WHERE id = ?", p.TaskID)
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		if err := row.Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("list events: task %s: %w", p.TaskID, store.ErrNotFound)
		} else if err != nil {
			return nil, fmt.Errorf("list events: %w", classify(err))
		}
	}
	return out, nil
}
