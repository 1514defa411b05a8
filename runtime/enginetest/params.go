package enginetest

import (
	"time"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
)

// runtimeParams is the engine's task creation params.
type runtimeParams = runtime.TaskCreateParams

// fastRetry is a policy of n attempts with millisecond backoffs.
func fastRetry(n int) *store.RetryPolicy {
	return &store.RetryPolicy{
		InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1.5,
		MaximumInterval: 50 * time.Millisecond, MaximumAttempts: n,
	}
}
