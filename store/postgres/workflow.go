package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// workflowClaimBatch bounds the rows one WorkflowClaim reads per query.
const workflowClaimBatch = 256

// WorkflowCommit implements store.Store. EndChild's task is locked before
// the workflow's row, the order every write that touches a child and its
// parent takes.
func (db *DB) WorkflowCommit(ctx context.Context, p *store.WorkflowCommitParams) (*store.WorkflowCommitResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("commit workflow: %w", err)
	}
	var started, next *store.Task
	var nextRetry string
	if p.Next != nil {
		r, err := backend.MarshalRetry(p.Next.Retry)
		if err != nil {
			return nil, fmt.Errorf("commit workflow: %w", err)
		}
		nextRetry = r
	}
	retries := make([]string, len(p.Children))
	for i, c := range p.Children {
		r, err := backend.MarshalRetry(c.Retry)
		if err != nil {
			return nil, fmt.Errorf("commit workflow: %w", err)
		}
		retries[i] = r
	}
	var task, ended, endCur *store.Task
	g := newGrant(p.Host, p.LeaseTTL)
	events := p.Events
	if p.EndChild != nil {
		events = append(slices.Clip(p.EndChild.ParentEvents), p.Events...)
	}
	err := db.writeRows(ctx, func(t *tx) error {
		n := now()
		if !p.At.IsZero() {
			n = msTime(p.At)
		}
		task, ended, started, endCur = nil, nil, nil, nil
		if p.EndChild != nil {
			var err error
			if ended, err = t.endChild(p.ID, p.EndChild, n, &endCur); err != nil {
				return err
			}
		}
		err := t.withTask(p.ID, func(cur *store.Task) error {
			task = cur
			if err := store.CheckLease(cur, p.Lease); err != nil {
				return err
			}
			if cur.Status != store.StatusRunning {
				return fmt.Errorf("%w: task %s is %s, expected running", store.ErrConflict, cur.ID, cur.Status)
			}
			if cur.Kind != store.KindWorkflow {
				return fmt.Errorf("%w: task %s is an activity", store.ErrInvalid, cur.ID)
			}
			if p.Wait || p.EndChild != nil {
				if cur.LastSeq != p.LastSeq {
					return fmt.Errorf("%w: the log of task %s grew to %d during the run (read up to %d)", store.ErrConflict, cur.ID, cur.LastSeq, p.LastSeq)
				}
			}
			if p.EndChild != nil {
				if err := t.checkWaiting(cur); err != nil {
					return err
				}
			}
			if !p.Wait {
				m := &move{to: p.To, events: events, output: p.Output, err: p.Error}
				if err := t.move(cur, m, n); err != nil {
					return err
				}
				if cur.ParentTaskID != "" && (len(p.ParentEvents) > 0 || p.WakeParent) {
					_, err := t.appendEvents(cur.ParentTaskID, p.ParentEvents, n, p.WakeParent, nil, 0)
					if err != nil && !errors.Is(err, store.ErrTaskFinished) {
						return fmt.Errorf("parent %s: %w", cur.ParentTaskID, err)
					}
				}
				t.later("DELETE FROM workflow_waits WHERE task_id = $1", cur.ID)
				return nil
			}
			prev := cur.LastSeq
			cur.LastSeq += int64(len(events))
			cur.UpdatedAt = n
			releaseLease(cur) // a waiting workflow holds no lease
			t.laterOne(`UPDATE tasks SET last_seq = $1, updated_at = $2, lease_host = '', lease_expires_at = NULL
				WHERE id = $3 AND status = 'running' AND last_seq = $4`,
				cur.LastSeq, n, cur.ID, prev)
			if !p.WakeAt.IsZero() {
				t.workAppeared()
			}
			t.insertEvents(cur.ID, prev+1, events, n)
			t.later(`INSERT INTO workflow_waits (task_id, attempt, wake_at) VALUES ($1, $2, $3)
				ON CONFLICT (task_id) DO UPDATE SET attempt = excluded.attempt, wake_at = excluded.wake_at`,
				cur.ID, cur.Attempt, tsOrNull(p.WakeAt))
			return nil
		})
		if err != nil {
			return err
		}
		for i, c := range p.Children {
			child, err := t.insertChild(task, c, retries[i], i == 0 && p.StartChild, g, n)
			if err != nil {
				return err
			}
			if i == 0 && p.StartChild {
				started = child
			}
		}
		next = nil
		if p.Next != nil {
			np := *p.Next
			np.Kind, np.ContinuedFrom, np.WorkflowIDReuse = store.KindWorkflow, p.ID, store.ReuseAllowDuplicate
			id := np.ID
			if id == "" {
				id = store.NewID(store.TaskIDPrefix)
			}
			var err error
			if next, err = t.insertTask(&np, id, task.OwnerClientID, nextRetry, false, n); err != nil {
				return fmt.Errorf("next run: %w", err)
			}
		}
		return nil
	}, firstLocks(p)...)
	if err != nil {
		if cur := backend.ConflictTask(task, err); cur != nil || endCur != nil {
			return &store.WorkflowCommitResult{Task: cur, Ended: endCur}, fmt.Errorf("commit workflow: %w", err)
		}
		return nil, fmt.Errorf("commit workflow: %w", err)
	}
	return &store.WorkflowCommitResult{Task: task, Started: started, Ended: ended, Next: next}, nil
}

