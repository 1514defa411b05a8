package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// workflowClaimBatch bounds the rows one WorkflowClaim reads per query.
const workflowClaimBatch = 256

// WorkflowCommit implements store.Store. The task row is written first (a
// stale cached row is then read again before anything else was written),
// then the events, the wait row and the children.
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
	err := db.write(ctx, func(t *tx) error {
		n := now()
		if !p.At.IsZero() {
			n = p.At.UTC().Truncate(time.Millisecond)
		}
		ended, endCur = nil, nil
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
				_, err := t.exec("DELETE FROM workflow_waits WHERE task_id = ?", cur.ID)
				return err
			}
			prev := cur.LastSeq
			cur.LastSeq += int64(len(events))
			cur.UpdatedAt = n
			releaseLease(cur) // a waiting workflow holds no lease
			if err := t.execOne(`UPDATE tasks SET last_seq = ?, updated_at = ?, lease_host = '', lease_expires_at = NULL
				WHERE id = ? AND status = 'running' AND last_seq = ?`,
				cur.LastSeq, ms(n), cur.ID, prev); err != nil {
				return err
			}
			t.cachePut(cur)
			if err := t.insertEvents(cur.ID, prev+1, events, n); err != nil {
				return err
			}
			var wake any
			if !p.WakeAt.IsZero() {
				wake = ms(p.WakeAt)
				t.workAppeared()
			}
			_, err := t.exec(`INSERT INTO workflow_waits (task_id, attempt, wake_at) VALUES (?, ?, ?)
				ON CONFLICT (task_id) DO UPDATE SET attempt = excluded.attempt, wake_at = excluded.wake_at`,
				cur.ID, cur.Attempt, wake)
			return err
		})
		if err != nil {
			return err
		}
		started = nil
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
	})
	if err != nil {
		cur, child := backend.ConflictTask(task, err), endCur
		if cur != nil || child != nil {
			return &store.WorkflowCommitResult{Task: cur, Ended: child}, fmt.Errorf("commit workflow: %w", err)
		}
		return nil, fmt.Errorf("commit workflow: %w", err)
	}
	return &store.WorkflowCommitResult{Task: task, Started: started, Ended: ended, Next: next}, nil
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

// checkWaiting returns ErrConflict unless workflow task waits in its
// current attempt: nobody claimed it.
func (t *tx) checkWaiting(task *store.Task) error {
	var attempt int
	err := t.scanRow("SELECT attempt FROM workflow_waits WHERE task_id = ?", []any{task.ID}, &attempt)
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
	err := db.write(ctx, func(t *tx) error {
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
		if _, err := t.appendEvents(parentID, p.ParentEvents, n, false, nil, 0); err != nil {
			if errors.Is(err, store.ErrTaskFinished) {
				return nil // a finished workflow's log never grows
			}
			return fmt.Errorf("parent %s: %w", parentID, err)
		}
		var attempt int
		err = t.scanRow("SELECT attempt FROM workflow_waits WHERE task_id = ?", []any{parentID}, &attempt)
		if errors.Is(err, store.ErrNotFound) {
			return nil // in a run: its commit finds the log grown
		}
		if err != nil {
			return err
		}
		parent, err := t.getTask(parentID)
		if err != nil {
			return err
		}
		if parent.Status != store.StatusRunning || parent.Attempt != attempt {
			return nil // a stale wait
		}
		if _, err := t.exec("DELETE FROM workflow_waits WHERE task_id = ?", parentID); err != nil {
			return err
		}
		if err := t.grantLease(parent, g, n); err != nil {
			return err
		}
		res.Parent = parent
		return nil
	})
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
// task, or a cancel won) is stale: it is deleted and skipped.
func (db *DB) WorkflowClaim(ctx context.Context, p *store.WorkflowClaimParams) (*store.WorkflowClaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("claim workflows: %w", err)
	}
	limit := max(p.Limit, 1)
	g := newGrant(p.Host, p.LeaseTTL)
	res := &store.WorkflowClaimResult{}
	err := db.write(ctx, func(t *tx) error {
		res.Tasks, res.Refused = res.Tasks[:0], false
		at := ms(now())
		if !p.Now.IsZero() {
			at = ms(p.Now)
		}
		if p.Gate != nil {
			p.Gate.Queued(nil)
		}
		skipped := 0 // due rows the gate refused, left in place
		for len(res.Tasks) < limit {
			type due struct {
				id      string
				attempt int
			}
			rows, err := t.query(`SELECT task_id, attempt FROM workflow_waits WHERE wake_at IS NOT NULL AND wake_at <= ?
				ORDER BY wake_at, task_id LIMIT ? OFFSET ?`, at, min(limit-len(res.Tasks), workflowClaimBatch), skipped)
			if err != nil {
				return err
			}
			var batch []due
			for rows.Next() {
				var d due
				if err := rows.Scan(&d.id, &d.attempt); err != nil {
					rows.Close()
					return classify(err)
				}
				batch = append(batch, d)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return classify(err)
			}
			if len(batch) == 0 {
				break
			}
			for _, d := range batch {
				task, err := t.getTask(d.id)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				live := err == nil && task.Status == store.StatusRunning && task.Attempt == d.attempt
				if live && p.Gate != nil && !p.Gate.Admit(task.OwnerClientID, task.MemoryLimit) {
					skipped++
					res.Refused = true
					continue
				}
				if _, err := t.exec("DELETE FROM workflow_waits WHERE task_id = ?", d.id); err != nil {
					return err
				}
				if live {
					if err := t.grantLease(task, g, now()); err != nil {
						return err
					}
					res.Tasks = append(res.Tasks, task)
				}
			}
		}
		var next sql.NullInt64
		if err := t.scanRow("SELECT min(wake_at) FROM workflow_waits WHERE wake_at IS NOT NULL", nil, &next); err != nil {
			return err
		}
		res.NextWakeAt = fromNullMS(next)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim workflows: %w", err)
	}
	return res, nil
}

// WorkflowResume implements store.Store. A row left by an older attempt is
// replaced, and the workflows give up their leases.
func (db *DB) WorkflowResume(ctx context.Context, p *store.WorkflowResumeParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("resume workflows: %w", err)
	}
	ids := p.IDs
	for len(ids) > 0 {
		batch := ids[:min(len(ids), backend.RecoverBatch)]
		ids = ids[len(batch):]
		err := db.write(ctx, func(t *tx) error {
			at := ms(now())
			t.workAppeared()
			for _, id := range batch {
				_, err := t.exec(`INSERT INTO workflow_waits (task_id, attempt, wake_at)
					SELECT id, attempt, ? FROM tasks WHERE id = ? AND status = 'running' AND kind = 'workflow'
					ON CONFLICT (task_id) DO UPDATE SET attempt = excluded.attempt, wake_at = excluded.wake_at
					WHERE workflow_waits.attempt <> excluded.attempt`, at, id)
				if err != nil {
					return err
				}
				// Claimable now, the workflow holds no lease until claimed.
				if _, err := t.exec(`UPDATE tasks SET lease_host = '', lease_expires_at = NULL
					WHERE id = ? AND status = 'running' AND kind = 'workflow' AND lease_expires_at IS NOT NULL`, id); err != nil {
					return err
				}
				t.w.cache.evict([]string{id})
			}
			return nil
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
func (t *tx) wakeWorkflow(taskID string, n time.Time) error {
	t.workAppeared()
	_, err := t.exec("UPDATE workflow_waits SET wake_at = ? WHERE task_id = ? AND (wake_at IS NULL OR wake_at > ?)",
		ms(n), taskID, ms(n))
	return err
}
