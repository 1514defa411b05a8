package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func TestRetention(t *testing.T) {
	t.Parallel()

	t.Run("PurgesFinishedTasksOnly", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			if call.Function == "work" {
				entered <- struct{}{}
				<-release
			}
			return echo(ctx, call)
		}, func(c *Config) {
			c.Workers = 1
			c.Retention = time.Millisecond
			c.RetentionInterval = time.Hour
			c.RetentionBatch = 2
		})
		var finished []string
		for range 5 {
			finished = append(finished, mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "echo"}).ID).ID)
		}
		running := mustCreate(t, e, TaskCreateParams{Function: "work"})
		<-entered
		queued := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		time.Sleep(20 * time.Millisecond) // the finished tasks age past the period

		res, err := e.purge(t.Context())
		require.NoError(t, err)
		require.Equal(t, 5, res.Tasks)
		require.Equal(t, 5, res.Responses)
		require.Equal(t, 20, res.Events)
		require.GreaterOrEqual(t, res.Batches, 3, "small batches")
		for _, id := range finished {
			_, err := e.TaskGet(t.Context(), b.admin, id)
			require.Equal(t, fault.NotFound, fault.CodeOf(err))
		}
		for _, id := range []string{running.ID, queued.ID} {
			task, err := e.TaskGet(t.Context(), b.admin, id)
			require.NoError(t, err, "an unfinished task is never purged")
			require.False(t, task.Status.IsTerminal())
			evs, err := e.EventList(t.Context(), b.admin, id, -1, 0)
			require.NoError(t, err)
			require.NotEmpty(t, evs)
		}
		close(release)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, running.ID).Status)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, queued.ID).Status)
	})

	t.Run("KeepsTasksWithinThePeriod", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		id := mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "echo"}).ID).ID
		res, err := e.purge(t.Context())
		require.NoError(t, err)
		require.Zero(t, res.Tasks)
		_, err = e.TaskGet(t.Context(), b.admin, id)
		require.NoError(t, err)
		require.Equal(t, store.DefaultRetentionPeriod, e.retention(t.Context()))
	})
}
