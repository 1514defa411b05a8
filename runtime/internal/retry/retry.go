package retry

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// Defaults of a retry policy whose fields are zero while it allows more than
// one attempt (the values Temporal uses).
const (
	DefaultInitialInterval    = time.Second
	DefaultBackoffCoefficient = 2.0
	// DefaultMaximumIntervalFactor times the initial interval is the
	// default maximum interval.
	DefaultMaximumIntervalFactor = 100
	// Jitter is the spread of a backoff: each wait is drawn uniformly
	// from ±20% around the exponential value, so tasks that failed together
	// do not retry together.
	Jitter = 0.2
)

// Backoff returns the wait before the attempt after attempt (1 for the wait
// after the first attempt): initial × coefficient^(attempt−1), capped at the
// maximum interval, with ±20% jitter that never passes the cap.
func Backoff(p store.RetryPolicy, attempt int) time.Duration {
	initial := p.InitialInterval
	if initial <= 0 {
		initial = DefaultInitialInterval
	}
	coef := p.BackoffCoefficient
	if coef < 1 {
		coef = DefaultBackoffCoefficient
	}
	maxInterval := p.MaximumInterval
	if maxInterval <= 0 {
		maxInterval = initial * DefaultMaximumIntervalFactor
	}
	d := float64(initial) * math.Pow(coef, float64(max(attempt-1, 0)))
	d = min(d, float64(maxInterval))
	d *= 1 - Jitter + 2*Jitter*rand.Float64()
	return time.Duration(min(d, float64(maxInterval)))
}

// Next returns when the next attempt of a task that failed attempt
// may start, and false when the policy allows no more attempts or the next
// one would start at or after the total deadline (zero: none).
// MaximumAttempts 0 means one attempt, as in store.RetryPolicy.
func Next(p store.RetryPolicy, attempt int, now, deadline time.Time) (time.Time, bool) {
	if attempt >= max(p.MaximumAttempts, 1) {
		return time.Time{}, false
	}
	at := now.Add(Backoff(p, attempt))
	if !deadline.IsZero() && !at.Before(deadline) {
		return time.Time{}, false
	}
	return at, true
}

// TotalDeadline returns the time by which a task must finish, across all its
// attempts, or the zero time when its policy sets no total timeout.
func TotalDeadline(t *store.Task) time.Time {
	if t.Retry.TotalTimeout <= 0 {
		return time.Time{}
	}
	return t.CreatedAt.Add(t.Retry.TotalTimeout)
}

// NonRetryableType reports whether the policy lists typ as never retried.
func NonRetryableType(p store.RetryPolicy, typ string) bool {
	return typ != "" && slices.Contains(p.NonRetryableErrorTypes, typ)
}

// RetryableCode reports whether a failed call with this code may be retried.
// As in Temporal, every failure may be retried by default (a trap, a
// timeout, running out of memory, a failure of the host); the exceptions
// fail every attempt the same way: a missing module or function, an invalid
// module, a bad request or payload, a cancel, a nondeterministic workflow.
func RetryableCode(c fault.Code) bool {
	switch c {
	case fault.ModuleNotFound, fault.FunctionNotFound, fault.ModuleInvalid, fault.Invalid,
		fault.Cancelled, fault.Nondeterminism, fault.PayloadTooLarge:
		return false
	}
	return !isCodecCode(c)
}

// isCodecCode reports whether c is one of the codec's codes: a payload that
// is bad once is bad on every attempt.
func isCodecCode(c fault.Code) bool {
	switch codec.Code(c) {
	case codec.CodeUnsupportedPayloadCodec, codec.CodeUnsupportedPayloadSchema, codec.CodeInvalidPayloadFraming,
		codec.CodeInvalidPayloadEnvelope, codec.CodeInvalidMapKey, codec.CodeIntegerOverflow,
		codec.CodeNonFiniteFloat, codec.CodePayloadLimit, codec.CodeInvalidProjection:
		return true
	}
	return false
}

// Check validates a retry policy from a request: fault.Invalid naming
// the field at fault.
func Check(p *store.RetryPolicy) error {
	switch {
	case p.InitialInterval < 0:
		return fault.ParamErrorf("retry.initial_interval_ms", "must not be negative")
	case p.MaximumInterval < 0:
		return fault.ParamErrorf("retry.maximum_interval_ms", "must not be negative")
	case p.BackoffCoefficient != 0 && (p.BackoffCoefficient < 1 || math.IsNaN(p.BackoffCoefficient) || math.IsInf(p.BackoffCoefficient, 0)):
		return fault.ParamErrorf("retry.backoff_coefficient", "must be at least 1")
	case p.MaximumAttempts < 0:
		return fault.ParamErrorf("retry.maximum_attempts", "must not be negative")
	case p.TotalTimeout < 0:
		return fault.ParamErrorf("retry.total_timeout_ms", "must not be negative")
	case p.MaximumInterval > 0 && p.InitialInterval > p.MaximumInterval:
		return fault.ParamErrorf("retry.maximum_interval_ms", "must not be below the initial interval")
	}
	return nil
}
