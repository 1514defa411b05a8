package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testTaskStart covers TaskInsertParams.Start: the insert, a claim and a
// start in one transaction, for a caller that runs the task at once.
func testTaskStart(t *testing.T, newStore func(testing.TB) store.Store) {
	// statuses returns the status and attempt each status event of a log
	// records, in order.
	statuses := func(tb testing.TB, events []*store.Event) []store.StatusEvent {
		tb.Helper()
		var out []store.StatusEvent
		for _, e := range events {
			if !store.IsStatusEvent(e.Type) || store.IsTerminalEvent(e.Type) {
				continue
			}
			var se store.StatusEvent
			require.NoError(tb, json.Unmarshal(e.Payload, &se), "event %s#%d", e.TaskID, e.Seq)
			out = append(out, se)
		}
		return out
	}

	t.Run("InsertsRunning", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		before := time.Now().Add(-time.Second)
		in := Frame("input")
		task := MustInsertTask(t, s, &store.TaskInsertParams{Input: in, OwnerClientID: "cli_a", Start: true})
		require.Equal(t, store.StatusRunning, task.Status)
		require.Equal(t, 1, task.Attempt)
		require.Equal(t, int64(2), task.LastSeq)
		require.True(t, task.CreatedAt.After(before))
		require.False(t, task.StartedAt.IsZero())
		require.False(t, task.StartedAt.Before(task.CreatedAt))
		require.True(t, task.FinishedAt.IsZero())

		got := MustCheckLog(t, s, task.ID)
		require.Equal(t, task, got, "the returned task is the stored one")
		require.Equal(t, in, got.Input)

		events := MustEvents(t, s, task.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress", types(events))
		for i, e := range events {
			require.Equal(t, int64(i), e.Seq)
		}
		require.Equal(t, []store.StatusEvent{
			{Status: store.StatusQueued},
			{Status: store.StatusLoading, From: store.StatusQueued, Attempt: 1},
			{Status: store.StatusRunning, From: store.StatusLoading, Attempt: 1},
		}, statuses(t, events))

		// It goes on as any running task.
		done := MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusCompleted, Output: Frame("output"),
		})
		require.Equal(t, 1, done.Attempt)
		require.True(t, done.StartedAt.Equal(task.StartedAt))
		MustCheckLog(t, s, task.ID)
		resp, err := s.ResponseGet(ctx, task.ResponseID())
		require.NoError(t, err)
		require.Equal(t, Frame("output"), resp.Output)
	})

	t.Run("NotClaimed", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		started := MustInsertTask(t, s, &store.TaskInsertParams{Start: true})
		queued := MustInsertTask(t, s, nil)
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, queued.ID, claimed[0].ID)
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, claimed)
		got := MustCheckLog(t, s, started.ID)
		require.Equal(t, store.StatusRunning, got.Status)
		require.Equal(t, 1, got.Attempt, "no claim counted a second attempt")
	})

	t.Run("CancelledThroughCancelling", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustInsertTask(t, s, &store.TaskInsertParams{Start: true})
		got, changed, err := s.TaskCancel(t.Context(), task.ID)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, store.StatusCancelling, got.Status, "a started task has a call to stop")
		MustCheckLog(t, s, task.ID)
	})

	t.Run("NotBefore", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		tests := []struct {
			name      string
			notBefore time.Time
			err       error
		}{
			{name: "future", notBefore: time.Now().Add(time.Hour), err: store.ErrInvalid},
			{name: "past", notBefore: time.Now().Add(-time.Hour)},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				id := store.NewID(store.TaskIDPrefix)
				task, err := s.TaskInsert(ctx, &store.TaskInsertParams{
					ID: id, Module: "m", ModuleDigest: Digest, Function: "f",
					NotBefore: tc.notBefore, Start: true,
				})
				if tc.err != nil {
					require.ErrorIs(t, err, tc.err)
					_, err = s.TaskGet(ctx, id)
					require.ErrorIs(t, err, store.ErrNotFound, "the refused insert wrote nothing")
					_, err = s.EventList(ctx, &store.EventListParams{TaskID: id})
					require.ErrorIs(t, err, store.ErrNotFound)
					return
				}
				require.NoError(t, err)
				require.Equal(t, store.StatusRunning, task.Status)
				MustCheckLog(t, s, id)
			})
		}
		list, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, list, 1, "only the task without a later not_before")
	})

	t.Run("CompletesIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		begin := func(key string) *store.IdempotencyKeyBeginResult {
			t.Helper()
			res, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
				ClientID: "cli_a", Key: key, RequestDigest: hash("req"), ExpiresAt: time.Now().Add(time.Hour),
			})
			require.NoError(t, err)
			return res
		}
		require.Equal(t, store.IdempotencyNew, begin("k").Outcome)
		id := store.NewID(store.TaskIDPrefix)
		body := []byte(`{"id":"` + id + `"}`)
		task := MustInsertTask(t, s, &store.TaskInsertParams{
			ID: id, OwnerClientID: "cli_a", Start: true,
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 202, Body: body},
		})
		require.Equal(t, store.StatusRunning, task.Status)
		replay := begin("k")
		require.Equal(t, store.IdempotencyReplay, replay.Outcome)
		require.Equal(t, 202, replay.Key.StatusCode)
		require.Equal(t, body, replay.Key.Body)

		// A key that is not in flight voids the insert and the start.
		other := store.NewID(store.TaskIDPrefix)
		_, err := s.TaskInsert(ctx, &store.TaskInsertParams{
			ID: other, Module: "m", ModuleDigest: Digest, Function: "f", Start: true,
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "nope", StatusCode: 202},
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.TaskGet(ctx, other)
		require.ErrorIs(t, err, store.ErrNotFound)
		list, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, id, list[0].ID)
	})
}
