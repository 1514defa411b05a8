package runtime

import "github.com/weft-run/weft/runtime/internal/retry"

// Defaults of a retry policy whose fields are zero while it allows more than
// one attempt (the values Temporal uses).
const (
	DefaultInitialInterval    = retry.DefaultInitialInterval
	DefaultBackoffCoefficient = retry.DefaultBackoffCoefficient
	// DefaultMaximumIntervalFactor times the initial interval is the
	// default maximum interval.
	DefaultMaximumIntervalFactor = retry.DefaultMaximumIntervalFactor
)
