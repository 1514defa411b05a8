package enginetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
)

// retention is the retention period of the retention test.
const retention = 500 * time.Millisecond

// testRetention: the retention loop purges the tasks finished longer ago
// than the period, with their events and responses, and never an
// unfinished task, however old.
func testRetention(t *testing.T, h *Harness) {
	v := newEnv(t, h, func(c *runtime.Config) {
		c.Retention = retention
		c.RetentionInterval = 50 * time.Millisecond
	})
	running := v.create(modActivities, "sleep", long, nil)
	waiting := v.create(modWorkflows, "greet", `"kim"`, nil) // waits for its signal, for an hour
	finished := []*store.Task{
		v.create(modActivities, "echo", `1`, nil),
		v.create(modActivities, "fail", `{"type":"x","message":"y","non_retryable":true}`, nil),
	}
	for _, task := range finished {
		done := v.wait(task.ID)
		v.checkLog(done)
	}
	v.waitEvent(running.ID, store.EventResponseInProgress)

	for _, task := range finished {
		poll(t, "finished task "+task.ID+" is purged", func() bool {
			_, err := v.db.TaskGet(t.Context(), task.ID)
			if err != nil {
				require.True(t, isNotFound(err), "%v", err)
				return true
			}
			return false
		})
		evs, err := v.db.EventList(t.Context(), &store.EventListParams{TaskID: task.ID, Limit: 10})
		if err == nil {
			require.Empty(t, evs, "its events went with it")
		} else {
			require.True(t, isNotFound(err), "%v", err)
		}
		_, err = v.db.ResponseGet(t.Context(), task.ResponseID())
		require.True(t, isNotFound(err), "its response went with it: %v", err)
	}

	// Unfinished tasks older than the period stay, whole.
	time.Sleep(retention + 200*time.Millisecond)
	for _, task := range []*store.Task{running, waiting} {
		cur, err := v.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err, "unfinished task %s is kept", task.ID)
		require.False(t, cur.Status.IsTerminal())
		require.Len(t, v.events(task.ID), int(cur.LastSeq)+1)
		_, err = v.e.TaskCancel(t.Context(), admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, v.wait(task.ID).Status)
	}
}
