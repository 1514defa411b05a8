package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func mustSpec(t *testing.T, id string, s ScheduleSpec) *tickSpec {
	t.Helper()
	c, err := compileSpec(id, &s)
	require.NoError(t, err)
	return c
}

func TestScheduleSpecCronTimeZone(t *testing.T) {
	// 09:00 in New York, across the change to daylight saving time on
	// 2026-03-08: 14:00 UTC before, 13:00 UTC after.
	c := mustSpec(t, "s", ScheduleSpec{Cron: "0 9 * * *", Timezone: "America/New_York"})
	at := time.Date(2026, 3, 6, 15, 0, 0, 0, time.UTC)
	var got []time.Time
	for range 4 {
		n, ok := c.next(at)
		require.True(t, ok)
		got = append(got, n)
		at = n
	}
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 7, 14, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 8, 13, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 9, 13, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC),
	}, got)
	// 02:30 does not exist on the change day: that day has no tick, and
	// the next days tick as usual.
	c = mustSpec(t, "s", ScheduleSpec{Cron: "30 2 * * *", Timezone: "America/New_York"})
	n1, _ := c.next(time.Date(2026, 3, 7, 8, 0, 0, 0, time.UTC))
	n2, _ := c.next(n1)
	require.Equal(t, time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), n1)
	require.Equal(t, time.Date(2026, 3, 10, 6, 30, 0, 0, time.UTC), n2)
	// 01:30 happens twice on 2026-11-01: it ticks once, at the first.
	c = mustSpec(t, "s", ScheduleSpec{Cron: "30 1 * * *", Timezone: "America/New_York"})
	n1, _ = c.next(time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC))
	n2, _ = c.next(n1)
	require.Equal(t, time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), n1)
	require.Equal(t, time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), n2)

	h := mustSpec(t, "s", ScheduleSpec{Cron: "@hourly"})
	n, _ := h.next(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), n, "strictly after")
}

func TestScheduleSpecInterval(t *testing.T) {
	c := mustSpec(t, "s", ScheduleSpec{IntervalMS: 60_000, OffsetMS: 15_000})
	n, ok := c.next(time.Date(2026, 1, 1, 10, 0, 20, 0, time.UTC))
	require.True(t, ok)
	require.Equal(t, time.Date(2026, 1, 1, 10, 1, 15, 0, time.UTC), n)
	n, _ = c.next(n)
	require.Equal(t, time.Date(2026, 1, 1, 10, 2, 15, 0, time.UTC), n)
	n, _ = c.next(time.Date(2026, 1, 1, 10, 0, 14, 999e6, time.UTC))
	require.Equal(t, time.Date(2026, 1, 1, 10, 0, 15, 0, time.UTC), n)
}

func TestScheduleSpecStartEnd(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	c := mustSpec(t, "s", ScheduleSpec{IntervalMS: 1000, StartAt: start, EndAt: start.Add(2 * time.Second)})
	n, ok := c.next(start.Add(-time.Hour))
	require.True(t, ok)
	require.Equal(t, start, n, "the start itself is a tick")
	n, _ = c.next(n)
	n, ok = c.next(n)
	require.True(t, ok)
	require.Equal(t, start.Add(2*time.Second), n, "the end itself is a tick")
	_, ok = c.next(n)
	require.False(t, ok)
}

func TestScheduleJitter(t *testing.T) {
	c := mustSpec(t, "sched-a", ScheduleSpec{IntervalMS: 10_000, JitterMS: 5000})
	d := mustSpec(t, "sched-b", ScheduleSpec{IntervalMS: 10_000, JitterMS: 5000})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	differ := 0
	for i := range 200 {
		n := base.Add(time.Duration(i) * 10 * time.Second)
		j := c.jitterOf(n)
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.LessOrEqual(t, j, 5*time.Second)
		require.Equal(t, j, mustSpec(t, "sched-a", ScheduleSpec{IntervalMS: 10_000, JitterMS: 5000}).jitterOf(n), "deterministic")
		require.Equal(t, n.Add(j), c.due(n))
		if j != d.jitterOf(n) {
			differ++
		}
	}
	require.Greater(t, differ, 150, "another schedule id, other jitters")
	require.Zero(t, mustSpec(t, "s", ScheduleSpec{IntervalMS: 1000}).jitterOf(base))
}

func TestScheduleSpecRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		spec  ScheduleSpec
		param string
	}{
		"both":          {ScheduleSpec{Cron: "* * * * *", IntervalMS: 1000}, "spec"},
		"neither":       {ScheduleSpec{}, "spec"},
		"bad cron":      {ScheduleSpec{Cron: "61 * * * *"}, "spec.cron"},
		"every":         {ScheduleSpec{Cron: "@every 1s"}, "spec.cron"},
		"six fields":    {ScheduleSpec{Cron: "0 0 * * * *"}, "spec.cron"},
		"never":         {ScheduleSpec{Cron: "0 0 30 2 *"}, "spec.cron"},
		"zone":          {ScheduleSpec{Cron: "@daily", Timezone: "Mars/Olympus"}, "spec.timezone"},
		"local":         {ScheduleSpec{Cron: "@daily", Timezone: "Local"}, "spec.timezone"},
		"short":         {ScheduleSpec{IntervalMS: 999}, "spec.interval_ms"},
		"offset":        {ScheduleSpec{IntervalMS: 1000, OffsetMS: 1000}, "spec.offset_ms"},
		"jitter":        {ScheduleSpec{IntervalMS: 1000, JitterMS: 1001}, "spec.jitter_ms"},
		"end first":     {ScheduleSpec{IntervalMS: 1000, StartAt: time.Unix(100, 0), EndAt: time.Unix(50, 0)}, "spec.end_at"},
		"interval zone": {ScheduleSpec{IntervalMS: 1000, Timezone: "UTC"}, "spec.timezone"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compileSpec("s", &tc.spec)
			require.Error(t, err)
			require.Equal(t, fault.Invalid, fault.CodeOf(err))
			var fe *fault.Error
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.param, fe.Param)
		})
	}
}

func TestScheduleSkipTo(t *testing.T) {
	c := mustSpec(t, "s", ScheduleSpec{IntervalMS: 1000})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cursor, n := c.skipTo(base, base.Add(10*time.Second+500*time.Millisecond))
	require.Equal(t, int64(10), n, "ticks 1 to 10 fell due before the cutoff")
	require.Equal(t, base.Add(10*time.Second), cursor)
	_, n = c.skipTo(base, base.Add(time.Second))
	require.Zero(t, n, "a tick due at the cutoff is inside the window")
}

// scheduleBase is the start of a fake engine clock: the next whole hour
// ahead of the real clock, since the store stamps tasks with the real one.
func scheduleBase() time.Time { return time.Now().UTC().Truncate(time.Hour).Add(time.Hour) }

// scheduleClock is a settable engine clock.
type scheduleClock struct{ ns atomic.Int64 }

func (c *scheduleClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *scheduleClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *scheduleClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// scheduleSetup opens an engine on a fake clock whose activity "work"
// blocks until release is closed.
func scheduleSetup(t *testing.T) (*Engine, *scheduleClock, func()) {
	t.Helper()
	clock := &scheduleClock{}
	clock.set(scheduleBase())
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	e, _ := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
		if call.Function == "work" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return echo(ctx, call)
	}, func(c *Config) { c.Now = clock.now })
	return e, clock, func() { once.Do(func() { close(release) }) }
}

