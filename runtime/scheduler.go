package runtime

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/weft-run/weft/store"
)

// scheduler hands queued tasks, and waiting workflows that fell due, to
// idle workers. It claims tasks through the store (Engine.claim: waiting
// workflows first, then TaskClaim, fair across owners) only when workers
// are free, and it
// never polls a busy queue: task creation and signals wake it through a
// channel, and retries and timers register the time they fall due, which
// arms a single timer. PollInterval is only a safety net.
type scheduler struct {
	e *Engine
	// wake is signalled (coalesced) when a task may have become claimable
	// now.
	wake chan struct{}
	// free holds one token per idle worker.
	free chan struct{}
	// work carries claimed tasks to the workers; it never holds more items
	// than there are workers, so sends never block.
	work chan workItem

	// failures counts the claims the store refused in a row; only the
	// scheduler's goroutine touches it.
	failures claimFailures

	mu  sync.Mutex
	due timeHeap // times at which queued tasks fall due
	// rearm is signalled (coalesced) when due gained an earlier time.
	rearm chan struct{}
	// hint is Store.WorkWatch's channel on a shared store, nil otherwise:
	// work other hosts made claimable (a task created or a workflow woken
	// through them) wakes the scheduler too.
	hint <-chan struct{}
}

// workItem is one task for a worker.
type workItem struct {
	task *store.Task
	// resumed marks a task that is running already: one that start-up
	// recovery kept running (policy resume), which continues from its
	// checkpoint without a claim, or a workflow handed over running.
	resumed bool
	// fresh marks a task handed over by the commit that just claimed or
	// started it: the worker does not read its row again, unless a cancel
	// may have committed in between and found no call to stop (see mark
	// and worker.start). A workflow's cancel in between is caught by the
	// run's compare-and-set.
	fresh bool
	// mark is Engine.running's mark taken before the commit that made a
	// fresh task running; zero when unknown.
	mark uint64
	// parent is, for an activity that its workflow's commit started, the
	// workflow as that commit left it: the activity's end may go on into
	// the workflow's next run (worker.foldEnd).
	parent *store.Task
	// fold is, for a workflow run that goes on from an activity's end,
	// that end: the run commits both at once.
	fold *foldedEnd
}

func newScheduler(e *Engine) *scheduler {
	s := &scheduler{
		e:     e,
		wake:  make(chan struct{}, 1),
		free:  make(chan struct{}, e.cfg.Workers),
		work:  make(chan workItem, e.cfg.Workers),
		rearm: make(chan struct{}, 1),
	}
	for range e.cfg.Workers {
		s.free <- struct{}{}
	}
	return s
}

// takeIdle takes the token of an idle worker, if one is idle and the
// engine is not draining: the caller then sends that worker one work item,
// or gives the token back to free.
func (s *scheduler) takeIdle() bool {
	if s.e.draining.Load() {
		return false
	}
	select {
	case <-s.free:
		return true
	default:
		return false
	}
}

// notify wakes the scheduler: a task may be claimable now.
func (s *scheduler) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wakeAt makes the scheduler claim at t, when a queued task falls due.
func (s *scheduler) wakeAt(t time.Time) {
	s.mu.Lock()
	earliest := len(s.due) == 0 || t.Before(s.due[0])
	heap.Push(&s.due, t)
	s.mu.Unlock()
	if earliest {
		select {
		case s.rearm <- struct{}{}:
		default:
		}
	}
}

// next drops the due times that have passed and returns the earliest one
// still ahead (or the zero time), and whether any had passed: then a task
// may have fallen due since the last claim.
func (s *scheduler) next(now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	passed := false
	for len(s.due) > 0 && !s.due[0].After(now) {
		heap.Pop(&s.due)
		passed = true
	}
	if len(s.due) == 0 {
		return time.Time{}, passed
	}
	return s.due[0], passed
}

