package workflowcases

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest/internal/check"
)

// Workflow covers what workflows need beyond single tasks: child
// activity tasks journaled on the parent in the same transaction, and the
// parent woken when a child finishes.
func Workflow(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("ChildTasksJournalOnParent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		parent := check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, OnRestart: store.OnRestartResume})
		child := check.MustInsertTask(t, s, &store.TaskInsertParams{
			ParentTaskID: parent.ID,
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled", Payload: json.RawMessage(`{"step":0}`)}},
		})
		require.Equal(t, parent.ID, child.ParentTaskID)
		// The workflow waits, holding nothing: queued until woken.
		check.MustTransition(t, s, &store.TaskTransitionParams{
			ID: parent.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusQueued, NotBefore: time.Now().Add(24 * time.Hour), Reason: "waiting",
		})

		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "only the child is eligible")
		require.Equal(t, child.ID, claimed[0].ID)
		check.MustTransition(t, s, &store.TaskTransitionParams{ID: child.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		check.MustTransition(t, s, &store.TaskTransitionParams{
			ID: child.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: check.Frame("built"),
			ParentEvents: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(`{"step":0}`)}},
			WakeParent:   true,
		})
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "the finished child woke the parent")
		require.Equal(t, parent.ID, claimed[0].ID)

		check.MustCheckLog(t, s, child.ID)
		check.MustCheckLog(t, s, parent.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress activity.scheduled task.status_changed activity.completed task.status_changed",
			check.Types(check.MustEvents(t, s, parent.ID)))
		children, err := s.TaskList(ctx, &store.TaskListParams{ParentTaskID: parent.ID})
		require.NoError(t, err)
		require.Len(t, children, 1)
		require.Equal(t, child.ID, children[0].ID)
	})

	t.Run("FinishedParent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		parent := check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow})
		child := check.MustRunning(t, s, &store.TaskInsertParams{ParentTaskID: parent.ID})
		_, _, err := s.TaskCancel(ctx, parent.ID)
		require.NoError(t, err)
		check.MustTransition(t, s, &store.TaskTransitionParams{ID: parent.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})

		_, err = s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: check.Digest, Function: "f", ParentTaskID: parent.ID,
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled"}},
		})
		require.ErrorIs(t, err, store.ErrTaskFinished, "a finished workflow schedules nothing")
		_, err = s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: check.Digest, Function: "f", ParentTaskID: store.NewID(store.TaskIDPrefix),
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled"}},
		})
		require.ErrorIs(t, err, store.ErrNotFound)

		// A child finishing after its parent finishes alone: a finished log
		// never grows.
		check.MustTransition(t, s, &store.TaskTransitionParams{
			ID: child.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			ParentEvents: []store.EventDraft{{Type: "activity.completed"}}, WakeParent: true,
		})
		check.MustCheckLog(t, s, parent.ID)
		check.MustCheckLog(t, s, child.ID)
	})
}
