package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testTimePrecision checks the time contract: a time given with
// nanoseconds and in another zone is stored and returned truncated to the
// millisecond, in UTC, and a time the store sets itself (a creation, an
// event's commit) is the current time at millisecond precision, in UTC.
func testTimePrecision(t *testing.T, newStore func(testing.TB) store.Store) {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	given := time.Date(2031, 1, 2, 3, 4, 5, 123_456_789, zone)
	want := time.Date(2031, 1, 1, 21, 34, 5, 123_000_000, time.UTC)
	// exact asserts got is want in UTC.
	exact := func(t *testing.T, what string, want, got time.Time) {
		t.Helper()
		require.Same(t, time.UTC, got.Location(), "%s: location", what)
		require.True(t, want.Equal(got), "%s: got %s, want %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	// now asserts got is a millisecond time in UTC between from and to.
	now := func(t *testing.T, what string, from, to, got time.Time) {
		t.Helper()
		require.Same(t, time.UTC, got.Location(), "%s: location", what)
		require.Zero(t, got.Nanosecond()%int(time.Millisecond), "%s: %s has sub-millisecond digits", what, got.Format(time.RFC3339Nano))
		require.False(t, got.Before(from.Truncate(time.Millisecond)), "%s: %s before the call began at %s", what, got, from)
		require.False(t, got.After(to), "%s: %s after the call returned at %s", what, got, to)
	}

	t.Run("Task", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		from := time.Now()
		task := MustInsertTask(t, s, &store.TaskInsertParams{NotBefore: given})
		to := time.Now()
		exact(t, "returned not_before", want, task.NotBefore)
		now(t, "created_at", from, to, task.CreatedAt)
		got, err := s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		exact(t, "stored not_before", want, got.NotBefore)
		exact(t, "stored created_at", task.CreatedAt, got.CreatedAt)
		exact(t, "stored updated_at", task.UpdatedAt, got.UpdatedAt)

		// A retry's not_before, given to a transition, reads back the same way.
		run := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: run.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusQueued, NotBefore: given,
		})
		got, err = s.TaskGet(ctx, run.ID)
		require.NoError(t, err)
		exact(t, "not_before of a retry", want, got.NotBefore)
	})

	t.Run("Event", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		from := time.Now()
		task := MustInsertTask(t, s, nil)
		mid := time.Now()
		appended, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}})
		require.NoError(t, err)
		to := time.Now()
		events := MustEvents(t, s, task.ID)
		require.Len(t, events, 2)
		now(t, "response.created created_at", from, mid, events[0].CreatedAt)
		now(t, "appended created_at", mid, to, events[1].CreatedAt)
		exact(t, "created_at returned by the append", appended[0].CreatedAt, events[1].CreatedAt)
	})

	t.Run("Response", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustRunning(t, s, nil)
		from := time.Now()
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusCompleted, Output: Frame("out"),
		})
		to := time.Now()
		done, err := s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		now(t, "finished_at", from, to, done.FinishedAt)
		resp, err := s.ResponseGet(ctx, task.ResponseID())
		require.NoError(t, err)
		exact(t, "response finished_at", done.FinishedAt, resp.FinishedAt)
		exact(t, "response created_at", done.CreatedAt, resp.CreatedAt)
	})

	t.Run("Client", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		from := time.Now()
		c, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "laptop", TokenHash: hash("precision")})
		require.NoError(t, err)
		mid := time.Now()
		now(t, "client created_at", from, mid, c.CreatedAt)
		revoked, err := s.ClientRevoke(ctx, c.ID)
		require.NoError(t, err)
		now(t, "client revoked_at", mid, time.Now(), revoked.RevokedAt)
		got, err := s.ClientGet(ctx, c.ID)
		require.NoError(t, err)
		exact(t, "stored created_at", c.CreatedAt, got.CreatedAt)
		exact(t, "stored revoked_at", revoked.RevokedAt, got.RevokedAt)

		pr, err := s.PairingInsert(ctx, &store.PairingInsertParams{CodeHash: hash("code"), ExpiresAt: given})
		require.NoError(t, err)
		exact(t, "pairing expires_at", want, pr.ExpiresAt)
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		p := &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", RequestDigest: hash("req"), ExpiresAt: given}
		first, err := s.IdempotencyKeyBegin(ctx, p)
		require.NoError(t, err)
		require.Equal(t, store.IdempotencyNew, first.Outcome)
		exact(t, "returned expires_at", want, first.Key.ExpiresAt)
		again, err := s.IdempotencyKeyBegin(ctx, p)
		require.NoError(t, err)
		require.Equal(t, store.IdempotencyInFlight, again.Outcome)
		exact(t, "stored expires_at", want, again.Key.ExpiresAt)
		exact(t, "stored created_at", first.Key.CreatedAt, again.Key.CreatedAt)
	})
}
