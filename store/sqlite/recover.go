package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// TaskRecover implements store.Store. It walks the tasks of each unfinished
// status in id order, backend.RecoverBatch per transaction; every task's
// new state and its event are written in the same transaction
// (persistence §11.3).
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
		r, err := t.exec("DELETE FROM idempotency_keys WHERE state = 'in_flight' AND task_id = ''")
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
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
	rows, err := t.query("SELECT "+taskColumns+" FROM tasks WHERE status = ? AND id > ? ORDER BY id LIMIT ?",
		string(st), cursor, backend.RecoverBatch)
	if err != nil {
		return "", err
	}
	var tasks []*store.Task
	for rows.Next() {
		task, err := scanTask(rows)
		if err != nil {
			rows.Close()
			return "", classify(err)
		}
		tasks = append(tasks, task)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", classify(err)
	}
	for _, task := range tasks {
		t.cachePut(task) // the moves below start from these rows
	}
	n := now()
	for _, task := range tasks {
		if err := t.recoverTask(task, n, res); err != nil {
			return "", fmt.Errorf("task %s: %w", task.ID, err)
		}
	}
	return backend.NextCursor(tasks), nil
}

// recoverTask applies one cell of the persistence §11.3 table.
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
		return t.withTask(task.ID, func(cur *store.Task) error {
			prev := cur.LastSeq
			cur.LastSeq++
			cur.UpdatedAt = n
			// A fresh lease, so that a write of the run before the restart
			// (fenced by the old token) can never land.
			newGrant(cur.Lease.Host, 0).apply(cur, n)
			if err := t.execOne(`UPDATE tasks SET last_seq = ?, updated_at = ?, lease_token = ?, lease_expires_at = ?
				WHERE id = ? AND last_seq = ?`,
				cur.LastSeq, ms(n), cur.Lease.Token, ms(cur.Lease.ExpiresAt), cur.ID, prev); err != nil {
				return err
			}
			t.cachePut(cur)
			return t.insertEvent(cur.ID, cur.LastSeq, store.EventRecovered,
				store.StatusPayload(store.StatusRunning, store.StatusRunning, cur.Attempt, store.CodeServerRestarted), n)
		})
	}
	m := &move{to: r.To, reason: store.CodeServerRestarted, err: r.Error, clearCheckpoint: r.ClearCheckpoint}
	_, err := t.moveFrom(task.ID, []store.Status{task.Status}, m, n)
	return err
}
