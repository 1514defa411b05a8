package loadbench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFanOut: every index is called once, failures are counted and left
// out of the latencies, and the first error is kept.
func TestFanOut(t *testing.T) {
	const n = 200
	var calls [n]atomic.Int32
	boom := errors.New("boom")
	lat, failed, elapsed, first := fanOut(context.Background(), n, 7, func(i int) error {
		calls[i].Add(1)
		time.Sleep(time.Millisecond)
		if i%10 == 3 {
			return boom
		}
		return nil
	})
	for i := range calls {
		require.EqualValues(t, 1, calls[i].Load(), "index %d", i)
		if i%10 == 3 {
			require.Zero(t, lat[i], "a failed call has no latency")
		} else {
			require.GreaterOrEqual(t, lat[i], time.Millisecond)
		}
	}
	require.Equal(t, n/10, failed)
	require.ErrorIs(t, first, boom)
	require.Positive(t, elapsed)

	// A cancelled context stops taking indices.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	_, failed, _, first = fanOut(ctx, n, 3, func(int) error { ran.Add(1); return nil })
	require.Zero(t, ran.Load())
	require.Zero(t, failed)
	require.NoError(t, first)
}
