package fault_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	err := &fault.Error{Code: fault.RateLimited, Message: "slow down", Err: fault.RetryAfter(2500 * time.Millisecond)}
	require.Equal(t, 2500*time.Millisecond, fault.RetryAfterOf(err))
	require.Equal(t, 2500*time.Millisecond, fault.RetryAfterOf(fmt.Errorf("pair: %w", err)), "found through wrapping")
	require.Equal(t, fault.RateLimited, fault.CodeOf(err), "the delay does not hide the code")
	require.Equal(t, "retry after 2.5s", fault.RetryAfter(2500*time.Millisecond).Error())
	require.Zero(t, fault.RetryAfterOf(fault.Errorf(fault.Conflict, "no delay")))
	require.Zero(t, fault.RetryAfterOf(context.Canceled))
	require.Zero(t, fault.RetryAfterOf(nil))
}