// run is the scheduler loop: take the idle workers, claim that many tasks,
// hand them out, and sleep when the queue has nothing claimable.
func (s *scheduler) run(ctx context.Context) {
	defer s.e.wg.Done()
	if s.e.store.Shared() {
		var stop func()
		s.hint, stop = s.e.store.WorkWatch()
		defer stop()
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-s.free:
		case <-ctx.Done():
			return
		}
		if s.e.draining.Load() {
			// A graceful stop: nothing more starts before Close.
			s.free <- struct{}{}
			<-ctx.Done()
			return
		}
		n := 1
	take:
		for n < cap(s.free) {
			select {
			case <-s.free:
				n++
			default:
				break take
			}
		}
		items, err := s.e.claim(ctx, n)
		if err != nil {
			for range n {
				s.free <- struct{}{}
			}
			if ctx.Err() != nil {
				return
			}
			if !s.sleep(ctx, timer, s.failures.failed(s.e, err)) {
				return
			}
			continue
		}
		s.failures.succeeded(s.e)
		for _, it := range items {
			s.work <- it
		}
		for range n - len(items) {
			s.free <- struct{}{}
		}
		if len(items) == n {
			continue // the queue may hold more
		}
		if !s.sleep(ctx, timer, s.e.cfg.PollInterval) {
			return
		}
	}
}

// sleep waits until a wake-up, the next due time, or at most d. It returns
// false when ctx is done.
func (s *scheduler) sleep(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	for {
		now := s.e.now()
		due, passed := s.next(now)
		if passed {
			return ctx.Err() == nil // claim what fell due
		}
		if !due.IsZero() {
			d = min(d, due.Sub(now))
		}
		if d <= 0 {
			return ctx.Err() == nil
		}
		timer.Reset(d)
		select {
		case <-s.wake:
		case <-s.hint:
			// Another host's commit may have woken a workflow or queued a
			// task.
			s.e.wf.markDue()
		case <-timer.C:
		case <-s.rearm:
			timer.Stop()
			continue // an earlier due time: wait again with it
		case <-ctx.Done():
			timer.Stop()
			return false
		}
		timer.Stop()
		return true
	}
}

// timeHeap is a min-heap of times for container/heap.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// claimFailureReport is how often a run of refused claims is logged again
// while it lasts.
const claimFailureReport = time.Minute

// claimFailures keeps a store that refuses claims (a full disk, a database
// that is down) from flooding the log or the store: the claim is tried
// again after a backoff that doubles from StoreRetry.MinBackoff to
// StoreRetry.MaxBackoff, the first refusal is logged, then one line per
// claimFailureReport while refusals go on, and one when a claim succeeds
// again.
type claimFailures struct {
	count    int       // refusals in a row
	since    time.Time // the first of them
	reported time.Time // when the run was last logged
	backoff  time.Duration
}

// failed records a refused claim and returns how long to wait before the
// next one.
func (f *claimFailures) failed(e *Engine, err error) time.Duration {
	now := time.Now()
	retry := e.cfg.StoreRetry
	f.count++
	switch {
	case f.count == 1:
		f.since, f.reported, f.backoff = now, now, retry.MinBackoff
		e.log.Error("claim tasks: the store refused; trying again with backoff", "error", err)
	case now.Sub(f.reported) >= claimFailureReport:
		f.reported = now
		e.log.Error("claim tasks: the store still refuses", "error", err,
			"refusals", f.count, "since", f.since.Format(time.RFC3339))
	}
	d := f.backoff
	f.backoff = min(2*f.backoff, retry.MaxBackoff)
	return d
}

// succeeded ends a run of refused claims, logging how long it lasted.
func (f *claimFailures) succeeded(e *Engine) {
	if f.count == 0 {
		return
	}
	e.log.Info("claim tasks: the store accepts claims again", "refusals", f.count,
		"after", time.Since(f.since).Round(time.Millisecond))
	*f = claimFailures{}
}
