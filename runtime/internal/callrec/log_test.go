package callrec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/journal"
)

// TestIsLogLine: the count of dropped lines is the payload with a
// "dropped" number; every other payload of a task.log event is a line.
func TestIsLogLine(t *testing.T) {
	t.Parallel()
	var l Log
	l.Add("info", "dropped", time.Unix(0, 0))
	l.Add("info", `{"dropped": 3}`, time.Unix(0, 0))
	l.dropped = 7
	l.CountDropped()
	require.Len(t, l.pending, 3)
	require.True(t, journal.IsLogLine(l.pending[0].Payload))
	require.True(t, journal.IsLogLine(l.pending[1].Payload))
	require.False(t, journal.IsLogLine(l.pending[2].Payload), "%s", l.pending[2].Payload)
	require.True(t, journal.IsLogLine([]byte(`{"level":"info","message":"x","time":"2026-01-01T00:00:00Z"}`)))
}