// firstLocks are the tasks a WorkflowCommit of p locks first: the child it
// ends, then the workflow.
func firstLocks(p *store.WorkflowCommitParams) []string {
	if p.EndChild != nil {
		return []string{p.EndChild.ID, p.ID}
	}
	return []string{p.ID}
}

// endChild moves the child p.ID of workflow parentID from running to its
// end, for a WorkflowCommit that folds it in. When the child's lease is
// lost, *cur is set to the child as it is.
func (t *tx) endChild(parentID string, p *store.TaskTransitionParams, n time.Time, cur **store.Task) (*store.Task, error) {
	m := withChange(backend.TransitionChange(p))
	m.reason, m.events = p.Reason, p.Events
	var out *store.Task
	err := t.withTask(p.ID, func(child *store.Task) error {
		out = child
		if err := store.CheckLease(child, p.Lease); err != nil {
			*cur = child
			return err
		}
		if err := backend.CheckChildEnd(child, parentID); err != nil {
			return err
		}
		return t.move(child, m, n)
	})
	if err != nil {
		return nil, fmt.Errorf("child %s: %w", p.ID, err)
	}
	return out, nil
}

// checkWaiting returns ErrConflict unless workflow task, whose row this
// transaction holds, waits in its current attempt: nobody claimed it.
func (t *tx) checkWaiting(task *store.Task) error {
	var attempt int
	err := t.scanRow("SELECT attempt FROM workflow_waits WHERE task_id = $1", []any{task.ID}, &attempt)
	return backend.CheckWaiting(task, attempt, err)
}

