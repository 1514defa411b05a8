package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testTimeout covers the timeouts a task keeps (docs/workflows.md,
// "Timeouts"): the relative timeouts and the absolute execution deadline
// round-trip; the run deadline starts with each attempt; the start
// deadline follows each time the task is queued; TaskOverdue finds queued
// tasks past it, only those, earliest first, bounded by Limit.
func testTimeout(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		task := MustInsertTask(t, s, &store.TaskInsertParams{
			Kind: store.KindWorkflow, Deadline: deadline.Add(123 * time.Microsecond),
			RunTimeout: 2500*time.Millisecond + time.Microsecond, HeartbeatTimeout: 3 * time.Second,
		})
		require.True(t, task.Deadline.Equal(deadline), "the deadline is kept at the millisecond")
		require.True(t, task.StartDeadline.Equal(deadline), "a queued workflow must start before its deadline")
		require.True(t, task.RunDeadline.IsZero(), "no attempt yet")
		got, err := s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		require.True(t, got.Deadline.Equal(deadline))
		require.Equal(t, 2500*time.Millisecond, got.RunTimeout)
		require.Equal(t, 3*time.Second, got.HeartbeatTimeout)
		require.Zero(t, got.ScheduleToStartTimeout)

		before := time.Now().Add(-time.Second)
		loading := MustLoading(t, s, task.ID)
		require.False(t, loading.RunDeadline.IsZero(), "the attempt's run deadline starts with its claim")
		require.WithinDuration(t, before.Add(time.Second+2500*time.Millisecond), loading.RunDeadline, 5*time.Second)
		got, err = s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		require.True(t, got.RunDeadline.Equal(loading.RunDeadline), "stored as returned")
		require.True(t, got.Deadline.Equal(deadline), "the execution deadline stays")
	})

	t.Run("StartDeadlineFollowsQueue", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustInsertTask(t, s, &store.TaskInsertParams{ScheduleToStartTimeout: time.Minute})
		require.True(t, task.StartDeadline.Equal(task.NotBefore.Add(time.Minute)))
		MustLoading(t, s, task.ID)
		MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		later := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		back := MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusQueued, NotBefore: later,
		})
		require.True(t, back.StartDeadline.Equal(later.Add(time.Minute)), "a retry has its own minute from its backoff's end")
		got, err := s.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		require.True(t, got.StartDeadline.Equal(later.Add(time.Minute)))
	})

	t.Run("Overdue", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		res, err := s.TaskOverdue(ctx, &store.TaskOverdueParams{})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.True(t, res.Next.IsZero(), "no task has a deadline")

		plain := MustInsertTask(t, s, nil)
		// One time of falling due for both, so that their order is their
		// timeouts' whatever the time between the inserts.
		due := time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
		a := MustInsertTask(t, s, &store.TaskInsertParams{ScheduleToStartTimeout: 20 * time.Millisecond, NotBefore: due})
		b := MustInsertTask(t, s, &store.TaskInsertParams{ScheduleToStartTimeout: 10 * time.Millisecond, NotBefore: due})
		c := MustInsertTask(t, s, &store.TaskInsertParams{ScheduleToStartTimeout: time.Hour})
		claimed := MustInsertTask(t, s, &store.TaskInsertParams{ScheduleToStartTimeout: time.Millisecond})
		MustLoading(t, s, claimed.ID)

		now := c.NotBefore.Add(time.Minute)
		res, err = s.TaskOverdue(ctx, &store.TaskOverdueParams{Now: now})
		require.NoError(t, err)
		ids := make([]string, len(res.Tasks))
		for i, x := range res.Tasks {
			ids[i] = x.ID
		}
		require.Equal(t, []string{b.ID, a.ID}, ids, "queued and past their deadline, earliest first; not the claimed one")
		require.True(t, res.Next.Equal(c.StartDeadline), "the next deadline ahead")
		require.NotContains(t, ids, plain.ID)

		res, err = s.TaskOverdue(ctx, &store.TaskOverdueParams{Now: now, Limit: 1})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1, "bounded by Limit")
		require.Equal(t, b.ID, res.Tasks[0].ID)

		_, err = s.TaskOverdue(ctx, &store.TaskOverdueParams{Limit: -1})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.TaskOverdue(ctx, &store.TaskOverdueParams{Limit: store.MaxListLimit + 1})
		require.ErrorIs(t, err, store.ErrInvalid)

		// A failed task leaves the overdue set.
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: b.ID, From: []store.Status{store.StatusQueued}, To: store.StatusFailed,
			Error: &store.TaskError{Code: "schedule_to_start_timeout", Message: "late"},
		})
		res, err = s.TaskOverdue(ctx, &store.TaskOverdueParams{Now: now})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		require.Equal(t, a.ID, res.Tasks[0].ID)
		MustCheckLog(t, s, b.ID)
	})

	t.Run("NegativeRefused", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, p := range []*store.TaskInsertParams{
			{RunTimeout: -1}, {ScheduleToStartTimeout: -1}, {HeartbeatTimeout: -1},
		} {
			p.Module, p.ModuleDigest, p.Function = "m", Digest, "f"
			_, err := s.TaskInsert(t.Context(), p)
			require.ErrorIs(t, err, store.ErrInvalid)
		}
	})
}
