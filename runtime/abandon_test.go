package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest"
)

// TestWorkflowAbandonsActivities checks that the activities a workflow
// still had running or queued are cancelled once its run ends it: nothing
// awaits them any more.
func TestWorkflowAbandonsActivities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		run    guestWorkflow
		status store.Status
	}{
		{
			name: "Completed",
			run: func(w *wf, in codec.Value) (codec.Value, error) {
				w.activity("block", in) // never awaited
				return codec.String("done"), nil
			},
			status: store.StatusCompleted,
		},
		{
			name: "Failed",
			run: func(w *wf, in codec.Value) (codec.Value, error) {
				w.activity("block", in)
				_, err := w.get(w.activity("fail", codec.String("first")))
				return codec.Null(), err
			},
			status: store.StatusFailed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, entered, release := blockingGuest(t)
			g.workflows["abandon"] = tc.run
			e, b := wfSetup(t, g, nil)
			task := start(t, e, "abandon", codec.Long(1), "")
			done := finishedIn(t, b.db, task.ID)
			require.Equal(t, tc.status, done.Status, "%+v", done.Error)

			children := childrenOf(t, b.db, task.ID)
			var blocked *store.Task
			for _, c := range children {
				if c.Function == "block" {
					blocked = c
				}
			}
			require.NotNil(t, blocked)
			// The cancel follows the workflow's end: wait for it before the
			// activity may return.
			var cur *store.Task
			require.Eventually(t, func() bool {
				var err error
				cur, err = b.db.TaskGet(t.Context(), blocked.ID)
				require.NoError(t, err)
				return cur.Status == store.StatusCancelling || cur.Status == store.StatusCancelled
			}, 10*time.Second, time.Millisecond, "the abandoned activity is never cancelled")
			if cur.Status == store.StatusCancelling {
				recv(t, entered, "a cancelling activity is one that started")
			}
			release()
			ended := finishedIn(t, b.db, blocked.ID)
			require.Equal(t, store.StatusCancelled, ended.Status, "the abandoned activity is cancelled, not completed")
			storetest.MustCheckLog(t, b.db, blocked.ID)
			storetest.MustCheckLog(t, b.db, task.ID)
			left, err := b.db.TaskList(t.Context(), &store.TaskListParams{Statuses: []store.Status{
				store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling,
			}})
			require.NoError(t, err)
			require.Empty(t, left, "no task is left unfinished")
		})
	}
}