// WorkflowChildEnd implements store.Store.
func (db *DB) WorkflowChildEnd(ctx context.Context, p *store.TaskTransitionParams) (*store.WorkflowChildEndResult, error) {
	if err := p.ValidateChildEnd(); err != nil {
		return nil, fmt.Errorf("end child task: %w", err)
	}
	m := withChange(backend.TransitionChange(p))
	m.reason, m.events, m.fence = p.Reason, p.Events, p.Lease
	g := newGrant(p.Host, p.LeaseTTL)
	res := &store.WorkflowChildEndResult{}
	err := db.writeRows(ctx, func(t *tx) error {
		n := now()
		res.Parent = nil
		var err error
		res.Task, err = t.moveFrom(p.ID, p.From, m, n)
		if err != nil {
			return err
		}
		parentID := res.Task.ParentTaskID
		if parentID == "" {
			return nil
		}
		// appendEvents locks the parent's row: a claim of the parent or
		// another child's end waits for this transaction.
		if _, err := t.appendEvents(parentID, p.ParentEvents, n, false, nil, 0); err != nil {
			if errors.Is(err, store.ErrTaskFinished) {
				return nil // a finished workflow's log never grows
			}
			return fmt.Errorf("parent %s: %w", parentID, err)
		}
		var (
			attempt int
			clock   time.Time
		)
		// The database's clock comes along, for the lease of a hand-over.
		err = t.scanRow("SELECT attempt, date_trunc('milliseconds', now()) FROM workflow_waits WHERE task_id = $1",
			[]any{parentID}, &attempt, &clock)
		if errors.Is(err, store.ErrNotFound) {
			return nil // in a run: its commit finds the log grown
		}
		if err != nil {
			return err
		}
		if t.dbNow.IsZero() {
			t.dbNow = clock.UTC()
		}
		parent, err := t.getTask(parentID)
		if err != nil {
			return err
		}
		if parent.Status != store.StatusRunning || parent.Attempt != attempt {
			return nil // a stale wait
		}
		t.later("DELETE FROM workflow_waits WHERE task_id = $1", parentID)
		if err := t.grantLease(parent, g); err != nil {
			return err
		}
		res.Parent = parent
		return nil
	}, p.ID)
	if err != nil {
		if cur := backend.ConflictTask(res.Task, err); cur != nil {
			return &store.WorkflowChildEndResult{Task: cur}, fmt.Errorf("end child task: %w", err)
		}
		return nil, fmt.Errorf("end child task: %w", err)
	}
	return res, nil
}

// insertChild inserts a child task of parent, as TaskInsert would; with
// start it is inserted running, with the lease g.
func (t *tx) insertChild(parent *store.Task, p *store.TaskInsertParams, retry string, start bool, g *grant, n time.Time) (*store.Task, error) {
	id := p.ID
	if id == "" {
		id = store.NewID(store.TaskIDPrefix)
	}
	child := *p
	child.ParentTaskID = parent.ID
	child.Host, child.LeaseTTL = g.host, g.ttl
	return t.insertTask(&child, id, backend.OrDefault(p.OwnerClientID, parent.OwnerClientID), retry, start, n)
}

