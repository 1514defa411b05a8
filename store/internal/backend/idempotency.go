package backend

import (
	"bytes"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

// FreshKey returns the in-flight key IdempotencyKeyBegin with p takes at
// n, when the key is absent or expired.
func FreshKey(p *store.IdempotencyKeyBeginParams, n time.Time) *store.IdempotencyKey {
	return &store.IdempotencyKey{
		ClientID:      p.ClientID,
		Key:           p.Key,
		RequestDigest: append([]byte(nil), p.RequestDigest...),
		State:         store.IdempotencyInFlightState,
		CreatedAt:     n,
		ExpiresAt:     p.ExpiresAt.UTC().Truncate(time.Millisecond),
	}
}

// BeginFound returns the answer of IdempotencyKeyBegin with p that found
// k, a stored key that has not expired: a different request's key, one in
// flight (bound to a task or not), or one to replay.
func BeginFound(p *store.IdempotencyKeyBeginParams, k *store.IdempotencyKey) *store.IdempotencyKeyBeginResult {
	res := &store.IdempotencyKeyBeginResult{Key: k}
	switch {
	case !bytes.Equal(k.RequestDigest, p.RequestDigest):
		res.Outcome = store.IdempotencyMismatch
	case k.State == store.IdempotencyInFlightState && k.TaskID != "":
		res.Outcome = store.IdempotencyTask
	case k.State == store.IdempotencyInFlightState:
		res.Outcome = store.IdempotencyInFlight
	default:
		res.Outcome = store.IdempotencyReplay
	}
	return res
}

// KeyBody returns the body a completion with p stores: never NULL.
func KeyBody(p *store.IdempotencyKeyCompleteParams) []byte {
	if p.Body == nil {
		return []byte{}
	}
	return p.Body
}

// NotInFlight is the error of a write to key that needs it in flight.
func NotInFlight(key string) error {
	return fmt.Errorf("key %q is not in flight: %w", key, store.ErrNotFound)
}
