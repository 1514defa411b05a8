package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testWorkflow covers what workflows need beyond single tasks: child
// activity tasks journaled on the parent in the same transaction, and the
// parent woken when a child finishes.
func testWorkflow(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("ChildTasksJournalOnParent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		parent := MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, OnRestart: store.OnRestartResume})
		child := MustInsertTask(t, s, &store.TaskInsertParams{
			ParentTaskID: parent.ID,
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled", Payload: json.RawMessage(`{"step":0}`)}},
		})
		require.Equal(t, parent.ID, child.ParentTaskID)
		// The workflow waits, holding nothing: queued until woken.
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: parent.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusQueued, NotBefore: time.Now().Add(24 * time.Hour), Reason: "waiting",
		})

		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "only the child is eligible")
		require.Equal(t, child.ID, claimed[0].ID)
		MustTransition(t, s, &store.TaskTransitionParams{ID: child.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: child.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: Frame("built"),
			ParentEvents: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(`{"step":0}`)}},
			WakeParent:   true,
		})
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "the finished child woke the parent")
		require.Equal(t, parent.ID, claimed[0].ID)

		MustCheckLog(t, s, child.ID)
		MustCheckLog(t, s, parent.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress activity.scheduled task.status_changed activity.completed task.status_changed",
			types(MustEvents(t, s, parent.ID)))
		children, err := s.TaskList(ctx, &store.TaskListParams{ParentTaskID: parent.ID})
		require.NoError(t, err)
		require.Len(t, children, 1)
		require.Equal(t, child.ID, children[0].ID)
	})

	t.Run("FinishedParent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		parent := MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow})
		child := MustRunning(t, s, &store.TaskInsertParams{ParentTaskID: parent.ID})
		_, _, err := s.TaskCancel(ctx, parent.ID)
		require.NoError(t, err)
		MustTransition(t, s, &store.TaskTransitionParams{ID: parent.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})

		_, err = s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: Digest, Function: "f", ParentTaskID: parent.ID,
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled"}},
		})
		require.ErrorIs(t, err, store.ErrTaskFinished, "a finished workflow schedules nothing")
		_, err = s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: Digest, Function: "f", ParentTaskID: store.NewID(store.TaskIDPrefix),
			ParentEvents: []store.EventDraft{{Type: "activity.scheduled"}},
		})
		require.ErrorIs(t, err, store.ErrNotFound)

		// A child finishing after its parent finishes alone: a finished log
		// never grows.
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: child.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			ParentEvents: []store.EventDraft{{Type: "activity.completed"}}, WakeParent: true,
		})
		MustCheckLog(t, s, parent.ID)
		MustCheckLog(t, s, child.ID)
	})
}
