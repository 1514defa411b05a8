package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/weft-run/weft/runtime/internal/fair"
	"github.com/weft-run/weft/store"
)

// Bounds of the schedule loop.
const (
	// scheduleBatch is how many due schedules one query takes.
	scheduleBatch = 1000
	// scheduleParallel is how many due schedules a pass ticks at once,
	// so that their commits share group commits.
	scheduleParallel = 128
	// scheduleBufferRecheck is how often a schedule with a buffered run
	// looks whether the open run ended.
	scheduleBufferRecheck = time.Second
	// scheduleErrorWait is the pause of the loop after a pass that
	// failed, so that a broken schedule cannot make it spin.
	scheduleErrorWait = time.Second
	// scheduleMaxWalk bounds the ticks of a cron schedule a pass walks
	// over to count them missed; the next pass goes on.
	scheduleMaxWalk = 100_000
)

// scheduleKick wakes the schedule loop: a schedule was created, resumed
// or buffered a run.
func (e *Engine) scheduleKick() {
	select {
	case e.schedKick <- struct{}{}:
	default:
	}
}

// scheduleLoop is the engine's one schedule loop (no goroutine per
// schedule): it ticks the due schedules, then sleeps until the earliest
// next run time, a kick, or the poll interval (which catches the
// schedules other hosts of a shared store create). On a shared store
// several hosts run it at once; ScheduleTick's compare-and-set lets one
// of them start each tick.
func (e *Engine) scheduleLoop(ctx context.Context) {
	defer e.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-e.schedKick:
		}
		next, failed := e.schedulePass(ctx)
		wait := e.cfg.PollInterval
		if !next.IsZero() {
			wait = min(wait, next.Sub(e.now()))
		}
		if failed {
			wait = scheduleErrorWait
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, 0))
	}
}

