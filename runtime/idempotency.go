package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/weft-run/weft/store"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted.
const MaxIdempotencyKeyLen = 255

// Replay is the stored result of an earlier request with the same
// idempotency key and the same request digest.
type Replay struct {
	// StatusCode is the HTTP status of the first answer.
	StatusCode int
	// Body is the body of the first answer.
	Body []byte
}

// IdempotencyBegin claims an idempotency key of a client for one request,
// atomically: of concurrent calls with one key exactly one gets (nil, nil)
// and must end with IdempotencyComplete or IdempotencyRelease. A key done
// with the same digest gives its Replay. It returns
// CodeIdempotencyKeyReused when the key was used with a different digest,
// CodeIdempotencyKeyInFlight while the first request runs, and CodeInvalid
// for a malformed key. Keys live for Config.IdempotencyTTL (24 hours by
// default) and belong to one client.
func (e *Engine) IdempotencyBegin(ctx context.Context, clientID, key string, digest []byte) (*Replay, error) {
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	if len(digest) == 0 {
		return nil, Errorf(CodeInvalid, "an idempotency request digest is required")
	}
	now := e.now()
	res, err := e.store.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
		ClientID: clientID, Key: key, RequestDigest: digest,
		ExpiresAt: now.Add(e.idempotencyTTL(ctx)), Now: now,
	})
	if err != nil {
		return nil, internal("begin idempotency key", err)
	}
	switch res.Outcome {
	case store.IdempotencyNew:
		return nil, nil
	case store.IdempotencyReplay:
		return &Replay{StatusCode: res.Key.StatusCode, Body: res.Key.Body}, nil
	case store.IdempotencyMismatch:
		return nil, &Error{Code: CodeIdempotencyKeyReused, Param: "Idempotency-Key",
			Message: "this idempotency key was already used with a different request"}
	case store.IdempotencyInFlight:
		return nil, &Error{Code: CodeIdempotencyKeyInFlight, Param: "Idempotency-Key",
			Message: "a request with this idempotency key is still in progress"}
	}
	return nil, internal("begin idempotency key", errors.New("unknown outcome "+res.Outcome.String()))
}

// IdempotencyComplete stores the answer of the request that holds the key,
// to be replayed to later requests with the same key and digest. It returns
// CodeConflict unless the key is in flight.
func (e *Engine) IdempotencyComplete(ctx context.Context, clientID, key string, status int, body []byte) error {
	err := e.store.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{
		ClientID: clientID, Key: key, StatusCode: status, Body: body,
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Errorf(CodeConflict, "idempotency key %q is not in flight", key)
	case err != nil:
		return internal("complete idempotency key", err)
	}
	return nil
}

// IdempotencyRelease forgets a key whose request failed before it changed
// anything (a validation error, say), so that the client can try again with
// it. It returns CodeConflict unless the key is in flight.
func (e *Engine) IdempotencyRelease(ctx context.Context, clientID, key string) error {
	err := e.store.IdempotencyKeyRelease(ctx, clientID, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Errorf(CodeConflict, "idempotency key %q is not in flight", key)
	case err != nil:
		return internal("release idempotency key", err)
	}
	return nil
}

// checkIdempotencyKey accepts 1 to 255 printable ASCII characters.
func checkIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return paramErrorf("Idempotency-Key", "an idempotency key must be 1 to %d characters", MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return paramErrorf("Idempotency-Key", "an idempotency key must be printable ASCII")
		}
	}
	return nil
}

// idempotencyTTL returns how long keys live: Config.IdempotencyTTL, or the
// service configuration's period, or the default.
func (e *Engine) idempotencyTTL(ctx context.Context) time.Duration {
	if e.cfg.IdempotencyTTL > 0 {
		return e.cfg.IdempotencyTTL
	}
	if c := e.serviceConfig(ctx); c != nil && c.IdempotencyKeyTTL > 0 {
		return c.IdempotencyKeyTTL
	}
	return store.DefaultIdempotencyKeyTTL
}