func TestSchedulePlanOverlap(t *testing.T) {
	who := Caller{ClientID: "cli_a"}
	window := int64(60_000)
	for policy, want := range map[OverlapPolicy]struct{ starts, skipped int64 }{
		OverlapAllowAll:    {3, 0},
		OverlapSkip:        {1, 2},
		OverlapBufferOne:   {1, 1},
		OverlapCancelOther: {1, 2},
	} {
		t.Run(string(policy), func(t *testing.T) {
			e, clock, _ := scheduleSetup(t)
			ctx := t.Context()
			sc, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
				ID: "s", Spec: ScheduleSpec{IntervalMS: 1000}, OverlapPolicy: policy, CatchupWindowMS: &window,
				Task: TaskCreateParams{Module: "test", Function: "work"},
			})
			require.NoError(t, err)
			def, err := decodeScheduleDef(sc.Stored)
			require.NoError(t, err)
			spec := mustSpec(t, "s", def.Spec)
			plan, err := e.planTicks(ctx, sc.Stored, def, spec, clock.now().Add(3500*time.Millisecond))
			require.NoError(t, err)
			require.Equal(t, want.starts, int64(len(plan.starts)))
			require.Equal(t, want.skipped, plan.skipped)
			require.Zero(t, plan.missed)
			require.Equal(t, clock.now().Add(3*time.Second), plan.cursor)
			require.Equal(t, clock.now().Add(4*time.Second), plan.next)
			if policy == OverlapBufferOne {
				require.Equal(t, tickKey(clock.now().Add(2*time.Second)), plan.buffered)
			}
			if policy == OverlapCancelOther {
				require.Equal(t, tickKey(clock.now().Add(3*time.Second)), plan.starts[0].key, "the newest tick replaces the earlier ones")
			}
		})
	}
}

func TestScheduleTickOverlapWithOpenRun(t *testing.T) {
	who := Caller{ClientID: "cli_a"}
	for _, policy := range []OverlapPolicy{OverlapSkip, OverlapBufferOne, OverlapCancelOther, OverlapAllowAll} {
		t.Run(string(policy), func(t *testing.T) {
			e, clock, release := scheduleSetup(t)
			base := clock.now()
			ctx := t.Context()
			_, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
				ID: "s", Spec: ScheduleSpec{IntervalMS: 1000}, OverlapPolicy: policy,
				Task: TaskCreateParams{Module: "test", Function: "work"},
			})
			require.NoError(t, err)
			tick := func() *store.Schedule {
				sc, err := e.store.ScheduleGet(ctx, "cli_a", "s")
				require.NoError(t, err)
				require.NoError(t, e.scheduleTick(ctx, sc))
				sc, err = e.store.ScheduleGet(ctx, "cli_a", "s")
				require.NoError(t, err)
				return sc
			}
			clock.add(1100 * time.Millisecond)
			require.Equal(t, base.Add(time.Second), tick().LastTickAt)
			runs, err := e.store.ScheduleRuns(ctx, "cli_a", "s")
			require.NoError(t, err)
			require.Len(t, runs, 1)
			first := runs[0].TaskID
			mustStatus(t, e, first, store.StatusRunning)
			clock.add(time.Second) // the second tick, with the first run open
			sc := tick()
			runs, err = e.store.ScheduleRuns(ctx, "cli_a", "s")
			require.NoError(t, err)
			switch policy {
			case OverlapSkip:
				require.Len(t, runs, 1)
				require.Equal(t, int64(1), sc.Skipped)
			case OverlapBufferOne:
				require.Len(t, runs, 1)
				require.Equal(t, tickKey(base.Add(2*time.Second)), sc.Buffered)
				release()
				mustStatus(t, e, first, store.StatusCompleted)
				clock.add(100 * time.Millisecond)
				sc = tick()
				require.Empty(t, sc.Buffered)
				runs, err = e.store.ScheduleRuns(ctx, "cli_a", "s")
				require.NoError(t, err)
				require.Len(t, runs, 2, "the buffered tick started once the open run ended")
				require.Equal(t, tickKey(base.Add(2*time.Second)), runs[0].Key)
			case OverlapCancelOther:
				require.Len(t, runs, 2)
				mustStatus(t, e, first, store.StatusCancelled)
			case OverlapAllowAll:
				require.Len(t, runs, 2)
				mustStatus(t, e, first, store.StatusRunning)
			}
		})
	}
}

