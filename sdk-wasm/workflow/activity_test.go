package workflow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

func TestOptionsValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   ActivityOptions
		want codec.Value
	}{
		{name: "Defaults", in: ActivityOptions{Module: "m"}, want: codec.Null()},
		{name: "Timeout", in: ActivityOptions{StartToCloseTimeout: 1500 * time.Millisecond}, want: codec.Map(codec.Entry{Key: "timeout_ms", Value: codec.Long(1500)})},
		{name: "Retry", in: ActivityOptions{RetryPolicy: &RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5, NonRetryableErrorTypes: []string{"bad"},
		}}, want: codec.Map(codec.Entry{Key: "retry", Value: codec.Map(
			codec.Entry{Key: "max_attempts", Value: codec.Long(5)},
			codec.Entry{Key: "initial_interval_ms", Value: codec.Long(1000)},
			codec.Entry{Key: "backoff_coefficient", Value: codec.Double(2)},
			codec.Entry{Key: "max_interval_ms", Value: codec.Long(60000)},
			codec.Entry{Key: "non_retryable_error_types", Value: codec.List(codec.String("bad"))},
		)})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, codec.Equal(tc.want, optionsValue(tc.in)))
		})
	}
}

func TestWithActivityOptions(t *testing.T) {
	t.Parallel()
	base := Context(&state{info: Info{FunctionName: "wf"}})
	derived := WithActivityOptions(base, ActivityOptions{Module: "tools"})
	require.Equal(t, "tools", derived.state().opts.Module)
	require.Empty(t, base.state().opts.Module, "the parent context is unchanged")
	require.Equal(t, Info{FunctionName: "wf"}, GetInfo(derived))
}

func TestFailedFuture(t *testing.T) {
	t.Parallel()
	f := ExecuteActivity(&state{}, "x", make(chan int))
	require.ErrorContains(t, f.Get(&state{}, nil), "unsupported type")
	require.Equal(t, 0, AwaitAny(&state{}, f), "a future that failed before scheduling counts as resolved")
	AwaitAll(&state{}, f)
}
