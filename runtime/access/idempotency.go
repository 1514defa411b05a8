package access

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted.
const MaxIdempotencyKeyLen = 255

// inFlightRetry is the retry delay of a key whose first request still
// runs.
const inFlightRetry = time.Second

// Replay is the stored result of an earlier request with the same
// idempotency key and the same request digest.
type Replay struct {
	// StatusCode is the HTTP status of the first answer.
	StatusCode int
	// Body is the body of the first answer.
	Body []byte
	// TaskID, when set, is the task the first request committed under the
	// key before it could store an answer, and that request is gone (the
	// daemon restarted): StatusCode and Body are empty, the caller now holds
	// the key, answers for this task (the engine's TaskWait) and completes
	// the key. It is never a reason to create a second task.
	TaskID string
}

// heldKeys are the idempotency keys that a request of this process holds,
// from IdempotencyBegin to IdempotencyComplete, IdempotencyRelease or
// IdempotencyCompleted. A key in flight in the store but not held here
// belongs to a request that died with an earlier process.
type heldKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func heldKeyName(clientID, key string) string { return clientID + "\x00" + key }

// hold marks a key held; false if it was held already.
func (h *heldKeys) hold(clientID, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := heldKeyName(clientID, key)
	if _, ok := h.keys[k]; ok {
		return false
	}
	if h.keys == nil {
		h.keys = make(map[string]struct{})
	}
	h.keys[k] = struct{}{}
	return true
}

func (h *heldKeys) drop(clientID, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, heldKeyName(clientID, key))
}

// IdempotencyBegin claims an idempotency key of a client for one request,
// atomically: of concurrent calls with one key exactly one gets (nil, nil)
// and must end with IdempotencyComplete, IdempotencyRelease or
// IdempotencyCompleted. A key done with the same digest gives its Replay.
// It returns fault.IdempotencyKeyReused when the key was used with a
// different digest, fault.IdempotencyKeyInFlight (with a fault.RetryAfter
// cause) while the first request runs, and fault.Invalid for a malformed
// key. Keys live for Config.IdempotencyTTL (24 hours by default) and belong
// to one client.
//
// A key whose request committed a task and died before it stored an answer
// (a crash) gives a Replay with only TaskID set, to the first caller after
// the restart; the caller then holds the key as if it were new.
func (s *Service) IdempotencyBegin(ctx context.Context, clientID, key string, digest []byte) (*Replay, error) {
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	if len(digest) == 0 {
		return nil, fault.Errorf(fault.Invalid, "an idempotency request digest is required")
	}
	now := s.now()
	res, err := s.store.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
		ClientID: clientID, Key: key, RequestDigest: digest,
		ExpiresAt: now.Add(s.idempotencyTTL(ctx)), Now: now,
	})
	if err != nil {
		return nil, fault.Wrap("begin idempotency key", err)
	}
	switch res.Outcome {
	case store.IdempotencyNew:
		s.keys.hold(clientID, key)
		return nil, nil
	case store.IdempotencyTask:
		if s.keys.hold(clientID, key) {
			return &Replay{TaskID: res.Key.TaskID}, nil
		}
		return nil, inFlight()
	case store.IdempotencyReplay:
		return &Replay{StatusCode: res.Key.StatusCode, Body: res.Key.Body}, nil
	case store.IdempotencyMismatch:
		return nil, &fault.Error{
			Code: fault.IdempotencyKeyReused, Param: "Idempotency-Key",
			Message: "this idempotency key was already used with a different request",
		}
	case store.IdempotencyInFlight:
		return nil, inFlight()
	}
	return nil, fault.Wrap("begin idempotency key", errors.New("unknown outcome "+res.Outcome.String()))
}

// inFlight is the error of a key whose first request still runs.
func inFlight() error {
	return &fault.Error{
		Code: fault.IdempotencyKeyInFlight, Param: "Idempotency-Key", Err: fault.RetryAfter(inFlightRetry),
		Message: "a request with this idempotency key is still in progress",
	}
}

// IdempotencyComplete stores the answer of the request that holds the key,
// to be replayed to later requests with the same key and digest. It returns
// fault.Conflict unless the key is in flight.
func (s *Service) IdempotencyComplete(ctx context.Context, clientID, key string, status int, body []byte) error {
	defer s.keys.drop(clientID, key)
	err := s.store.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{
		ClientID: clientID, Key: key, StatusCode: status, Body: body,
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Errorf(fault.Conflict, "idempotency key %q is not in flight", key)
	case err != nil:
		return fault.Wrap("complete idempotency key", err)
	}
	return nil
}

// IdempotencyCompleted ends the hold of this process on a key that its
// request completed in its own transaction: the engine's TaskCreate with
// an idempotency reply, or TaskSignalIdempotent. It writes nothing.
func (s *Service) IdempotencyCompleted(clientID, key string) {
	s.keys.drop(clientID, key)
}

// IdempotencyRelease forgets a key whose request failed before it changed
// anything (a validation error, say), so that the client can try again with
// it. A key bound to a task its request committed (the engine's TaskRun) is
// kept and answers for that task. It returns fault.Conflict unless the key
// is in flight.
func (s *Service) IdempotencyRelease(ctx context.Context, clientID, key string) error {
	defer s.keys.drop(clientID, key)
	err := s.store.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: clientID, Key: key})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Errorf(fault.Conflict, "idempotency key %q is not in flight", key)
	case err != nil:
		return fault.Wrap("release idempotency key", err)
	}
	return nil
}

// checkIdempotencyKey accepts 1 to 255 printable ASCII characters.
func checkIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return fault.ParamErrorf("Idempotency-Key", "an idempotency key must be 1 to %d characters", MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fault.ParamErrorf("Idempotency-Key", "an idempotency key must be printable ASCII")
		}
	}
	return nil
}

// idempotencyTTL returns how long keys live: Config.IdempotencyTTL, or the
// service configuration's period, or the default.
func (s *Service) idempotencyTTL(ctx context.Context) time.Duration {
	if s.cfg.IdempotencyTTL > 0 {
		return s.cfg.IdempotencyTTL
	}
	if c := s.serviceConfig(ctx); c != nil && c.IdempotencyKeyTTL > 0 {
		return c.IdempotencyKeyTTL
	}
	return store.DefaultIdempotencyKeyTTL
}
