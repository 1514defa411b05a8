package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testSchedule covers schedules (docs/workflows.md, "Schedules"): the
// round trip, ids unique per owner and the per-owner bound, the due
// index, a tick's compare-and-set (of concurrent ticks on one version
// exactly one commits, with its task), run rows kept and pruned, pause and
// resume as a compare-and-set update, delete, and list pagination.
func testSchedule(t *testing.T, newStore func(testing.TB) store.Store) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	insert := func(t *testing.T, s store.Store, owner, id string, next time.Time) *store.Schedule {
		t.Helper()
		sc, err := s.ScheduleInsert(t.Context(), &store.ScheduleInsertParams{
			OwnerClientID: owner, ID: id, Definition: []byte(`{"spec":{"interval_ms":1000}}`),
			LastTickAt: base, NextRunAt: next,
		})
		require.NoError(t, err)
		return sc
	}
	task := func(owner string) *store.TaskInsertParams {
		return &store.TaskInsertParams{Module: "m", ModuleDigest: Digest, Function: "f", OwnerClientID: owner}
	}

	t.Run("RoundTripAndUnique", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		sc := insert(t, s, "cli_a", "nightly", base.Add(time.Second))
		require.Equal(t, int64(1), sc.Version)
		got, err := s.ScheduleGet(ctx, "cli_a", "nightly")
		require.NoError(t, err)
		require.Equal(t, `{"spec":{"interval_ms":1000}}`, string(got.Definition))
		require.True(t, got.LastTickAt.Equal(base))
		require.True(t, got.NextRunAt.Equal(base.Add(time.Second)))
		require.False(t, got.Paused)
		require.Equal(t, sc.CreatedAt, got.CreatedAt)

		_, err = s.ScheduleInsert(ctx, &store.ScheduleInsertParams{OwnerClientID: "cli_a", ID: "nightly", Definition: []byte(`{}`), LastTickAt: base})
		require.ErrorIs(t, err, store.ErrExists)
		insert(t, s, "cli_b", "nightly", time.Time{}) // another owner's id is another id
		_, err = s.ScheduleGet(ctx, "cli_c", "nightly")
		require.ErrorIs(t, err, store.ErrNotFound)

		_, err = s.ScheduleInsert(ctx, &store.ScheduleInsertParams{OwnerClientID: "cli_a", ID: "second", Definition: []byte(`{}`), LastTickAt: base, MaxPerOwner: 1})
		require.ErrorIs(t, err, store.ErrLimit)
		_, err = s.ScheduleInsert(ctx, &store.ScheduleInsertParams{OwnerClientID: "cli_a", ID: "bad\x01", Definition: []byte(`{}`), LastTickAt: base})
		require.ErrorIs(t, err, store.ErrInvalid)
	})

	t.Run("DueIndex", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		insert(t, s, "cli_a", "late", base.Add(3*time.Second))
		insert(t, s, "cli_a", "early", base.Add(time.Second))
		insert(t, s, "cli_b", "middle", base.Add(2*time.Second))
		insert(t, s, "cli_a", "never", time.Time{})
		res, err := s.ScheduleDue(ctx, &store.ScheduleDueParams{Now: base.Add(2 * time.Second)})
		require.NoError(t, err)
		require.Len(t, res.Schedules, 2)
		require.Equal(t, "early", res.Schedules[0].ID)
		require.Equal(t, "middle", res.Schedules[1].ID)
		require.True(t, res.Next.Equal(base.Add(3*time.Second)))
		res, err = s.ScheduleDue(ctx, &store.ScheduleDueParams{Now: base.Add(time.Hour), Limit: 1})
		require.NoError(t, err)
		require.Len(t, res.Schedules, 1)
		res, err = s.ScheduleDue(ctx, &store.ScheduleDueParams{Now: base})
		require.NoError(t, err)
		require.Empty(t, res.Schedules)
		require.True(t, res.Next.Equal(base.Add(time.Second)))
	})

	t.Run("TickCompareAndSet", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		sc := insert(t, s, "cli_a", "every", base.Add(time.Second))
		tick := base.Add(time.Second)
		const n = 16
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  []*store.ScheduleTickResult
			lost int
		)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.ScheduleTick(ctx, &store.ScheduleTickParams{
					OwnerClientID: "cli_a", ID: "every", Version: sc.Version, LastTickAt: sc.LastTickAt,
					NewLastTickAt: tick, NextRunAt: tick.Add(time.Second),
					Runs: []store.ScheduleRunStart{{Key: tick.Format(time.RFC3339), TickAt: tick, Task: task("cli_a")}},
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, res)
				case errors.Is(err, store.ErrConflict):
					require.NotNil(t, res)
					require.Equal(t, sc.Version+1, res.Schedule.Version)
					lost++
				default:
					t.Errorf("tick: %v", err)
				}
			}()
		}
		wg.Wait()
		require.Len(t, won, 1, "exactly one tick commits")
		require.Equal(t, n-1, lost)
		require.Len(t, won[0].Tasks, 1)
		list, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a"})
		require.NoError(t, err)
		require.Len(t, list, 1, "exactly one task")
		require.Equal(t, won[0].Tasks[0].ID, list[0].ID)
		require.Equal(t, store.StatusQueued, list[0].Status)
		got, err := s.ScheduleGet(ctx, "cli_a", "every")
		require.NoError(t, err)
		require.True(t, got.LastTickAt.Equal(tick))
		require.True(t, got.NextRunAt.Equal(tick.Add(time.Second)))
		runs, err := s.ScheduleRuns(ctx, "cli_a", "every")
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, list[0].ID, runs[0].TaskID)
		require.True(t, runs[0].TickAt.Equal(tick))

		// The same run key twice fails the whole tick: nothing is written.
		_, err = s.ScheduleTick(ctx, &store.ScheduleTickParams{
			OwnerClientID: "cli_a", ID: "every", Version: got.Version, LastTickAt: got.LastTickAt,
			NewLastTickAt: tick.Add(time.Second), Skipped: 1,
			Runs: []store.ScheduleRunStart{{Key: tick.Format(time.RFC3339), TickAt: tick, Task: task("cli_a")}},
		})
		require.ErrorIs(t, err, store.ErrExists)
		again, err := s.ScheduleGet(ctx, "cli_a", "every")
		require.NoError(t, err)
		require.Equal(t, got.Version, again.Version)
		list, err = s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a"})
		require.NoError(t, err)
		require.Len(t, list, 1, "the refused tick inserted no task")

		// A stale cursor loses, whatever the version.
		_, err = s.ScheduleTick(ctx, &store.ScheduleTickParams{
			OwnerClientID: "cli_a", ID: "every", Version: got.Version, LastTickAt: base, NewLastTickAt: tick.Add(time.Second),
		})
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.ScheduleTick(ctx, &store.ScheduleTickParams{
			OwnerClientID: "cli_a", ID: "nope", Version: 1, LastTickAt: base, NewLastTickAt: base,
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ScheduleTick(ctx, &store.ScheduleTickParams{
			OwnerClientID: "cli_a", ID: "every", Version: got.Version, LastTickAt: got.LastTickAt, NewLastTickAt: base,
		})
		require.ErrorIs(t, err, store.ErrInvalid, "the cursor never goes back")
	})

	t.Run("TickStartsRunning", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		sc := insert(t, s, "cli_a", "hot", base.Add(time.Second))
		tick := base.Add(time.Second)
		ip := task("cli_a")
		ip.Start, ip.Host = true, "host-a"
		res, err := s.ScheduleTick(ctx, &store.ScheduleTickParams{
			OwnerClientID: "cli_a", ID: "hot", Version: sc.Version, LastTickAt: sc.LastTickAt, NewLastTickAt: tick,
			Runs: []store.ScheduleRunStart{{Key: "k", TickAt: tick, Task: ip}},
		})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		got, err := s.TaskGet(ctx, res.Tasks[0].ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status, "inserted running, as TaskInsert with Start")
		require.Equal(t, "host-a", got.Lease.Host)
		require.Equal(t, 1, got.Attempt)
	})

	t.Run("RunsPrunedAndCounts", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		sc := insert(t, s, "cli_a", "every", base.Add(time.Second))
		for i := 1; i <= store.ScheduleRunsKept+5; i++ {
			tick := base.Add(time.Duration(i) * time.Second)
			res, err := s.ScheduleTick(ctx, &store.ScheduleTickParams{
				OwnerClientID: "cli_a", ID: "every", Version: sc.Version, LastTickAt: sc.LastTickAt,
				NewLastTickAt: tick, NextRunAt: tick.Add(time.Second), Missed: 2, Skipped: 1,
				Runs: []store.ScheduleRunStart{{Key: fmt.Sprint(i), TickAt: tick, Task: task("cli_a")}},
			})
			require.NoError(t, err)
			sc = res.Schedule
		}
		require.Equal(t, int64(2*(store.ScheduleRunsKept+5)), sc.Missed)
		require.Equal(t, int64(store.ScheduleRunsKept+5), sc.Skipped)
		runs, err := s.ScheduleRuns(ctx, "cli_a", "every")
		require.NoError(t, err)
		require.Len(t, runs, store.ScheduleRunsKept)
		require.Equal(t, fmt.Sprint(store.ScheduleRunsKept+5), runs[0].Key, "newest first")
		list, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a"})
		require.NoError(t, err)
		require.Len(t, list, store.ScheduleRunsKept+5, "pruning a run row leaves its task")
	})

	t.Run("PauseResumeDelete", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		sc := insert(t, s, "cli_a", "p", base.Add(time.Second))
		paused, err := s.ScheduleUpdate(ctx, &store.ScheduleUpdateParams{
			OwnerClientID: "cli_a", ID: "p", Version: sc.Version, Paused: true, Note: "maintenance", LastTickAt: sc.LastTickAt,
		})
		require.NoError(t, err)
		require.True(t, paused.Paused)
		require.True(t, paused.NextRunAt.IsZero())
		res, err := s.ScheduleDue(ctx, &store.ScheduleDueParams{Now: base.Add(time.Hour)})
		require.NoError(t, err)
		require.Empty(t, res.Schedules, "a paused schedule is never due")
		stale, err := s.ScheduleUpdate(ctx, &store.ScheduleUpdateParams{
			OwnerClientID: "cli_a", ID: "p", Version: sc.Version, LastTickAt: sc.LastTickAt,
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.Equal(t, paused.Version, stale.Version)
		resumed, err := s.ScheduleUpdate(ctx, &store.ScheduleUpdateParams{
			OwnerClientID: "cli_a", ID: "p", Version: paused.Version, LastTickAt: base.Add(time.Minute), NextRunAt: base.Add(61 * time.Second),
		})
		require.NoError(t, err)
		got, err := s.ScheduleGet(ctx, "cli_a", "p")
		require.NoError(t, err)
		require.Equal(t, resumed.Version, got.Version)
		require.False(t, got.Paused)
		require.Empty(t, got.Note)
		require.True(t, got.LastTickAt.Equal(base.Add(time.Minute)))
		require.True(t, got.NextRunAt.Equal(base.Add(61*time.Second)))

		require.NoError(t, s.ScheduleDelete(ctx, "cli_a", "p"))
		require.ErrorIs(t, s.ScheduleDelete(ctx, "cli_a", "p"), store.ErrNotFound)
		_, err = s.ScheduleGet(ctx, "cli_a", "p")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ScheduleRuns(ctx, "cli_a", "p")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ScheduleUpdate(ctx, &store.ScheduleUpdateParams{OwnerClientID: "cli_a", ID: "p", Version: 1, LastTickAt: base})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ListPages", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		for i := range 5 {
			insert(t, s, "cli_a", fmt.Sprintf("s%d", i), time.Time{})
		}
		insert(t, s, "cli_b", "other", time.Time{})
		page, err := s.ScheduleList(ctx, &store.ScheduleListParams{OwnerClientID: "cli_a", Limit: 3})
		require.NoError(t, err)
		require.Len(t, page, 3)
		require.Equal(t, "s0", page[0].ID)
		page, err = s.ScheduleList(ctx, &store.ScheduleListParams{OwnerClientID: "cli_a", Cursor: page[2].ID, Limit: 3})
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, "s4", page[1].ID)
		_, err = s.ScheduleList(ctx, &store.ScheduleListParams{})
		require.ErrorIs(t, err, store.ErrInvalid)
	})
}
