package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

// recoverBatch is the number of tasks recovered per transaction.
const recoverBatch = 500

// TaskRecover implements store.Store. It walks the tasks of each unfinished
// status in id order, recoverBatch per transaction, each page locked as it
// is read; every task's new state and its event are written in the same
// transaction (persistence §11.3).
func (db *DB) TaskRecover(ctx context.Context) (*store.TaskRecoverResult, error) {
	res := &store.TaskRecoverResult{}
	for _, st := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling} {
		if err := db.recoverStatus(ctx, st, res); err != nil {
			return nil, fmt.Errorf("recover tasks: %w", err)
		}
	}
	err := db.write(ctx, func(t *tx) error {
		n, err := t.affected("DELETE FROM idempotency_keys WHERE state = 'in_flight' AND task_id = ''")
		res.IdempotencyKeysReleased = int(n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recover tasks: release idempotency keys: %w", err)
	}
	db.log.Debug("recovered tasks", "failed", len(res.Failed), "requeued", len(res.Requeued),
		"resumed", len(res.Resumed), "cancelled", len(res.Cancelled), "queued", res.Queued,
		"idempotency_keys_released", res.IdempotencyKeysReleased)
	return res, nil
}

// recoverStatus recovers the tasks found in status st. Queued is visited
// first, so a task that recovery moves back to queued is not visited again.
func (db *DB) recoverStatus(ctx context.Context, st store.Status, res *store.TaskRecoverResult) error {
	cursor := ""
	for {
		var (
			part store.TaskRecoverResult
			next string
		)
		err := db.write(ctx, func(t *tx) error {
			part = store.TaskRecoverResult{}
			var err error
			next, err = t.recoverPage(st, cursor, &part)
			return err
		})
		if err != nil {
			return err
		}
		res.Failed = append(res.Failed, part.Failed...)
		res.Requeued = append(res.Requeued, part.Requeued...)
		res.Resumed = append(res.Resumed, part.Resumed...)
		res.Cancelled = append(res.Cancelled, part.Cancelled...)
		res.Queued += part.Queued
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// recoverPage recovers one page of the tasks in status st after cursor and
// returns the id to continue after ("" at the end).
func (t *tx) recoverPage(st store.Status, cursor string, res *store.TaskRecoverResult) (string, error) {
	rows, err := t.query("SELECT "+taskColumns+" FROM tasks WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3 FOR NO KEY UPDATE",
		string(st), cursor, recoverBatch)
	if err != nil {
		return "", err
	}
	tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Task, error) { return scanTask(r) })
	if err != nil {
		return "", err
	}
	n := now()
	for _, task := range tasks {
		if err := t.recoverTask(task, n, res); err != nil {
			return "", fmt.Errorf("task %s: %w", task.ID, err)
		}
	}
	if len(tasks) < recoverBatch {
		return "", nil
	}
	return tasks[len(tasks)-1].ID, nil
}

// recoverTask applies one cell of the persistence §11.3 table to task, a
// row this transaction holds.
func (t *tx) recoverTask(task *store.Task, n time.Time, res *store.TaskRecoverResult) error {
	to, ok := store.RecoveryTarget(task.Status, task.OnRestart)
	if !ok {
		return nil
	}
	m := &move{to: to, reason: store.CodeServerRestarted}
	switch {
	case to == store.StatusFailed:
		m.err = &store.TaskError{
			Code:    store.CodeServerRestarted,
			Message: fmt.Sprintf("the server restarted while the task was %s (on_restart=%s)", task.Status, task.OnRestart),
		}
		res.Failed = append(res.Failed, task.ID)
	case to == store.StatusCancelled:
		res.Cancelled = append(res.Cancelled, task.ID)
	case to == store.StatusQueued && task.Status == store.StatusQueued:
		res.Queued++
		return nil
	case to == store.StatusQueued:
		// retry starts the next attempt from scratch.
		m.clearCheckpoint = task.OnRestart == store.OnRestartRetry
		res.Requeued = append(res.Requeued, task.ID)
	default: // running, policy resume: stays running with its checkpoint
		res.Resumed = append(res.Resumed, task.ID)
		if task.Kind == store.KindWorkflow {
			// A workflow that waited goes on waiting: nothing of it ran
			// when the daemon stopped, so its log gets no event at each
			// restart.
			switch err := t.checkWaiting(task); {
			case err == nil:
				return nil
			case !errors.Is(err, store.ErrConflict):
				return err
			}
		}
		prev := task.LastSeq
		task.LastSeq++
		task.UpdatedAt = n
		// A fresh lease, so that a write of the run before the restart
		// (fenced by the old token) can never land.
		if err := t.applyGrant(task, newGrant(task.Lease.Host, 0)); err != nil {
			return err
		}
		t.laterOne("UPDATE tasks SET last_seq = $1, updated_at = $2, lease_token = $3, lease_expires_at = $4 WHERE id = $5 AND last_seq = $6",
			task.LastSeq, n, task.Lease.Token, task.Lease.ExpiresAt, task.ID, prev)
		t.insertEvent(task.ID, task.LastSeq, store.EventRecovered,
			statusPayload(store.StatusRunning, store.StatusRunning, task.Attempt, store.CodeServerRestarted), n)
		return nil
	}
	return t.move(task, m, n)
}
