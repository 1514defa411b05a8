package journal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The count of pending signals follows the signals appended and the runs
// that commit, and a run older than what the count reflects changes
// nothing.
func TestPendingSignalsSettle(t *testing.T) {
	var ps Pending
	ps.settle(10, 2, 200)
	ps.Appended(11, 50)
	ps.Appended(12, 70)
	n, b := ps.Totals()
	require.Equal(t, 4, n)
	require.Equal(t, int64(320), b)

	// A run that read up to 11 consumed everything it saw; 12 is still
	// pending on top.
	ps.settle(11, 0, 0)
	n, b = ps.Totals()
	require.Equal(t, 1, n)
	require.Equal(t, int64(70), b)

	// A stale run (it read up to 10) is ignored.
	ps.settle(10, 5, 500)
	n, b = ps.Totals()
	require.Equal(t, 1, n)
	require.Equal(t, int64(70), b)
}
