package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
	err = db.writeRows(ctx, func(t *tx) error {
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
	}, p.ParentTaskID)
	if err != nil {
		return nil, fmt.Errorf("insert task: %w", err)
	}
	return task, nil
}

const insertTaskSQL = `INSERT INTO tasks (id, module, module_digest, function, kind, input_codec, input, status,
	on_restart, timeout_ms, retry, attempt, owner_client_id, parent_task_id, not_before, created_at, updated_at,
	started_at, last_seq, memory_limit, lease_host, lease_token, lease_expires_at,
	deadline, run_timeout_ms, run_deadline, schedule_to_start_ms, start_deadline, heartbeat_timeout_ms, workflow_id, continued_from,
	parent_close_policy)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
		date_trunc('milliseconds', now()) + $23::bigint * interval '1 millisecond',
		$24, $25, $26, $27, $28, $29, $30, $31, $32)`

// insertTask inserts the task of p under id, owned by owner, with its
// first event; with start it is inserted running in attempt 1, with the
// status events of a claim and a start.
func (t *tx) insertTask(p *store.TaskInsertParams, id, owner, retry string, start bool, n time.Time) (*store.Task, error) {
	var leaseMS int64 // the lease of a task inserted running
	task, err := backend.NewTask(p, id, owner, start, n)
	if err != nil {
		return nil, err
	}
	if start {
		// The lease runs from the database's clock, which the INSERT reads
		// itself and the task learns with the commit: no round trip more.
		g := newGrant(p.Host, p.LeaseTTL)
		task.Lease = store.Lease{Host: g.host, Token: 1}
		leaseMS = g.ttl.Milliseconds()
		t.laterClock(func(n time.Time) { task.Lease.ExpiresAt = n.Add(g.ttl) })
	} else {
		t.workAppeared()
	}
	inCodec, in := backend.PayloadArgs(task.Input)
	var parent, started, lease any
	if leaseMS > 0 {
		lease = leaseMS
	}
	if task.ParentTaskID != "" {
		parent = task.ParentTaskID
	}
	if start {
		started = n
	}
	var workflowID, continuedFrom, closePolicy any
	if task.ContinuedFrom != "" {
		continuedFrom = task.ContinuedFrom
	}
	if task.ParentClosePolicy != "" {
		closePolicy = string(task.ParentClosePolicy)
	}
	if task.WorkflowID != "" {
		// The latest run decides; the partial unique index settles a race
		// with another insert of the same id.
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
	// Queued with the rest of the transaction: a taken id fails it, and
	// the primary key's violation becomes ErrExists.
	t.laterInsert(func(err error) error {
		if isUnique(err, "tasks_pkey") {
			return fmt.Errorf("%w: task %s", store.ErrExists, task.ID)
		}
		if isUnique(err, "tasks_workflow_open") {
			return fmt.Errorf("%w: workflow id %q", store.ErrWorkflowIDInUse, task.WorkflowID)
		}
		return err
	}, insertTaskSQL,
		task.ID, task.Module, task.ModuleDigest, task.Function, string(task.Kind), inCodec, in, string(task.Status),
		string(task.OnRestart), task.Timeout.Milliseconds(), retry, task.Attempt, task.OwnerClientID, parent,
		task.NotBefore, n, n, started, task.LastSeq, task.MemoryLimit,
		task.Lease.Host, task.Lease.Token, lease,
		tsOrNull(task.Deadline), task.RunTimeout.Milliseconds(), tsOrNull(task.RunDeadline),
		task.ScheduleToStartTimeout.Milliseconds(), tsOrNull(task.StartDeadline), task.HeartbeatTimeout.Milliseconds(),
		workflowID, continuedFrom, closePolicy)
	t.insertEvent(task.ID, 0, store.EventResponseCreated, store.StatusPayload(store.StatusQueued, "", 0, ""), n)
	if start {
		t.insertEvent(task.ID, 1, store.EventStatusChanged, store.StatusPayload(store.StatusLoading, store.StatusQueued, 1, ""), n)
		t.insertEvent(task.ID, 2, store.EventResponseInProgress, store.StatusPayload(store.StatusRunning, store.StatusLoading, 1, ""), n)
	}
	return task, nil
}

// latestRun returns the newest task of owner with workflow id, with its id
// and status only; nil for none.
func (t *tx) latestRun(owner, workflowID string) (*store.Task, error) {
	var id, status string
	err := t.scanRow(`SELECT id, status FROM tasks WHERE owner_client_id = $1 AND workflow_id = $2 ORDER BY id DESC LIMIT 1`,
		[]any{owner, workflowID}, &id, &status)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &store.Task{ID: id, Status: store.Status(status)}, nil
}

// TaskGet implements store.Store.
func (db *DB) TaskGet(ctx context.Context, id string) (*store.Task, error) {
	row, err := db.queryRow(ctx, "SELECT "+taskColumns+" FROM tasks WHERE id = $1", id)
	if err != nil {
		return nil, fmt.Errorf("get task: %w", err)
	}
	t, err := scanTask(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get task %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get task: %w", db.closedOr(err))
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
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if p.OwnerClientID != "" {
		where = append(where, "owner_client_id = "+arg(p.OwnerClientID))
	}
	if p.ParentTaskID != "" {
		where = append(where, "parent_task_id = "+arg(p.ParentTaskID))
	}
	if p.Module != "" {
		where = append(where, "module = "+arg(p.Module))
	}
	if p.Function != "" {
		where = append(where, "function = "+arg(p.Function))
	}
	if p.WorkflowID != "" {
		where = append(where, "workflow_id = "+arg(p.WorkflowID))
	}
	if len(p.Statuses) > 0 {
		ss := make([]string, len(p.Statuses))
		for i, s := range p.Statuses {
			ss[i] = string(s)
		}
		where = append(where, "status = ANY("+arg(ss)+"::text[])")
	}
	order := "ASC"
	if p.Newest {
		order = "DESC"
	}
	if p.Cursor != "" {
		if p.Newest {
			where = append(where, "id < "+arg(p.Cursor))
		} else {
			where = append(where, "id > "+arg(p.Cursor))
		}
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
	q += " ORDER BY id " + order + " LIMIT " + arg(limit)
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []*store.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", db.closedOr(err))
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
			n int64
		)
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("count tasks: %w", err)
		}
		out[store.Status(s)] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count tasks: %w", db.closedOr(err))
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
	err := db.writeRows(ctx, func(t *tx) error {
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
	}, p.ID)
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
	err := db.writeRows(ctx, func(t *tx) error {
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
	}, id)
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
	var (
		claimed []*store.Task
		cursor  string
	)
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = msTime(p.Now)
		}
		db.claimMu.Lock()
		cursor = db.claimCursor
		db.claimMu.Unlock()
		var err error
		claimed, cursor, err = t.claimQueued(limit, at, n, p.Gate, g, cursor)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	if len(claimed) > 0 {
		db.claimMu.Lock()
		db.claimCursor = cursor
		db.claimMu.Unlock()
	}
	return claimed, nil
}

