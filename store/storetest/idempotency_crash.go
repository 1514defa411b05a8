package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testIdempotencyTask checks a key bound to the task its request created:
// the bind commits with the task, and from then on neither release nor
// recovery frees the key, so a retry finds the task and never makes a
// second one.
func testIdempotencyTask(t *testing.T, newStore func(testing.TB) store.Store) {
	begin := func(tb testing.TB, s store.Store, key, digest string) *store.IdempotencyKeyBeginResult {
		tb.Helper()
		res, err := s.IdempotencyKeyBegin(tb.Context(), &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: key, RequestDigest: hash(digest), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(tb, err)
		return res
	}

	t.Run("BoundKeyOutlivesReleaseAndRecovery", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		require.Equal(t, store.IdempotencyNew, begin(t, s, "k", "req").Outcome)
		require.Equal(t, store.IdempotencyNew, begin(t, s, "free", "req").Outcome)
		task := MustInsertTask(t, s, &store.TaskInsertParams{
			OwnerClientID:   "cli_a",
			IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"},
		})

		got := begin(t, s, "k", "req")
		require.Equal(t, store.IdempotencyTask, got.Outcome)
		require.Equal(t, task.ID, got.Key.TaskID)
		require.Equal(t, store.IdempotencyMismatch, begin(t, s, "k", "other").Outcome)

		require.NoError(t, s.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}), "releasing a bound key keeps it")
		require.Equal(t, store.IdempotencyTask, begin(t, s, "k", "req").Outcome)

		res, err := s.TaskRecover(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, res.IdempotencyKeysReleased, "only the key bound to no task")
		got = begin(t, s, "k", "req")
		require.Equal(t, store.IdempotencyTask, got.Outcome, "recovery keeps a bound key")
		require.Equal(t, task.ID, got.Key.TaskID)
		require.Equal(t, store.IdempotencyNew, begin(t, s, "free", "req").Outcome)

		require.NoError(t, s.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{
			ClientID: "cli_a", Key: "k", StatusCode: 200, Body: []byte(`{"id":"x"}`),
		}))
		got = begin(t, s, "k", "req")
		require.Equal(t, store.IdempotencyReplay, got.Outcome)
		require.Equal(t, []byte(`{"id":"x"}`), got.Key.Body)
	})

	t.Run("BindVoidsInsertWhenKeyNotInFlight", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		_, err := s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: Digest, Function: "f",
			IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "nope"},
		})
		require.ErrorIs(t, err, store.ErrNotFound)

		require.Equal(t, store.IdempotencyNew, begin(t, s, "k", "req").Outcome)
		MustInsertTask(t, s, &store.TaskInsertParams{IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"}})
		_, err = s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: Digest, Function: "f",
			IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"},
		})
		require.ErrorIs(t, err, store.ErrNotFound, "a key binds one task")
		list, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("CompletedWithEventAppend", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a"})
		require.Equal(t, store.IdempotencyNew, begin(t, s, "sig", "req").Outcome)
		draft := []store.EventDraft{{Type: "signal.received", Payload: []byte(`{"name":"go"}`)}}
		_, err := s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: task.ID, Events: draft,
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "sig", StatusCode: 202, Body: []byte(`{"ok":1}`)},
		})
		require.NoError(t, err)
		got := begin(t, s, "sig", "req")
		require.Equal(t, store.IdempotencyReplay, got.Outcome)
		require.Equal(t, []byte(`{"ok":1}`), got.Key.Body)

		// A key that is not in flight voids the append.
		_, err = s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: task.ID, Events: draft,
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "sig", StatusCode: 202},
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		events, err := s.EventList(ctx, &store.EventListParams{TaskID: task.ID})
		require.NoError(t, err)
		require.Len(t, events, 2, "response.created and one signal")
	})

	t.Run("BindWithStart", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.Equal(t, store.IdempotencyNew, begin(t, s, "k", "req").Outcome)
		task := MustInsertTask(t, s, &store.TaskInsertParams{
			Start:           true,
			IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"},
		})
		require.Equal(t, store.StatusRunning, task.Status)
		got := begin(t, s, "k", "req")
		require.Equal(t, store.IdempotencyTask, got.Outcome)
		require.Equal(t, task.ID, got.Key.TaskID)
	})
}
