package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// IdempotencyKeyBegin implements store.Store. The key is taken by an
// INSERT … ON CONFLICT DO NOTHING, which of concurrent identical calls lets
// exactly one insert (the others wait for its commit and insert nothing);
// a key found instead is locked and read, and taken over only when it
// expired, under the lock, so two calls never both take an expired key.
func (db *DB) IdempotencyKeyBegin(ctx context.Context, p *store.IdempotencyKeyBeginParams) (*store.IdempotencyKeyBeginResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("begin idempotency key: %w", err)
	}
	var res *store.IdempotencyKeyBeginResult
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = msTime(p.Now)
		}
		fresh := backend.FreshKey(p, n)
		res = &store.IdempotencyKeyBeginResult{Outcome: store.IdempotencyNew, Key: fresh}
		for {
			inserted, err := t.affected(`INSERT INTO idempotency_keys
				(client_id, key, request_digest, state, created_at, expires_at) VALUES ($1, $2, $3, 'in_flight', $4, $5)
				ON CONFLICT (client_id, key) DO NOTHING`,
				fresh.ClientID, fresh.Key, fresh.RequestDigest, n, fresh.ExpiresAt)
			if err != nil {
				return err
			}
			if inserted == 1 {
				return nil
			}
			k := &store.IdempotencyKey{ClientID: p.ClientID, Key: p.Key}
			var (
				state            string
				status           *int32
				created, expires time.Time
			)
			err = t.scanRow(`SELECT request_digest, state, status_code, body, created_at, expires_at, task_id
				FROM idempotency_keys WHERE client_id = $1 AND key = $2 FOR UPDATE`, []any{p.ClientID, p.Key},
				&k.RequestDigest, &state, &status, &k.Body, &created, &expires, &k.TaskID)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted since the insert saw it: try the insert again
			}
			if err != nil {
				return err
			}
			if !expires.After(at) {
				// Expired: take it over.
				_, err := t.exec(`UPDATE idempotency_keys SET request_digest = $1, state = 'in_flight', status_code = NULL,
					body = NULL, created_at = $2, expires_at = $3, task_id = '' WHERE client_id = $4 AND key = $5`,
					fresh.RequestDigest, n, fresh.ExpiresAt, p.ClientID, p.Key)
				return err
			}
			k.State = store.IdempotencyState(state)
			if status != nil {
				k.StatusCode = int(*status)
			}
			k.CreatedAt, k.ExpiresAt = fromTS(created), fromTS(expires)
			res = backend.BeginFound(p, k)
			return nil
		}
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

// completeKey stores the result of an in-flight key. The UPDATE's WHERE
// clause is its compare-and-set: of two completions one finds it done.
func (t *tx) completeKey(p *store.IdempotencyKeyCompleteParams) error {
	body := backend.KeyBody(p)
	n, err := t.affected(`UPDATE idempotency_keys SET state = 'done', status_code = $1, body = $2
		WHERE client_id = $3 AND key = $4 AND state = 'in_flight'`, p.StatusCode, body, p.ClientID, p.Key)
	if err != nil {
		return err
	}
	if n == 0 {
		return backend.NotInFlight(p.Key)
	}
	return nil
}

// bindKey binds an in-flight key, bound to no task yet, to task id.
func (t *tx) bindKey(ref *store.IdempotencyKeyRef, id string) error {
	n, err := t.affected(`UPDATE idempotency_keys SET task_id = $1
		WHERE client_id = $2 AND key = $3 AND state = 'in_flight' AND task_id = ''`, id, ref.ClientID, ref.Key)
	if err != nil {
		return err
	}
	if n == 0 {
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
		err := t.scanRow("SELECT task_id FROM idempotency_keys WHERE client_id = $1 AND key = $2 AND state = 'in_flight' FOR UPDATE",
			[]any{clientID, key}, &taskID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return backend.NotInFlight(key)
		case err != nil:
			return err
		case taskID != "":
			return nil // its task was committed: the key answers for it
		}
		t.laterOne("DELETE FROM idempotency_keys WHERE client_id = $1 AND key = $2 AND state = 'in_flight'", clientID, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