// queueOwnersSQL lists the owners with queued tasks by a loose index scan
// of tasks_queue: one index seek per owner, however many tasks each has.
const queueOwnersSQL = `WITH RECURSIVE o (owner) AS (
		(SELECT owner_client_id FROM tasks WHERE status = 'queued' ORDER BY owner_client_id LIMIT 1)
		UNION ALL
		SELECT (SELECT owner_client_id FROM tasks WHERE status = 'queued' AND owner_client_id > o.owner
			ORDER BY owner_client_id LIMIT 1)
		FROM o WHERE o.owner IS NOT NULL
	)
	SELECT owner, date_trunc('milliseconds', now()) FROM o WHERE owner IS NOT NULL`

// claimNextSQL locks the oldest eligible queued tasks of one owner that no
// other transaction holds: concurrent claims skip each other's rows
// instead of queueing behind them.
const claimNextSQL = "SELECT " + taskColumns + ` FROM tasks
	WHERE status = 'queued' AND owner_client_id = $1 AND not_before <= $2
	ORDER BY not_before, id LIMIT $3 FOR NO KEY UPDATE SKIP LOCKED`

// claimQueued claims up to limit eligible queued tasks, round-robin over
// their owners starting after cursor, the owner served last, oldest first
// within an owner. It returns the claimed tasks and the owner served last.
//
// Each owner's next tasks are locked a few at a time (its share of what
// is left to claim), so a claim of many tasks reads them in a few
// statements; the moves to loading are queued and sent together. A task
// locked and not claimed (the limit was reached, or the gate refused its
// owner) stays queued and is free again at the commit.
func (t *tx) claimQueued(limit int, at, n time.Time, gate store.ClaimGate, g *grant, cursor string) ([]*store.Task, string, error) {
	rows, err := t.query(queueOwnersSQL)
	if err != nil {
		return nil, cursor, err
	}
	// The database's clock comes along, for the leases of the claim.
	owners, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var (
			owner string
			clock time.Time
		)
		err := r.Scan(&owner, &clock)
		if err == nil && t.dbNow.IsZero() {
			t.dbNow = clock.UTC()
		}
		return owner, err
	})
	if err != nil {
		return nil, cursor, err
	}
	if gate != nil {
		gate.Queued(owners)
	}
	// Start after the owner served last.
	start := 0
	for i, o := range owners {
		if o > cursor {
			start = i
			break
		}
	}
	owners = append(owners[start:], owners[:start]...)
	// next holds each owner's locked, not yet claimed tasks, oldest first.
	next := make(map[string][]*store.Task, len(owners))
	var claimed []*store.Task
	for len(claimed) < limit && len(owners) > 0 {
		active := owners[:0]
		for _, o := range owners {
			if len(claimed) == limit {
				break
			}
			if len(next[o]) == 0 {
				share := max(1, (limit-len(claimed)+len(owners)-1)/len(owners))
				rows, err := t.query(claimNextSQL, o, at, share)
				if err != nil {
					return nil, cursor, err
				}
				if next[o], err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Task, error) { return scanTask(r) }); err != nil {
					return nil, cursor, err
				}
				if len(next[o]) == 0 {
					continue // nothing eligible and free: drop the owner from this claim
				}
			}
			task := next[o][0]
			next[o] = next[o][1:]
			if gate != nil && !gate.Admit(o, task.MemoryLimit) {
				continue // kept waiting: drop the owner from this claim
			}
			if err := t.move(task, &move{to: store.StatusLoading, grant: g}, n); err != nil {
				return nil, cursor, err
			}
			claimed = append(claimed, task)
			cursor = o
			active = append(active, o)
		}
		owners = active
	}
	return claimed, cursor, nil
}

// TaskCheckpoint implements store.Store.
func (db *DB) TaskCheckpoint(ctx context.Context, p *store.TaskCheckpointParams) (*store.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint task: %w", err)
	}
	var task *store.Task
	err := db.writeRows(ctx, func(t *tx) error {
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
			t.laterOne(`UPDATE tasks SET checkpoint_codec = $1, checkpoint = $2, updated_at = $3, last_seq = $4
				WHERE id = $5 AND last_seq = $6`, codec, data, n, cur.LastSeq, cur.ID, prev)
			t.insertEvents(cur.ID, prev+1, p.Events, n)
			return nil
		})
	}, p.ID)
	if err != nil {
		return backend.ConflictTask(task, err), fmt.Errorf("checkpoint task: %w", err)
	}
	return task, nil
}