// A pass planned on a stale read of the schedule (another host ticked
// meanwhile, and its run is open) loses the compare-and-set and ends
// nothing: cancel_other ends the open runs only after its own commit.
func TestScheduleStaleTickCancelsNothing(t *testing.T) {
	who := Caller{ClientID: "cli_a"}
	e, clock, _ := scheduleSetup(t)
	ctx := t.Context()
	_, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "s", Spec: ScheduleSpec{IntervalMS: 1000}, OverlapPolicy: OverlapCancelOther,
		Task: TaskCreateParams{Module: "test", Function: "work"},
	})
	require.NoError(t, err)
	clock.add(1100 * time.Millisecond)
	stale, err := e.store.ScheduleGet(ctx, "cli_a", "s")
	require.NoError(t, err)
	fresh, err := e.store.ScheduleGet(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.NoError(t, e.scheduleTick(ctx, fresh))
	runs, err := e.store.ScheduleRuns(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.Len(t, runs, 1)
	mustStatus(t, e, runs[0].TaskID, store.StatusRunning)

	require.NoError(t, e.scheduleTick(ctx, stale))
	after, err := e.store.ScheduleRuns(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.Len(t, after, 1, "the stale pass started nothing")
	task, err := e.store.TaskGet(ctx, runs[0].TaskID)
	require.NoError(t, err)
	require.Equal(t, store.StatusRunning, task.Status, "the stale pass ended nothing")
	require.True(t, task.CancelRequestedAt.IsZero())
}

func TestScheduleCatchupWindow(t *testing.T) {
	who := Caller{ClientID: "cli_a"}
	e, clock, _ := scheduleSetup(t)
	base := clock.now()
	ctx := t.Context()
	window := int64(2000)
	_, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "s", Spec: ScheduleSpec{IntervalMS: 1000}, OverlapPolicy: OverlapAllowAll, CatchupWindowMS: &window,
		Task: TaskCreateParams{Module: "test", Function: "echo"},
	})
	require.NoError(t, err)
	clock.add(10500 * time.Millisecond) // ten ticks fell due meanwhile
	sc, err := e.store.ScheduleGet(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.NoError(t, e.scheduleTick(ctx, sc))
	sc, err = e.store.ScheduleGet(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.Equal(t, int64(8), sc.Missed, "ticks 1 to 8 fell due more than 2 s ago")
	runs, err := e.store.ScheduleRuns(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, tickKey(base.Add(10*time.Second)), runs[0].Key)
	require.Equal(t, tickKey(base.Add(9*time.Second)), runs[1].Key)
	require.Equal(t, clock.now().Truncate(time.Second).Add(time.Second), sc.NextRunAt)

	// The same pass again starts nothing: the cursor moved.
	require.NoError(t, e.scheduleTick(ctx, sc))
	runs, err = e.store.ScheduleRuns(ctx, "cli_a", "s")
	require.NoError(t, err)
	require.Len(t, runs, 2)
}

func TestScheduleWorkflowIDAndTrigger(t *testing.T) {
	who := Caller{ClientID: "cli_a"}
	e, clock, _ := scheduleSetup(t)
	base := clock.now()
	ctx := t.Context()
	_, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "wf", Spec: ScheduleSpec{Cron: "@hourly"}, Task: TaskCreateParams{Module: "test", Function: "flow"}, Paused: true,
	})
	require.NoError(t, err)
	res, err := e.ScheduleTrigger(ctx, who, "wf")
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	require.Equal(t, "wf@"+triggerKey(base), res.Task.WorkflowID)
	clock.add(time.Millisecond)
	_, err = e.ScheduleTrigger(ctx, who, "wf")
	require.Equal(t, fault.ScheduleOverlap, fault.CodeOf(err), "skip refuses a trigger while a run is open")

	_, err = e.ScheduleTrigger(ctx, Caller{ClientID: "cli_b"}, "wf")
	require.Equal(t, fault.NotFound, fault.CodeOf(err))
	_, err = e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "wf", Spec: ScheduleSpec{Cron: "@hourly"}, Task: TaskCreateParams{Module: "test", Function: "flow"},
	})
	require.Equal(t, fault.ScheduleExists, fault.CodeOf(err))

	got, err := e.ScheduleGet(ctx, who, "wf")
	require.NoError(t, err)
	require.Len(t, got.Runs, 1)
	require.True(t, got.Runs[0].Trigger)
	require.Empty(t, got.NextRuns, "paused")
	got, err = e.ScheduleResume(ctx, who, "wf", "")
	require.NoError(t, err)
	require.Equal(t, base.Add(time.Hour), got.Stored.NextRunAt)
	got, err = e.ScheduleGet(ctx, who, "wf")
	require.NoError(t, err)
	require.Len(t, got.NextRuns, scheduleNextShown)
	require.NoError(t, e.ScheduleDelete(ctx, who, "wf"))
	_, err = e.ScheduleGet(ctx, who, "wf")
	require.Equal(t, fault.NotFound, fault.CodeOf(err))
}

