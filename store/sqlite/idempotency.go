package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// IdempotencyKeyBegin implements store.Store. The read and the insert run in
// one job of the single writer, so concurrent identical calls are
// serialised and exactly one of them sees the key free.
func (db *DB) IdempotencyKeyBegin(ctx context.Context, p *store.IdempotencyKeyBeginParams) (*store.IdempotencyKeyBeginResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("begin idempotency key: %w", err)
	}
	var res *store.IdempotencyKeyBeginResult
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = p.Now
		}
		k := &store.IdempotencyKey{ClientID: p.ClientID, Key: p.Key}
		var (
			state            string
			status           sql.NullInt64
			created, expires int64
		)
		err := t.scanRow(`SELECT request_digest, state, status_code, body, created_at, expires_at, task_id
			FROM idempotency_keys WHERE client_id = ? AND key = ?`, []any{p.ClientID, p.Key},
			&k.RequestDigest, &state, &status, &k.Body, &created, &expires, &k.TaskID)
		switch {
		case err == nil && expires > ms(at):
			k.State = store.IdempotencyState(state)
			k.StatusCode = int(status.Int64)
			k.CreatedAt, k.ExpiresAt = fromMS(created), fromMS(expires)
			res = backend.BeginFound(p, k)
			return nil
		case err == nil, errors.Is(err, store.ErrNotFound): // expired or absent: take it
		default:
			return err
		}
		k = backend.FreshKey(p, n)
		if _, err := t.exec(`INSERT OR REPLACE INTO idempotency_keys
			(client_id, key, request_digest, state, created_at, expires_at) VALUES (?, ?, ?, 'in_flight', ?, ?)`,
			k.ClientID, k.Key, k.RequestDigest, ms(n), ms(k.ExpiresAt)); err != nil {
			return err
		}
		res = &store.IdempotencyKeyBeginResult{Outcome: store.IdempotencyNew, Key: k}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("begin idempotency key: %w", err)
	}
	return res, nil
}

// IdempotencyKeyComplete implements store.Store.
func (db *DB) IdempotencyKeyComplete(ctx context.Context, p *store.IdempotencyKeyCompleteParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	if err := db.write(ctx, func(t *tx) error { return t.completeKey(p) }); err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// completeKey stores the result of an in-flight key.
func (t *tx) completeKey(p *store.IdempotencyKeyCompleteParams) error {
	body := backend.KeyBody(p)
	r, err := t.exec(`UPDATE idempotency_keys SET state = 'done', status_code = ?, body = ?
		WHERE client_id = ? AND key = ? AND state = 'in_flight'`, p.StatusCode, body, p.ClientID, p.Key)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return backend.NotInFlight(p.Key)
	}
	return nil
}

// bindKey binds an in-flight key, bound to no task yet, to task id.
func (t *tx) bindKey(ref *store.IdempotencyKeyRef, id string) error {
	r, err := t.exec(`UPDATE idempotency_keys SET task_id = ?
		WHERE client_id = ? AND key = ? AND state = 'in_flight' AND task_id = ''`, id, ref.ClientID, ref.Key)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return backend.NotInFlight(ref.Key)
	}
	return nil
}

// IdempotencyKeyRelease implements store.Store. A key bound to a task is
// kept.
func (db *DB) IdempotencyKeyRelease(ctx context.Context, p *store.IdempotencyKeyReleaseParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	clientID, key := p.ClientID, p.Key
	err := db.write(ctx, func(t *tx) error {
		var taskID string
		err := t.scanRow("SELECT task_id FROM idempotency_keys WHERE client_id = ? AND key = ? AND state = 'in_flight'",
			[]any{clientID, key}, &taskID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return backend.NotInFlight(key)
		case err != nil:
			return err
		case taskID != "":
			return nil // its task was committed: the key answers for it
		}
		return t.execOne("DELETE FROM idempotency_keys WHERE client_id = ? AND key = ? AND state = 'in_flight'", clientID, key)
	})
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