// schedulePass ticks every due schedule, in batches, until none is due,
// and returns the next due time ahead and whether a tick failed.
func (e *Engine) schedulePass(ctx context.Context) (time.Time, bool) {
	failed := false
	for ctx.Err() == nil {
		now := e.now()
		res, err := e.store.ScheduleDue(ctx, &store.ScheduleDueParams{Now: now, Limit: scheduleBatch})
		if err != nil {
			if ctx.Err() == nil {
				e.log.Error("schedules: list the due ones", "error", err)
			}
			return time.Time{}, true
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			sem  = make(chan struct{}, scheduleParallel)
			fail bool
		)
		for _, sc := range res.Schedules {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := e.scheduleTick(ctx, sc); err != nil {
					if ctx.Err() == nil {
						e.log.Error("schedules: tick", "schedule_id", sc.ID, "client_id", sc.OwnerClientID, "error", err)
					}
					mu.Lock()
					fail = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		failed = failed || fail
		// The next due time comes from a query that found nothing due:
		// the ticks just committed moved their schedules' next runs.
		if len(res.Schedules) == 0 || fail {
			return res.Next, failed
		}
	}
	return time.Time{}, failed
}

// scheduleTick runs one pass over a due schedule and commits it: the
// ticks due by now, each started, skipped, buffered or missed as the
// catch-up window and the overlap policy say, at most
// Config.ScheduleCatchupTicks started. A lost compare-and-set (another
// host, or a pause) reads the schedule again.
func (e *Engine) scheduleTick(ctx context.Context, sc *store.Schedule) error {
	for attempt := 0; ; attempt++ {
		tasks, err := e.scheduleTickOnce(ctx, sc)
		if err == nil {
			e.scheduleStarted(tasks)
			return nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt >= 3 {
			return err
		}
		if sc, err = e.store.ScheduleGet(ctx, sc.OwnerClientID, sc.ID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil // deleted meanwhile
			}
			return err
		}
		if sc.Paused || sc.NextRunAt.IsZero() || sc.NextRunAt.After(e.now()) {
			return nil // another host ticked it, or it was paused
		}
	}
}

// scheduleTickOnce computes and commits one pass.
func (e *Engine) scheduleTickOnce(ctx context.Context, sc *store.Schedule) ([]*store.Task, error) {
	def, err := decodeScheduleDef(sc)
	if err != nil {
		return nil, err
	}
	spec, err := compileSpec(sc.ID, &def.Spec)
	if err != nil {
		return nil, err
	}
	// A revoked client's schedules stop: the first due tick pauses them.
	if c, err := e.store.ClientGet(ctx, sc.OwnerClientID); err == nil && c.Revoked() {
		e.log.Warn("schedules: the owner was revoked; pausing", "schedule_id", sc.ID, "client_id", sc.OwnerClientID)
		_, err := e.store.ScheduleUpdate(ctx, &store.ScheduleUpdateParams{
			OwnerClientID: sc.OwnerClientID, ID: sc.ID, Version: sc.Version, Paused: true,
			Note: "paused: the owner client was revoked", LastTickAt: sc.LastTickAt,
		})
		return nil, err
	}
	now := e.now().UTC()
	plan, err := e.planTicks(ctx, sc, def, spec, now)
	if err != nil {
		return nil, err
	}
	p := &store.ScheduleTickParams{
		OwnerClientID: sc.OwnerClientID, ID: sc.ID, Version: sc.Version, LastTickAt: sc.LastTickAt,
		NewLastTickAt: plan.cursor, NextRunAt: plan.next, Buffered: plan.buffered,
		Missed: plan.missed, Skipped: plan.skipped,
	}
	for _, r := range plan.starts {
		ip, err := e.scheduleTaskParams(ctx, sc, def, r.key)
		if err != nil {
			// The action cannot start (its module was deleted, say): the
			// tick is skipped, and says why in the log.
			e.log.Warn("schedules: a tick's task cannot start", "schedule_id", sc.ID, "client_id", sc.OwnerClientID,
				"tick", r.key, "error", err)
			p.Skipped++
			continue
		}
		p.Runs = append(p.Runs, store.ScheduleRunStart{Key: r.key, TickAt: r.at, Task: ip})
	}
	tickets := e.scheduleStartNow(p.Runs)
	mark := e.running.mark()
	res, err := e.store.ScheduleTick(ctx, p)
	if err != nil {
		for i, r := range p.Runs {
			if r.Task.Start {
				e.adm.Release(tickets[i])
				e.sched.free <- struct{}{}
			}
		}
		return nil, err
	}
	var queued []*store.Task
	for i, t := range res.Tasks {
		if p.Runs[i].Task.Start {
			e.sched.work <- workItem{task: t, resumed: true, fresh: true, mark: mark}
		} else {
			queued = append(queued, t)
		}
	}
	// The open runs end only once the tick that replaces them committed:
	// a plan that lost the compare-and-set (another host ticked first, and
	// its run is among the open ones) cancels nothing.
	if len(plan.cancel) > 0 {
		e.scheduleCancel(ctx, plan.cancel)
	}
	return queued, nil
}

// scheduleStartNow marks the runs that an idle worker can take at once
// to be inserted running, as TaskCreate does: the commit of the tick
// then also claims them, and they go straight to their workers. It
// returns the admission ticket of each run so marked.
func (e *Engine) scheduleStartNow(runs []store.ScheduleRunStart) []fair.Ticket {
	tickets := make([]fair.Ticket, len(runs))
	for i := range runs {
		ip := runs[i].Task
		if !ip.NotBefore.IsZero() || !e.mods.Loaded(ip.ModuleDigest) || !e.sched.takeIdle() {
			continue
		}
		tk, ok := e.adm.TryStart(ip.OwnerClientID, ip.MemoryLimit)
		if !ok {
			e.sched.free <- struct{}{} // through the queue, for the scheduler to admit
			continue
		}
		tickets[i] = tk
		ip.Start, ip.Host, ip.LeaseTTL = true, e.cfg.Host, e.cfg.LeaseTTL
	}
	return tickets
}

// tickPlan is the outcome of a pass before its commit.
type tickPlan struct {
	cursor          time.Time
	next            time.Time
	buffered        string
	missed, skipped int64
	starts          []plannedRun
	cancel          []string
}

type plannedRun struct {
	key string
	at  time.Time
}

// planTicks decides a pass over sc at now. A paused schedule is due only
// for the run it buffered (a trigger under buffer_one): that run may
// start, no tick does.
func (e *Engine) planTicks(ctx context.Context, sc *store.Schedule, def *scheduleDef, spec *tickSpec, now time.Time) (*tickPlan, error) {
	plan := &tickPlan{cursor: sc.LastTickAt, buffered: sc.Buffered}
	window := time.Duration(def.CatchupWindowMS) * time.Millisecond
	cutoff := now.Add(-window)
	policy := def.OverlapPolicy
	var open []string
	if policy != OverlapAllowAll {
		var err error
		if open, err = e.scheduleOpenRuns(ctx, sc, policy); err != nil {
			return nil, err
		}
	}
	// A buffered run starts once the open ones ended.
	if plan.buffered != "" && len(open) == 0 {
		at := now
		if t, err := time.Parse(time.RFC3339Nano, plan.buffered); err == nil {
			at = t
		}
		plan.starts = append(plan.starts, plannedRun{key: plan.buffered, at: at})
		plan.buffered = ""
		open = append(open, "buffered")
	}
	// The ticks that fell due before the window are missed: an interval
	// jumps over them at once.
	if c, n := spec.skipTo(plan.cursor, cutoff); n > 0 {
		plan.cursor, plan.missed = c, n
	}
	started, walked := 0, 0
	for !sc.Paused && started < e.cfg.ScheduleCatchupTicks && walked < scheduleMaxWalk {
		n, ok := spec.next(plan.cursor)
		if !ok {
			break
		}
		due := spec.due(n)
		if due.After(now) {
			break
		}
		plan.cursor = n
		walked++
		if due.Before(cutoff) {
			plan.missed++
			continue
		}
		key := tickKey(n)
		switch {
		case len(open) == 0 || policy == OverlapAllowAll:
		case policy == OverlapSkip:
			plan.skipped++
			continue
		case policy == OverlapBufferOne:
			if plan.buffered == "" {
				plan.buffered = key
			} else {
				plan.skipped++
			}
			continue
		case policy == OverlapCancelOther:
			for _, id := range open {
				if id != "new" && id != "buffered" {
					plan.cancel = append(plan.cancel, id)
				}
			}
			open = open[:0]
			// The runs planned earlier in this pass are not started: the
			// newest tick replaces them.
			plan.skipped += int64(len(plan.starts))
			plan.starts = plan.starts[:0]
		}
		plan.starts = append(plan.starts, plannedRun{key: key, at: n})
		open = append(open, "new")
		started++
	}
	if n, ok := spec.next(plan.cursor); ok && !sc.Paused {
		plan.next = spec.due(n)
	}
	if plan.buffered != "" {
		if recheck := now.Add(scheduleBufferRecheck); plan.next.IsZero() || plan.next.After(recheck) {
			plan.next = recheck
		}
	}
	return plan, nil
}
