package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testRetention(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("PurgesFinishedOnly", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		var unfinished []*store.Task
		for _, st := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling} {
			unfinished = append(unfinished, MustStatus(t, s, st, store.OnRestartFail))
		}
		// An unfinished task with a log as long as any finished one's.
		_, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: unfinished[2].ID, Events: []store.EventDraft{{Type: store.EventLog}, {Type: store.EventLog}}})
		require.NoError(t, err)
		var finished []*store.Task
		for i := range 5 {
			f := MustRunning(t, s, nil)
			switch i % 3 {
			case 0:
				f = MustTransition(t, s, &store.TaskTransitionParams{ID: f.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
			case 1:
				f = MustTransition(t, s, &store.TaskTransitionParams{ID: f.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed, Error: &store.TaskError{Code: "e"}})
			default:
				f, _, err = s.TaskCancel(ctx, f.ID)
				require.NoError(t, err)
				f = MustTransition(t, s, &store.TaskTransitionParams{ID: f.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})
			}
			finished = append(finished, f)
		}

		// A cutoff before every finish purges nothing.
		res, err := s.RetentionPurge(ctx, &store.RetentionPurgeParams{OlderThan: finished[0].FinishedAt, Batch: 2})
		require.NoError(t, err)
		require.Zero(t, res.Tasks)

		// A cutoff far in the future purges every finished task, in batches,
		// and not one unfinished task.
		res, err = s.RetentionPurge(ctx, &store.RetentionPurgeParams{OlderThan: time.Now().Add(1000 * time.Hour), Batch: 2})
		require.NoError(t, err)
		require.Equal(t, 5, res.Tasks)
		require.Equal(t, 5, res.Responses)
		require.Equal(t, 5*4+1, res.Events) // created, loading, running, terminal (+ cancelling once)
		require.GreaterOrEqual(t, res.Batches, 3, "batches of 2")
		for _, f := range finished {
			_, err := s.TaskGet(ctx, f.ID)
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = s.EventList(ctx, &store.EventListParams{TaskID: f.ID})
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = s.ResponseGet(ctx, f.ResponseID())
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		for _, u := range unfinished {
			got := MustCheckLog(t, s, u.ID)
			require.Equal(t, u.Status, got.Status)
		}
		counts, err := s.TaskCount(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, counts[store.StatusQueued])
		require.Zero(t, counts[store.StatusCompleted]+counts[store.StatusFailed]+counts[store.StatusCancelled])
	})

	t.Run("KeepsRecentlyFinished", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		old := MustInsertTask(t, s, nil)
		old, _, err := s.TaskCancel(ctx, old.ID)
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
		cutoff := time.Now()
		time.Sleep(5 * time.Millisecond)
		recent := MustInsertTask(t, s, nil)
		_, _, err = s.TaskCancel(ctx, recent.ID)
		require.NoError(t, err)
		res, err := s.RetentionPurge(ctx, &store.RetentionPurgeParams{OlderThan: cutoff, Batch: 0})
		require.NoError(t, err)
		require.Equal(t, 1, res.Tasks)
		_, err = s.TaskGet(ctx, old.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		MustCheckLog(t, s, recent.ID)
	})

	t.Run("ExpiredIdempotencyKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		begin := func(key string, expires time.Time) {
			_, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
				ClientID: "cli_a", Key: key,
				RequestDigest: hash(key), ExpiresAt: expires, Now: expires.Add(-time.Hour),
			})
			require.NoError(t, err)
		}
		past := time.Now().Add(-time.Minute)
		for _, k := range []string{"old1", "old2", "old3"} {
			begin(k, past)
		}
		begin("fresh", time.Now().Add(time.Hour))
		res, err := s.RetentionPurge(ctx, &store.RetentionPurgeParams{OlderThan: time.Now().Add(-time.Hour), Batch: 2})
		require.NoError(t, err)
		require.Equal(t, 3, res.IdempotencyKeys)
		got, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "fresh",
			RequestDigest: hash("fresh"), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(t, err)
		require.Equal(t, store.IdempotencyInFlight, got.Outcome, "an unexpired key is kept")
	})
}
