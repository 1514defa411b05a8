package store

import "time"

// IdempotencyState is the state of an idempotency key.
type IdempotencyState string

// The idempotency key states.
const (
	// IdempotencyInFlightState marks a key whose request is still running.
	IdempotencyInFlightState IdempotencyState = "in_flight"
	// IdempotencyDoneState marks a key with a stored result.
	IdempotencyDoneState IdempotencyState = "done"
)

// IdempotencyKey is a client's idempotency key and the stored result of its
// request.
type IdempotencyKey struct {
	// ClientID is the client; keys are per client.
	ClientID string
	// Key is the Idempotency-Key header value.
	Key string
	// RequestDigest is the digest of the request that first used the key.
	RequestDigest []byte
	// State is in_flight or done.
	State IdempotencyState
	// StatusCode is the stored HTTP status of a done key.
	StatusCode int
	// Body is the stored body of a done key.
	Body []byte
	// TaskID is the task the key's request created, bound in the
	// transaction that inserted it (TaskInsertParams.IdempotencyTask); ""
	// for a key bound to no task.
	TaskID string
	// CreatedAt is when the key was first used.
	// Millisecond precision, UTC.
	CreatedAt time.Time
	// ExpiresAt is when the key is forgotten.
	// Millisecond precision, UTC.
	ExpiresAt time.Time
}

// IdempotencyOutcome is the answer of Store.IdempotencyKeyBegin.
type IdempotencyOutcome int

// The outcomes of IdempotencyKeyBegin.
const (
	// IdempotencyNew: the key was free and is now in flight for this call,
	// which must end with Complete (or TaskInsert's Idempotency) or Release.
	IdempotencyNew IdempotencyOutcome = iota + 1
	// IdempotencyReplay: the key is done with the same request digest; the
	// stored status and body are in the result.
	IdempotencyReplay
	// IdempotencyMismatch: the key was used with a different request.
	IdempotencyMismatch
	// IdempotencyInFlight: the key's first request is still running and
	// has committed nothing.
	IdempotencyInFlight
	// IdempotencyTask: the key is in flight and bound to the task
	// Key.TaskID, which its request committed, but no answer is stored yet.
	// The caller decides whether that request is still running; if not, it
	// answers for the task and completes the key. Never a second task.
	IdempotencyTask
)

// String returns the outcome's name.
func (o IdempotencyOutcome) String() string {
	switch o {
	case IdempotencyNew:
		return "new"
	case IdempotencyReplay:
		return "replay"
	case IdempotencyMismatch:
		return "mismatch"
	case IdempotencyInFlight:
		return "in_flight"
	case IdempotencyTask:
		return "task"
	}
	return "unknown"
}

// IdempotencyKeyBeginParams are the params of Store.IdempotencyKeyBegin.
type IdempotencyKeyBeginParams struct {
	// ClientID is the client. Required.
	ClientID string
	// Key is the key. Required.
	Key string
	// RequestDigest is the digest of the canonical request. Required.
	RequestDigest []byte
	// ExpiresAt is when a new key is forgotten; stored truncated to the
	// millisecond, in UTC. Required.
	ExpiresAt time.Time
	// Now decides whether a stored key has expired. Defaults to the current
	// time.
	Now time.Time
}

// IdempotencyKeyBeginResult is the answer of Store.IdempotencyKeyBegin.
type IdempotencyKeyBeginResult struct {
	// Outcome says what the caller must do.
	Outcome IdempotencyOutcome
	// Key is the stored key as it is after the call.
	Key *IdempotencyKey
}

// IdempotencyKeyCompleteParams are the params of
// Store.IdempotencyKeyComplete.
type IdempotencyKeyCompleteParams struct {
	// ClientID is the client. Required.
	ClientID string
	// Key is the key. Required.
	Key string
	// StatusCode is the HTTP status to replay. Required.
	StatusCode int
	// Body is the body to replay. Defaults to empty.
	Body []byte
}

// IdempotencyKeyRef names an in-flight idempotency key of a client.
type IdempotencyKeyRef struct {
	// ClientID is the client. Required.
	ClientID string
	// Key is the key. Required.
	Key string
}

// IdempotencyKeyReleaseParams are the params of Store.IdempotencyKeyRelease.
type IdempotencyKeyReleaseParams struct {
	// ClientID is the client. Required.
	ClientID string
	// Key is the key. Required.
	Key string
}
