package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// TaskInsert implements store.Store.
func (db *DB) TaskInsert(ctx context.Context, p *store.TaskInsertParams) (*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert task: %w", err)
	}
	id := p.ID
	if id == "" {
		id = store.NewID(store.TaskIDPrefix)
	}
	retry, err := backend.MarshalRetry(p.Retry)
	if err != nil {
		return nil, fmt.Errorf("insert task: %w", err)
	}
	var task *store.Task
	err = db.write(ctx, func(t *tx) error {
		n := now()
		if p.ParentTaskID != "" {
			if _, err := t.appendEvents(p.ParentTaskID, p.ParentEvents, n, false, nil, 0); err != nil {
				return fmt.Errorf("parent %s: %w", p.ParentTaskID, err)
			}
		}
		var err error
		if task, err = t.insertTask(p, id, p.OwnerClientID, retry, p.Start, n); err != nil {
			return err
		}
		if p.Idempotency != nil {
			if err := t.completeKey(p.Idempotency); err != nil {
				return fmt.Errorf("idempotency key: %w", err)
			}
		}
		if p.IdempotencyTask != nil {
			if err := t.bindKey(p.IdempotencyTask, id); err != nil {
				return fmt.Errorf("idempotency key: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert task: %w", err)
	}
	return task, nil
}

// insertTask inserts the task of p under id, owned by owner, with its
// first event; with start it is inserted running in attempt 1, with the
// status events of a claim and a start, as a caller that runs it at once
// needs (one row write, and no trip through the queue's index).
func (t *tx) insertTask(p *store.TaskInsertParams, id, owner, retry string, start bool, n time.Time) (*store.Task, error) {
	task, err := backend.NewTask(p, id, owner, start, n)
	if err != nil {
		return nil, err
	}
	if start {
		newGrant(p.Host, p.LeaseTTL).apply(task, n)
	} else {
		t.workAppeared()
	}
	inCodec, in := backend.PayloadArgs(task.Input)
	var parent, started, workflowID, continuedFrom, closePolicy any
	if task.ContinuedFrom != "" {
		continuedFrom = task.ContinuedFrom
	}
	if task.ParentClosePolicy != "" {
		closePolicy = string(task.ParentClosePolicy)
	}
	if task.ParentTaskID != "" {
		parent = task.ParentTaskID
	}
	if task.WorkflowID != "" {
		var latest *store.Task // a task's own fresh id names no other run
		if task.WorkflowID != task.ID {
			if latest, err = t.latestRun(owner, task.WorkflowID); err != nil {
				return nil, err
			}
		}
		if err := backend.CheckWorkflowID(p, latest); err != nil {
			return nil, err
		}
		workflowID = task.WorkflowID
	}
	if start {
		started = ms(n)
	}
	_, err = t.exec(`INSERT INTO tasks (id, module, module_digest, function, kind, input_codec, input, status,
		on_restart, timeout_ms, retry, attempt, owner_client_id, parent_task_id, not_before, created_at, updated_at,
		started_at, last_seq, memory_limit, lease_host, lease_token, lease_expires_at,
		deadline, run_timeout_ms, run_deadline, schedule_to_start_ms, start_deadline, heartbeat_timeout_ms, workflow_id, continued_from,
		parent_close_policy)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		task.ID, task.Module, task.ModuleDigest, task.Function, string(task.Kind), inCodec, in, string(task.Status),
		string(task.OnRestart), task.Timeout.Milliseconds(), retry, task.Attempt, task.OwnerClientID, parent,
		ms(task.NotBefore), ms(n), ms(n), started, task.LastSeq, task.MemoryLimit,
		task.Lease.Host, task.Lease.Token, msOrNull(task.Lease.ExpiresAt),
		msOrNull(task.Deadline), task.RunTimeout.Milliseconds(), msOrNull(task.RunDeadline),
		task.ScheduleToStartTimeout.Milliseconds(), msOrNull(task.StartDeadline), task.HeartbeatTimeout.Milliseconds(), workflowID, continuedFrom, closePolicy)
	if err != nil {
		if isConstraint(err) && strings.Contains(err.Error(), "workflow_id") {
			return nil, fmt.Errorf("%w: workflow id %q", store.ErrWorkflowIDInUse, task.WorkflowID)
		}
		if isConstraint(err) {
			return nil, fmt.Errorf("%w: task %s", store.ErrExists, task.ID)
		}
		return nil, err
	}
	if err := t.insertEvent(task.ID, 0, store.EventResponseCreated, store.StatusPayload(store.StatusQueued, "", 0, ""), n); err != nil {
		return nil, err
	}
	if start {
		if err := t.insertEvent(task.ID, 1, store.EventStatusChanged, store.StatusPayload(store.StatusLoading, store.StatusQueued, 1, ""), n); err != nil {
			return nil, err
		}
		if err := t.insertEvent(task.ID, 2, store.EventResponseInProgress, store.StatusPayload(store.StatusRunning, store.StatusLoading, 1, ""), n); err != nil {
			return nil, err
		}
	}
	t.cachePut(task)
	return task, nil
}

// latestRun returns the newest task of owner with workflow id, with its id
// and status only; nil for none.
func (t *tx) latestRun(owner, workflowID string) (*store.Task, error) {
	var id, status string
	row, err := t.queryRow(`SELECT id, status FROM tasks WHERE owner_client_id = ? AND workflow_id = ? ORDER BY id DESC LIMIT 1`,
		owner, workflowID)
	if err != nil {
		return nil, err
	}
	err = row.Scan(&id, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &store.Task{ID: id, Status: store.Status(status)}, nil
}

// TaskGet implements store.Store.
func (db *DB) TaskGet(ctx context.Context, id string) (*store.Task, error) {
	row, err := db.queryRow(ctx, "SELECT "+taskColumns+" FROM tasks WHERE id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("get task: %w", err)
	}
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get task %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get task: %w", classify(err))
	}
	return t, nil
}

// TaskList implements store.Store.
func (db *DB) TaskList(ctx context.Context, p *store.TaskListParams) ([]*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	var (
		where []string
		args  []any
	)
	if p.OwnerClientID != "" {
		where = append(where, "owner_client_id = ?")
		args = append(args, p.OwnerClientID)
	}
	if p.ParentTaskID != "" {
		where = append(where, "parent_task_id = ?")
		args = append(args, p.ParentTaskID)
	}
	if p.Module != "" {
		where = append(where, "module = ?")
		args = append(args, p.Module)
	}
	if p.Function != "" {
		where = append(where, "function = ?")
		args = append(args, p.Function)
	}
	if p.WorkflowID != "" {
		where = append(where, "workflow_id = ?")
		args = append(args, p.WorkflowID)
	}
	if len(p.Statuses) > 0 {
		marks := make([]string, len(p.Statuses))
		for i, s := range p.Statuses {
			marks[i] = "?"
			args = append(args, string(s))
		}
		where = append(where, "status IN ("+strings.Join(marks, ", ")+")")
	}
	order := "ASC"
	if p.Newest {
		order = "DESC"
	}
	if p.Cursor != "" {
		if p.Newest {
			where = append(where, "id < ?")
		} else {
			where = append(where, "id > ?")
		}
		args = append(args, p.Cursor)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, store.MaxListLimit+1)
	columns := taskColumns
	if p.OmitPayloads {
		columns = taskColumnsNoPayloads
	}
	q := "SELECT " + columns + " FROM tasks"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id " + order + " LIMIT ?"
	args = append(args, limit)
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []*store.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", classify(err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", classify(err))
	}
	return out, nil
}

// TaskCount implements store.Store.
func (db *DB) TaskCount(ctx context.Context) (map[store.Status]int, error) {
	rows, err := db.query(ctx, "SELECT status, count(*) FROM tasks GROUP BY status")
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	defer rows.Close()
	out := make(map[store.Status]int, len(store.Statuses))
	for _, s := range store.Statuses {
		out[s] = 0
	}
	for rows.Next() {
		var (
			s string
			n int
		)
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("count tasks: %w", classify(err))
		}
		out[store.Status(s)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count tasks: %w", classify(err))
	}
	return out, nil
}

// TaskTransition implements store.Store.
func (db *DB) TaskTransition(ctx context.Context, p *store.TaskTransitionParams) (*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("transition task: %w", err)
	}
	m := withChange(backend.TransitionChange(p))
	m.reason, m.events, m.fence = p.Reason, p.Events, p.Lease
	var task *store.Task
	err := db.write(ctx, func(t *tx) error {
		n := now()
		var err error
		task, err = t.moveFrom(p.ID, p.From, m, n)
		if err != nil {
			return err
		}
		if task.ParentTaskID != "" && (len(p.ParentEvents) > 0 || p.WakeParent) {
			_, err := t.appendEvents(task.ParentTaskID, p.ParentEvents, n, p.WakeParent, nil, 0)
			if err != nil && !errors.Is(err, store.ErrTaskFinished) {
				return fmt.Errorf("parent %s: %w", task.ParentTaskID, err)
			}
		}
		return nil
	})
	if err != nil {
		return backend.ConflictTask(task, err), fmt.Errorf("transition task: %w", err)
	}
	return task, nil
}

// TaskCancel implements store.Store.
func (db *DB) TaskCancel(ctx context.Context, id string) (*store.Task, bool, error) {
	var (
		task    *store.Task
		changed bool
	)
	err := db.write(ctx, func(t *tx) error {
		changed = false
		return t.withTask(id, func(cur *store.Task) error {
			task = cur
			to, ok := backend.CancelTarget(cur.Status)
			if !ok {
				return nil // cancelling or finished: nothing to do
			}
			m := &move{to: to, reason: "cancel_requested"}
			if err := t.move(cur, m, now()); err != nil {
				return err
			}
			changed = true
			return nil
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("cancel task: %w", err)
	}
	return task, changed, nil
}

// TaskClaim implements store.Store.
func (db *DB) TaskClaim(ctx context.Context, p *store.TaskClaimParams) ([]*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	limit := max(p.Limit, 1)
	g := newGrant(p.Host, p.LeaseTTL)
	var claimed []*store.Task
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = p.Now
		}
		var err error
		claimed, err = t.claimQueued(limit, ms(at), n, p.Gate, g)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	return claimed, nil
}

// claimQueued claims up to limit eligible queued tasks, round-robin over
// their owners starting after the owner served last, oldest first within an
// owner. Every query is an index seek on tasks_queue, so tasks waiting for a
// later time cost nothing.
func (t *tx) claimQueued(limit int, at int64, n time.Time, gate store.ClaimGate, g *grant) ([]*store.Task, error) {
	// The owners with queued tasks, by a skip scan of the queue index.
	var owners []string
	for first, prev := true, ""; ; first = false {
		// INDEXED BY: the planner would otherwise pick tasks_status and sort,
		// reading every queued row once per owner on each claim.
		q := `SELECT owner_client_id FROM tasks INDEXED BY tasks_queue
			WHERE status = 'queued' AND owner_client_id > ?
			ORDER BY owner_client_id LIMIT 1`
		if first {
			q = `SELECT owner_client_id FROM tasks INDEXED BY tasks_queue
			WHERE status = 'queued' AND owner_client_id >= ?
			ORDER BY owner_client_id LIMIT 1`
		}
		var owner string
		err := t.scanRow(q, []any{prev}, &owner)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		owners = append(owners, owner)
		prev = owner
	}
	if gate != nil {
		gate.Queued(owners)
	}
	// Start after the owner served last.
	start := 0
	for i, o := range owners {
		if o > t.w.claimCursor {
			start = i
			break
		}
	}
	owners = append(owners[start:], owners[:start]...)
	var claimed []*store.Task
	for len(claimed) < limit && len(owners) > 0 {
		next := owners[:0]
		for _, o := range owners {
			if len(claimed) == limit {
				break
			}
			var (
				id  string
				mem int64
			)
			err := t.scanRow(`SELECT id, memory_limit FROM tasks WHERE status = 'queued' AND owner_client_id = ?
				AND not_before <= ? ORDER BY not_before, id LIMIT 1`, []any{o, at}, &id, &mem)
			if errors.Is(err, store.ErrNotFound) {
				continue // nothing eligible: drop the owner from this claim
			}
			if err != nil {
				return nil, err
			}
			if gate != nil && !gate.Admit(o, mem) {
				continue // kept waiting: drop the owner from this claim
			}
			task, err := t.moveFrom(id, []store.Status{store.StatusQueued}, &move{to: store.StatusLoading, grant: g}, n)
			if err != nil {
				return nil, err
			}
			claimed = append(claimed, task)
			t.w.claimCursor = o
			next = append(next, o)
		}
		owners = next
	}
	return claimed, nil
}

// TaskCheckpoint implements store.Store.
func (db *DB) TaskCheckpoint(ctx context.Context, p *store.TaskCheckpointParams) (*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint task: %w", err)
	}
	var task *store.Task
	err := db.write(ctx, func(t *tx) error {
		n := now()
		return t.withTask(p.ID, func(cur *store.Task) error {
			task = cur
			if err := store.CheckLease(cur, p.Lease); err != nil {
				return err
			}
			if cur.Status != store.StatusRunning && cur.Status != store.StatusLoading {
				return fmt.Errorf("%w: task %s is %s, expected loading|running", store.ErrConflict, cur.ID, cur.Status)
			}
			prev := cur.LastSeq
			cur.Checkpoint = p.Checkpoint
			cur.UpdatedAt = n
			cur.LastSeq += int64(len(p.Events))
			codec, data := backend.PayloadArgs(cur.Checkpoint)
			if err := t.execOne(`UPDATE tasks SET checkpoint_codec = ?, checkpoint = ?, updated_at = ?, last_seq = ?
				WHERE id = ? AND last_seq = ?`, codec, data, ms(n), cur.LastSeq, cur.ID, prev); err != nil {
				return err
			}
			t.cachePut(cur)
			return t.insertEvents(cur.ID, prev+1, p.Events, n)
		})
	})
	if err != nil {
		return backend.ConflictTask(task, err), fmt.Errorf("checkpoint task: %w", err)
	}
	return task, nil
}
