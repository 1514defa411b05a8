package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

// workKey is the watchers key of WorkWatch: no task has the empty id.
const workKey = ""

// workAppeared records that the job may have made work claimable, for
// WorkWatch.
func (t *tx) workAppeared() { t.touched = append(t.touched, workKey) }

// WorkWatch implements store.Store: it fires after this store's own
// commits, the only ones a SQLite store has.
func (db *DB) WorkWatch() (<-chan struct{}, func()) { return db.watch.add(workKey) }

// Shared implements store.Store: a SQLite store belongs to one host (its
// data directory's lock file sees to it).
func (db *DB) Shared() bool { return false }

// grantLease gives task, the current row, the lease g from n on.
func (t *tx) grantLease(task *store.Task, g *grant, n time.Time) error {
	g.apply(task, n)
	if err := t.execOne("UPDATE tasks SET lease_host = ?, lease_token = ?, lease_expires_at = ? WHERE id = ? AND last_seq = ?",
		task.Lease.Host, task.Lease.Token, ms(task.Lease.ExpiresAt), task.ID, task.LastSeq); err != nil {
		return err
	}
	t.cachePut(task)
	return nil
}

// LeaseExtend implements store.Store.
func (db *DB) LeaseExtend(ctx context.Context, p *store.LeaseExtendParams) (*store.LeaseExtendResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	res := &store.LeaseExtendResult{}
	if len(p.Held) == 0 {
		return res, nil
	}
	ttl := store.LeaseTTLOr(p.TTL)
	err := db.write(ctx, func(t *tx) error {
		res.Lost, res.Cancelling = res.Lost[:0], res.Cancelling[:0]
		until := ms(now().Add(ttl))
		ids := make([]string, len(p.Held))
		for i, h := range p.Held {
			ids[i] = h.TaskID
			r, err := t.queryRow(`UPDATE tasks SET lease_expires_at = ?
				WHERE id = ? AND lease_token = ? AND lease_host = ? AND lease_expires_at IS NOT NULL
				RETURNING status`,
				until, h.TaskID, h.Token, p.Host)
			if err != nil {
				return err
			}
			var status string
			switch err := r.Scan(&status); {
			case errors.Is(err, sql.ErrNoRows):
				res.Lost = append(res.Lost, h.TaskID)
			case err != nil:
				return err
			case status == string(store.StatusCancelling):
				res.Cancelling = append(res.Cancelling, h.TaskID)
			}
		}
		t.w.cache.evict(ids) // read again at the next write
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return res, nil
}

// TaskReclaim implements store.Store, in one transaction: the writer is
// the only one, so no other host can reclaim at the same time.
func (db *DB) TaskReclaim(ctx context.Context, p *store.TaskReclaimParams) (*store.TaskReclaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("reclaim tasks: %w", err)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	g := newGrant(p.Host, p.LeaseTTL)
	res := &store.TaskReclaimResult{}
	err := db.write(ctx, func(t *tx) error {
		*res = store.TaskReclaimResult{}
		n := now()
		q := "SELECT " + taskColumns + ` FROM tasks INDEXED BY tasks_lease
			WHERE lease_expires_at IS NOT NULL AND lease_expires_at < ? AND status IN ('loading', 'running', 'cancelling')
			ORDER BY lease_expires_at, id LIMIT ?`
		args := []any{ms(n), limit}
		if p.Restart {
			q = "SELECT " + taskColumns + ` FROM tasks
				WHERE lease_expires_at IS NOT NULL AND (lease_expires_at < ? OR lease_host = ?)
					AND status IN ('loading', 'running', 'cancelling')
				ORDER BY lease_expires_at, id LIMIT ?`
			args = []any{ms(n), p.Host, limit}
		}
		rows, err := t.query(q, args...)
		if err != nil {
			return err
		}
		var tasks []*store.Task
		for rows.Next() {
			task, err := scanTask(rows)
			if err != nil {
				rows.Close()
				return classify(err)
			}
			tasks = append(tasks, task)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return classify(err)
		}
		for _, task := range tasks {
			t.cachePut(task) // the writes below start from these rows
			if err := t.reclaimTask(task, g, n, res); err != nil {
				return fmt.Errorf("task %s: %w", task.ID, err)
			}
		}
		if p.StaleKeysAfter > 0 {
			r, err := t.exec("DELETE FROM idempotency_keys WHERE state = 'in_flight' AND task_id = '' AND created_at < ?",
				ms(n.Add(-p.StaleKeysAfter)))
			if err != nil {
				return err
			}
			k, err := r.RowsAffected()
			if err != nil {
				return err
			}
			res.IdempotencyKeysReleased = int(k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim tasks: %w", err)
	}
	if len(res.Failed)+len(res.Requeued)+len(res.Cancelled)+len(res.Resumed) > 0 {
		db.log.Info("reclaimed tasks", "host", p.Host, "failed", len(res.Failed), "requeued", len(res.Requeued),
			"resumed", len(res.Resumed), "cancelled", len(res.Cancelled))
	}
	return res, nil
}

// reclaimTask takes over task, whose lease expired: the task.recovered
// event first, then the persistence §11.3 cell of its policy.
func (t *tx) reclaimTask(task *store.Task, g *grant, n time.Time, res *store.TaskReclaimResult) error {
	to, ok := store.RecoveryTarget(task.Status, task.OnRestart)
	if !ok {
		return nil
	}
	recovered := reclaimEvent(task, g.host)
	if to == store.StatusRunning { // resume: taken over running with a fresh lease
		prev := task.LastSeq
		task.LastSeq++
		task.UpdatedAt = n
		g.apply(task, n)
		if err := t.execOne(`UPDATE tasks SET last_seq = ?, updated_at = ?, lease_host = ?, lease_token = ?, lease_expires_at = ?
			WHERE id = ? AND last_seq = ?`, task.LastSeq, ms(n), task.Lease.Host, task.Lease.Token, ms(task.Lease.ExpiresAt),
			task.ID, prev); err != nil {
			return err
		}
		t.cachePut(task)
		res.Resumed = append(res.Resumed, task)
		return t.insertEvent(task.ID, task.LastSeq, store.EventRecovered, recovered.Payload, n)
	}
	m := reclaimMove(task, to, recovered)
	switch to {
	case store.StatusFailed:
		res.Failed = append(res.Failed, task.ID)
	case store.StatusCancelled:
		res.Cancelled = append(res.Cancelled, task.ID)
	default:
		res.Requeued = append(res.Requeued, task.ID)
	}
	_, err := t.moveFrom(task.ID, []store.Status{task.Status}, m, n)
	return err
}

// reclaimEvent is the task.recovered event of the takeover of task by
// host.
func reclaimEvent(task *store.Task, host string) store.EventDraft {
	return store.EventDraft{Type: store.EventRecovered, Payload: store.ReclaimPayload(task, host)}
}

// reclaimMove is the move of a taken-over task to to, after the
// task.recovered event.
func reclaimMove(task *store.Task, to store.Status, recovered store.EventDraft) *move {
	m := &move{to: to, reason: store.ReasonLeaseExpired, events: []store.EventDraft{recovered}}
	switch to {
	case store.StatusFailed:
		m.err = store.LeaseExpiredError(task)
	case store.StatusQueued:
		m.clearCheckpoint = task.OnRestart == store.OnRestartRetry // retry starts from scratch
	}
	return m
}
