package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The count of pending signals follows the signals appended and the runs
// that commit, and a run older than what the count reflects changes
// nothing.
func TestPendingSignalsSettle(t *testing.T) {
	var ps pendingSignals
	ps.settle(10, 2, 200)
	ps.after = append(ps.after, signalRecord{seq: 11, size: 50}, signalRecord{seq: 12, size: 70})
	n, b := ps.totals()
	require.Equal(t, 4, n)
	require.Equal(t, int64(320), b)

	// A run that read up to 11 consumed everything it saw; 12 is still
	// pending on top.
	ps.settle(11, 0, 0)
	n, b = ps.totals()
	require.Equal(t, 1, n)
	require.Equal(t, int64(70), b)

	// A stale run (it read up to 10) is ignored.
	ps.settle(10, 5, 500)
	n, b = ps.totals()
	require.Equal(t, 1, n)
	require.Equal(t, int64(70), b)
}
