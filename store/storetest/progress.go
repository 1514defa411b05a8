package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testProgress covers EventAppendParams.Progress: the task's progress
// changes with its task.progress event, in one transaction, and survives
// reads from the cache and from the database alike.
func testProgress(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("WrittenWithItsEvent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustRunning(t, s, nil)
		require.Nil(t, task.Progress, "a new task has no progress")

		for i, msg := range []string{"first", ""} {
			evs, err := s.EventAppend(ctx, &store.EventAppendParams{
				TaskID:   task.ID,
				Events:   []store.EventDraft{{Type: store.EventProgress, Payload: json.RawMessage(`{"done":1,"total":2}`)}},
				Progress: &store.TaskProgress{Done: int64(i + 1), Total: 2, Message: msg},
			})
			require.NoError(t, err)
			got, err := s.TaskGet(ctx, task.ID)
			require.NoError(t, err)
			require.NotNil(t, got.Progress)
			require.Equal(t, int64(i+1), got.Progress.Done)
			require.Equal(t, int64(2), got.Progress.Total)
			require.Equal(t, msg, got.Progress.Message)
			require.True(t, got.Progress.UpdatedAt.Equal(evs[0].CreatedAt), "recorded at the event's time")
			require.Equal(t, evs[0].Seq, got.LastSeq)
		}

		// An append without Progress leaves it alone; so does the end.
		_, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}})
		require.NoError(t, err)
		MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		got, err := s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		require.NotNil(t, got.Progress)
		require.Equal(t, store.TaskProgress{Done: 2, Total: 2, UpdatedAt: got.Progress.UpdatedAt}, *got.Progress)
		list, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, got.Progress, list[0].Progress, "listed tasks carry their progress too")
		MustCheckLog(t, s, task.ID)
	})

	t.Run("RefusedWithItsEvent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustRunning(t, s, nil)
		done := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: done.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed,
			Error: &store.TaskError{Code: "trap", Type: "trap"},
		})
		draft := []store.EventDraft{{Type: store.EventProgress}}
		for _, c := range []struct {
			name string
			p    store.EventAppendParams
			want error
		}{
			{"negative done", store.EventAppendParams{TaskID: task.ID, Events: draft, Progress: &store.TaskProgress{Done: -1}}, store.ErrInvalid},
			{"negative total", store.EventAppendParams{TaskID: task.ID, Events: draft, Progress: &store.TaskProgress{Total: -1}}, store.ErrInvalid},
			{"finished task", store.EventAppendParams{TaskID: done.ID, Events: draft, Progress: &store.TaskProgress{Done: 1}}, store.ErrTaskFinished},
		} {
			_, err := s.EventAppend(ctx, &c.p)
			require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
			got, err := s.TaskGet(ctx, c.p.TaskID)
			require.NoError(t, err)
			require.Nil(t, got.Progress, "%s: the progress stays unset", c.name)
		}
		require.Equal(t, task.LastSeq, MustCheckLog(t, s, task.ID).LastSeq, "no event was appended")
	})
}