func TestScheduleLimitPerClient(t *testing.T) {
	clock := &scheduleClock{}
	clock.set(scheduleBase())
	e, _ := setup(t, echo, func(c *Config) { c.Now = clock.now; c.MaxSchedulesPerClient = 2 })
	who := Caller{ClientID: "cli_a"}
	for i := range 3 {
		_, err := e.ScheduleCreate(t.Context(), who, &ScheduleCreateParams{
			Spec: ScheduleSpec{Cron: "@daily"}, Task: TaskCreateParams{Module: "test", Function: "echo"},
		})
		if i < 2 {
			require.NoError(t, err)
		} else {
			require.Equal(t, fault.ScheduleLimitExceeded, fault.CodeOf(err))
		}
	}
}

func TestScheduleOwnerRevoked(t *testing.T) {
	e, clock, _ := scheduleSetup(t)
	ctx := t.Context()
	c, err := e.store.ClientInsert(ctx, &store.ClientInsertParams{Name: "gone", TokenHash: []byte("h"), Scopes: []string{"tasks:write"}})
	require.NoError(t, err)
	who := Caller{ClientID: c.ID}
	_, err = e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "s", Spec: ScheduleSpec{IntervalMS: 1000}, Task: TaskCreateParams{Module: "test", Function: "echo"},
	})
	require.NoError(t, err)
	_, err = e.store.ClientRevoke(ctx, c.ID)
	require.NoError(t, err)
	clock.add(1100 * time.Millisecond)
	sc, err := e.store.ScheduleGet(ctx, c.ID, "s")
	require.NoError(t, err)
	require.NoError(t, e.scheduleTick(ctx, sc))
	sc, err = e.store.ScheduleGet(ctx, c.ID, "s")
	require.NoError(t, err)
	require.True(t, sc.Paused, "a revoked client's schedule stops")
	require.True(t, sc.NextRunAt.IsZero())
	runs, err := e.store.ScheduleRuns(ctx, c.ID, "s")
	require.NoError(t, err)
	require.Empty(t, runs)
}

func TestScheduleTriggerBufferedWhilePaused(t *testing.T) {
	e, clock, release := scheduleSetup(t)
	ctx := t.Context()
	who := Caller{ClientID: "cli_a"}
	_, err := e.ScheduleCreate(ctx, who, &ScheduleCreateParams{
		ID: "b", Spec: ScheduleSpec{IntervalMS: 1000}, OverlapPolicy: OverlapBufferOne, Paused: true,
		Task: TaskCreateParams{Module: "test", Function: "work"},
	})
	require.NoError(t, err)
	first, err := e.ScheduleTrigger(ctx, who, "b")
	require.NoError(t, err)
	require.NotNil(t, first.Task)
	mustStatus(t, e, first.Task.ID, store.StatusRunning)
	clock.add(time.Millisecond)
	second, err := e.ScheduleTrigger(ctx, who, "b")
	require.NoError(t, err)
	require.True(t, second.Buffered)
	require.Nil(t, second.Task)
	clock.add(time.Millisecond)
	_, err = e.ScheduleTrigger(ctx, who, "b")
	require.Equal(t, fault.ScheduleOverlap, fault.CodeOf(err), "one run is buffered already")

	release()
	mustStatus(t, e, first.Task.ID, store.StatusCompleted)
	clock.add(5 * time.Second) // five ticks would have fallen due: the schedule is paused
	sc, err := e.store.ScheduleGet(ctx, "cli_a", "b")
	require.NoError(t, err)
	require.NoError(t, e.scheduleTick(ctx, sc))
	sc, err = e.store.ScheduleGet(ctx, "cli_a", "b")
	require.NoError(t, err)
	require.Empty(t, sc.Buffered)
	require.True(t, sc.NextRunAt.IsZero(), "paused again: nothing due")
	runs, err := e.store.ScheduleRuns(ctx, "cli_a", "b")
	require.NoError(t, err)
	require.Len(t, runs, 2, "the buffered trigger started, no tick did")
	require.Equal(t, second.Key, runs[0].Key)
}
