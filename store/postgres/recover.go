package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// TaskRecover implements store.Store. It walks the tasks of each unfinished
// status in id order, backend.RecoverBatch per transaction, each page
// locked as it is read; every task's new state and its event are written
// in the same transaction (persistence §11.3).
func (db *DB) TaskRecover(ctx context.Context) (*store.TaskRecoverResult, error) {
	res := &store.TaskRecoverResult{}
	err := backend.Recover(res, func(st store.Status, cursor string, part *store.TaskRecoverResult) (next string, err error) {
		err = db.write(ctx, func(t *tx) error {
			*part = store.TaskRecoverResult{}
			var err error
			next, err = t.recoverPage(st, cursor, part)
			return err
		})
		return next, err
	})
	if err != nil {
		return nil, fmt.Errorf("recover tasks: %w", err)
	}
	err = db.write(ctx, func(t *tx) error {
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

// recoverPage recovers one page of the tasks in status st after cursor and
// returns the id to continue after ("" at the end).
func (t *tx) recoverPage(st store.Status, cursor string, res *store.TaskRecoverResult) (string, error) {
	rows, err := t.query("SELECT "+taskColumns+" FROM tasks WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3 FOR NO KEY UPDATE",
		string(st), cursor, backend.RecoverBatch)
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
	return backend.NextCursor(tasks), nil
}

// recoverTask applies one cell of the persistence §11.3 table to task, a
// row this transaction holds.
func (t *tx) recoverTask(task *store.Task, n time.Time, res *store.TaskRecoverResult) error {
	r, ok := store.RecoveryOf(task, res)
	switch {
	case !ok || r.Stay:
		return nil
	case r.Resume: // stays running with its checkpoint
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
			store.StatusPayload(store.StatusRunning, store.StatusRunning, task.Attempt, store.CodeServerRestarted), n)
		return nil
	}
	m := &move{to: r.To, reason: store.CodeServerRestarted, err: r.Error, clearCheckpoint: r.ClearCheckpoint}
	return t.move(task, m, n)
}
