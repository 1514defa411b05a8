package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func TestTaskLog(t *testing.T) {
	t.Parallel()

	// logging returns a call that logs n lines and echoes its input.
	logging := func(n int) func(ctx context.Context, call *Call) (*CallResult, error) {
		return func(ctx context.Context, call *Call) (*CallResult, error) {
			for i := range n {
				call.Log("warn", fmt.Sprintf("line %d", i))
			}
			return echo(ctx, call)
		}
	}
	logEvents := func(evs []*store.Event) []map[string]any {
		var out []map[string]any
		for _, ev := range evs {
			if ev.Type != EventLog {
				continue
			}
			var p map[string]any
			require.NoError(t, json.Unmarshal(ev.Payload, &p))
			out = append(out, p)
		}
		return out
	}

	t.Run("LinesBecomeEvents", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, logging(3), nil)
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		evs := mustEvents(t, e, b.admin, task.ID, -1)
		requireGapless(t, evs, 0)
		logs := logEvents(evs)
		require.Len(t, logs, 3)
		for i, p := range logs {
			require.Equal(t, "warn", p["level"])
			require.Equal(t, fmt.Sprintf("line %d", i), p["message"])
		}
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
	})

	t.Run("FloodIsCapped", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, logging(MaxLogEvents+250), nil)
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		evs := mustEvents(t, e, b.admin, task.ID, -1)
		requireGapless(t, evs, 0)
		logs := logEvents(evs)
		require.Len(t, logs, MaxLogEvents+1, "the capped lines and one count of the dropped ones")
		require.Equal(t, "line 999", logs[MaxLogEvents-1]["message"])
		require.InDelta(t, 250, logs[MaxLogEvents]["dropped"], 0)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
	})
}
