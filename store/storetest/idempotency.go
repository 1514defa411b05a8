package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testIdempotency(t *testing.T, newStore func(testing.TB) store.Store) {
	begin := func(tb testing.TB, s store.Store, client, key, digest string) *store.IdempotencyKeyBeginResult {
		tb.Helper()
		res, err := s.IdempotencyKeyBegin(tb.Context(), &store.IdempotencyKeyBeginParams{
			ClientID: client, Key: key, RequestDigest: hash(digest), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(tb, err)
		return res
	}

	t.Run("ExactlyOneNewUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const n = 50
		results := make([]*store.IdempotencyKeyBeginResult, n)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := s.IdempotencyKeyBegin(t.Context(), &store.IdempotencyKeyBeginParams{
					ClientID: "cli_a", Key: "same", RequestDigest: hash("req"), ExpiresAt: time.Now().Add(time.Hour),
				})
				if err == nil {
					results[i] = res
				}
			}()
		}
		close(start)
		wg.Wait()
		count := map[store.IdempotencyOutcome]int{}
		for _, r := range results {
			require.NotNil(t, r)
			count[r.Outcome]++
		}
		require.Equal(t, map[store.IdempotencyOutcome]int{store.IdempotencyNew: 1, store.IdempotencyInFlight: n - 1}, count)
	})

	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		first := begin(t, s, "cli_a", "k", "req")
		require.Equal(t, store.IdempotencyNew, first.Outcome)
		require.Equal(t, store.IdempotencyInFlightState, first.Key.State)
		require.Equal(t, store.IdempotencyInFlight, begin(t, s, "cli_a", "k", "req").Outcome)
		require.Equal(t, store.IdempotencyMismatch, begin(t, s, "cli_a", "k", "other").Outcome)
		require.Equal(t, store.IdempotencyNew, begin(t, s, "cli_b", "k", "req").Outcome, "keys are per client")

		require.NoError(t, s.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{
			ClientID: "cli_a", Key: "k", StatusCode: 202, Body: []byte(`{"id":"task_1"}`),
		}))
		replay := begin(t, s, "cli_a", "k", "req")
		require.Equal(t, store.IdempotencyReplay, replay.Outcome)
		require.Equal(t, 202, replay.Key.StatusCode)
		require.Equal(t, []byte(`{"id":"task_1"}`), replay.Key.Body)
		require.Equal(t, store.IdempotencyDoneState, replay.Key.State)
		mismatch := begin(t, s, "cli_a", "k", "other")
		require.Equal(t, store.IdempotencyMismatch, mismatch.Outcome)

		err := s.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 500})
		require.ErrorIs(t, err, store.ErrNotFound, "a done key cannot be completed again")
		require.ErrorIs(t, s.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}), store.ErrNotFound, "a done key cannot be released")
		require.Equal(t, 202, begin(t, s, "cli_a", "k", "req").Key.StatusCode)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		require.Equal(t, store.IdempotencyNew, begin(t, s, "cli_a", "k", "req").Outcome)
		require.NoError(t, s.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}))
		require.ErrorIs(t, s.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}), store.ErrNotFound)
		require.Equal(t, store.IdempotencyNew, begin(t, s, "cli_a", "k", "other").Outcome, "a released key is free")
	})

	t.Run("ExpiredKeyIsFree", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		now := time.Now()
		_, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "k",
			RequestDigest: hash("req"), ExpiresAt: now.Add(time.Minute),
		})
		require.NoError(t, err)
		res, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "k",
			RequestDigest: hash("other"), ExpiresAt: now.Add(time.Hour), Now: now.Add(2 * time.Minute),
		})
		require.NoError(t, err)
		require.Equal(t, store.IdempotencyNew, res.Outcome)
		require.Equal(t, hash("other"), res.Key.RequestDigest)
	})

	t.Run("CompletedWithTaskInsert", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		require.Equal(t, store.IdempotencyNew, begin(t, s, "cli_a", "k", "req").Outcome)
		id := store.NewID(store.TaskIDPrefix)
		body := []byte(`{"id":"` + id + `"}`)
		MustInsertTask(t, s, &store.TaskInsertParams{
			ID: id, OwnerClientID: "cli_a",
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 202, Body: body},
		})
		replay := begin(t, s, "cli_a", "k", "req")
		require.Equal(t, store.IdempotencyReplay, replay.Outcome)
		require.Equal(t, body, replay.Key.Body)

		// A key that is not in flight voids the whole insert.
		_, err := s.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "m", ModuleDigest: Digest, Function: "f",
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "nope", StatusCode: 202},
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		list, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("BadParams", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.IdempotencyKeyBegin(t.Context(), &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k"})
		require.ErrorIs(t, err, store.ErrInvalid)
		err = s.IdempotencyKeyComplete(t.Context(), &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k"})
		require.ErrorIs(t, err, store.ErrInvalid)
	})
}