// WorkflowClaim implements store.Store. A row whose task is no longer
// running in the attempt that wrote it (recovery requeued or failed the
// task, or a cancel won) is stale: it is deleted and skipped. The task row
// is locked before the wait row is deleted, as every other write does; a
// task another transaction holds is skipped, not waited for, and stays due.
func (db *DB) WorkflowClaim(ctx context.Context, p *store.WorkflowClaimParams) (*store.WorkflowClaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("claim workflows: %w", err)
	}
	limit := max(p.Limit, 1)
	g := newGrant(p.Host, p.LeaseTTL)
	res := &store.WorkflowClaimResult{}
	err := db.write(ctx, func(t *tx) error {
		res.Tasks, res.Refused = res.Tasks[:0], false
		at := now()
		if !p.Now.IsZero() {
			at = msTime(p.Now)
		}
		if p.Gate != nil {
			p.Gate.Queued(nil)
		}
		skipped := 0 // due rows left in place (refused by the gate, or busy)
		for len(res.Tasks) < limit {
			type due struct {
				id      string
				attempt int
			}
			// The database's clock comes along, for the leases of the claim.
			rows, err := t.query(`SELECT task_id, attempt, date_trunc('milliseconds', now()) FROM workflow_waits
				WHERE wake_at IS NOT NULL AND wake_at <= $1
				ORDER BY wake_at, task_id LIMIT $2 OFFSET $3`, at, min(limit-len(res.Tasks), workflowClaimBatch), skipped)
			if err != nil {
				return err
			}
			batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
				var (
					d     due
					clock time.Time
				)
				err := r.Scan(&d.id, &d.attempt, &clock)
				if err == nil && t.dbNow.IsZero() {
					t.dbNow = clock.UTC()
				}
				return d, err
			})
			if err != nil {
				return err
			}
			if len(batch) == 0 {
				break
			}
			for _, d := range batch {
				task, err := scanTask(t.queryRow("SELECT "+taskColumns+" FROM tasks WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED", d.id))
				if errors.Is(err, pgx.ErrNoRows) {
					skipped++ // held by another transaction: left for a later claim
					continue
				}
				if err != nil {
					return err
				}
				// Read the wait again now that the task is held: the row
				// read above may have changed before the lock was taken.
				var attempt int
				var wake *time.Time
				err = t.scanRow("SELECT attempt, wake_at FROM workflow_waits WHERE task_id = $1", []any{d.id}, &attempt, &wake)
				if errors.Is(err, store.ErrNotFound) || (err == nil && (wake == nil || wake.After(at))) {
					continue // claimed or waiting again meanwhile
				}
				if err != nil {
					return err
				}
				live := task.Status == store.StatusRunning && task.Attempt == attempt
				if live && p.Gate != nil && !p.Gate.Admit(task.OwnerClientID, task.MemoryLimit) {
					skipped++
					res.Refused = true
					continue
				}
				t.later("DELETE FROM workflow_waits WHERE task_id = $1", d.id)
				if live {
					if err := t.grantLease(task, g); err != nil {
						return err
					}
					res.Tasks = append(res.Tasks, task)
				}
			}
		}
		var next *time.Time
		if err := t.scanRow("SELECT min(wake_at) FROM workflow_waits WHERE wake_at IS NOT NULL", nil, &next); err != nil {
			return err
		}
		res.NextWakeAt = fromNullTS(next)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim workflows: %w", err)
	}
	return res, nil
}

// WorkflowResume implements store.Store. A row left by an older attempt is
// replaced, and the workflows give up their leases. The task rows are locked first: a wait row changes only under
// its task's lock.
func (db *DB) WorkflowResume(ctx context.Context, p *store.WorkflowResumeParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("resume workflows: %w", err)
	}
	ids := p.IDs
	for len(ids) > 0 {
		batch := ids[:min(len(ids), backend.RecoverBatch)]
		ids = ids[len(batch):]
		err := db.write(ctx, func(t *tx) error {
			t.workAppeared()
			_, err := t.exec(`INSERT INTO workflow_waits (task_id, attempt, wake_at)
				SELECT id, attempt, $1 FROM tasks WHERE id = ANY($2::text[]) AND status = 'running' AND kind = 'workflow'
				ORDER BY id FOR NO KEY UPDATE
				ON CONFLICT (task_id) DO UPDATE SET attempt = excluded.attempt, wake_at = excluded.wake_at
				WHERE workflow_waits.attempt <> excluded.attempt`, now(), batch)
			if err != nil {
				return err
			}
			// Claimable now, the workflows hold no lease until claimed.
			_, err = t.exec(`UPDATE tasks SET lease_host = '', lease_expires_at = NULL
				WHERE id = ANY($1::text[]) AND status = 'running' AND kind = 'workflow' AND lease_expires_at IS NOT NULL`, batch)
			return err
		})
		if err != nil {
			return fmt.Errorf("resume workflows: %w", err)
		}
	}
	return nil
}

// wakeWorkflow makes the waiting workflow taskID due now; a workflow that
// is not waiting (in the middle of a run) is left alone: its commit finds
// the log grown and runs it again.
func (t *tx) wakeWorkflow(taskID string, n time.Time) {
	t.workAppeared()
	t.later("UPDATE workflow_waits SET wake_at = $1 WHERE task_id = $2 AND (wake_at IS NULL OR wake_at > $1)",
		n, taskID)
}
