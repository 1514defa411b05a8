package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/fair"
	"github.com/weft-run/weft/runtime/internal/leases"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// Engine is the durable-execution engine: it owns the task state machine,
// the workers that run tasks through the Executor, start-up recovery,
// retention and the event broker. Create it
// with New, start it with Open and stop it with Close. All methods are safe
// for concurrent use.
type Engine struct {
	cfg     Config
	log     hclog.Logger
	store   store.Store
	exec    Executor
	metrics *metrics.Metrics

	mu      sync.Mutex // guards state
	state   engineState
	runCtx  context.Context // lives from Open to Close
	stop    context.CancelCauseFunc
	wg      sync.WaitGroup
	stopped chan struct{} // closed when every goroutine of Open returned

	sched   *scheduler
	adm     *fair.Admission
	wf      wakeState     // when waiting workflows may be due
	overdue overdueState  // when queued tasks pass their start deadline
	jcache  journal.Cache // journals of recently waiting workflows
	// watchers says, per workflow (digest and function), whether its
	// last run watched its cancel request (CallResult.HandlesCancel).
	watchers sync.Map
	signals  journal.Signals // pending signals per workflow
	running  runningCalls
	// finished wakes TaskRun when its task ends.
	finished finishWatch
	mods     *modules.Registry
	healer   *healer // task writes the store refused, written again
	svc      atomic.Pointer[store.ServiceConfig]
	// draining is set by Drain: no task starts any more.
	draining atomic.Bool
	// leases are the leases of the runs in progress, which the heartbeat
	// renews.
	leases leases.Table
	// queries holds a token per query in flight (Config.MaxQueries).
	queries chan struct{}
	// schedKick wakes the schedule loop (scheduleKick).
	schedKick chan struct{}
	// hookRegister, set by tests only, runs in the worker just before it
	// registers a call in running.
	hookRegister func(taskID string)
	// hookHeartbeat, set by tests only, runs before each heartbeat and
	// each reclaim round; false skips it (a frozen host).
	hookHeartbeat func() bool
}

type engineState int

const (
	stateNew engineState = iota
	stateOpen
	stateClosed
)

// errShutdown is the cancellation cause of everything the engine runs when
// Close is called: a call stopped for it leaves its task to start-up
// recovery.
var errShutdown = errors.New("engine shutting down")

// New validates cfg and returns an engine that is not yet running; see Open.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:     cfg,
		log:     cfg.Logger.Named("runtime"),
		store:   cfg.Store,
		exec:    cfg.Executor,
		metrics: cfg.Metrics,
		stopped: make(chan struct{}),
		queries: make(chan struct{}, cfg.MaxQueries),
	}
	e.running.m = make(map[string][]*runningCall)
	e.overdue.kick = make(chan struct{}, 1)
	e.schedKick = make(chan struct{}, 1)
	if e.mods, err = modules.New(modules.Config{
		Store: cfg.Store, Files: cfg.Modules, Executor: moduleExec{e}, Logger: e.log, Now: cfg.Now,
	}); err != nil {
		return nil, err
	}
	e.sched = newScheduler(e)
	e.adm = fair.New(fair.Config{Workers: cfg.Workers, ClientWorkers: cfg.ClientWorkers, MemoryBudget: cfg.MemoryBudget, DefaultMemoryLimit: cfg.DefaultMemoryLimit, Notify: e.sched.notify})
	e.healer = newHealer(e)
	if e.metrics != nil {
		e.metrics.Attach(e.store, e.healer.state)
	}
	return e, nil
}

// Open starts the engine. It first applies the start-up recovery of
// persistence §11.3 through the store (the daemon runs the payload
// preflight before): on a store it owns alone, to every unfinished task
// (TaskRecover); on a shared store, only to the tasks whose lease expired
// (TaskReclaim), since other hosts may be running theirs. It then starts
// the workers, the scheduler, the retention loop and the lease heartbeat
// (and, on a shared store, the loop that takes over the tasks of hosts
// whose leases expire), and lets the running tasks with policy resume
// continue from their last checkpoint. Open may be called once; it returns an error
// when the recovery fails, in which case the engine stays closed.
func (e *Engine) Open(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != stateNew {
		return errors.New("open engine: already opened")
	}
	resumed, err := e.recoverTasks(ctx)
	if err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	e.runCtx, e.stop = context.WithCancelCause(context.Background())
	for range e.cfg.Workers {
		e.wg.Add(1)
		go e.worker()
	}
	e.wg.Add(6)
	go e.sched.run(e.runCtx)
	go e.scheduleLoop(e.runCtx)
	go e.overdueLoop(e.runCtx)
	go e.retentionLoop(e.runCtx)
	go e.healer.run(e.runCtx)
	go e.heartbeat(e.runCtx)
	if e.store.Shared() {
		e.wg.Add(1)
		go e.reclaimLoop(e.runCtx)
	}
	if len(resumed) > 0 {
		e.wg.Add(1)
		go e.resume(e.runCtx, resumed)
	}
	go func() {
		e.wg.Wait()
		close(e.stopped)
	}()
	e.state = stateOpen
	e.log.Info("engine open", "workers", e.cfg.Workers, "resumed", len(resumed), "host", e.cfg.Host,
		"lease", e.cfg.LeaseTTL, "shared_store", e.store.Shared())
	return nil
}

// Close stops the engine: it stops claiming tasks, cancels the plugin calls
// in progress and leaves their tasks as they are, for start-up recovery to
// handle by their on_restart policy at the next Open. It waits for every
// goroutine of the engine until ctx ends or Config.ShutdownTimeout passes,
// whichever comes first, and then says what is still running. Close is
// idempotent; it does not close the store.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	switch e.state {
	case stateNew:
		e.state = stateClosed
		close(e.stopped)
		e.mu.Unlock()
		return nil
	case stateOpen:
		e.state = stateClosed
		e.stop(errShutdown)
	}
	e.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, e.cfg.ShutdownTimeout)
	defer cancel()
	select {
	case <-e.stopped:
		e.log.Info("engine closed")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close engine: %d plugin calls still running: %w", e.running.len(), ctx.Err())
	}
}

// Ready reports whether the engine is open and accepting work.
func (e *Engine) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == stateOpen
}

// now returns the engine's clock.
func (e *Engine) now() time.Time { return e.cfg.Now() }

// ErrClosed is returned by operations on an engine that is not open; its
// code is fault.Unavailable.
var ErrClosed = &fault.Error{Code: fault.Unavailable, Message: "engine is not running"}

// checkOpen returns ErrClosed unless the engine is open.
func (e *Engine) checkOpen() error {
	if !e.Ready() {
		return ErrClosed
	}
	return nil
}

// runningCalls holds, per task id, the plugin calls in progress and the
// functions that cancel them. A workflow has at most one call in progress
// but for a short overlap: a run that goes on from an activity's end (see
// worker.foldEnd) while a wake let another worker claim it; the commit of
// one of them is refused.
//
// It also counts the cancels that found no call (misses): a task handed to
// a worker running, by the commit that started it, is running before its
// call is registered, and a cancel in between would find nothing to stop.
// A worker compares the count at its registration with a mark taken before
// that commit, and reads the task's status again when they differ
// (worker.run). One counter, however many tasks.
type runningCalls struct {
	mu     sync.Mutex
	m      map[string][]*runningCall
	n      int
	misses uint64
}

// runningCall is one registered call.
type runningCall struct {
	id     string
	cancel context.CancelCauseFunc
}

// add registers a call of task id and returns its handle for remove, and
// the mark of the misses so far: equal to an earlier mark when no cancel
// found no call in between.
func (r *runningCalls) add(id string, cancel context.CancelCauseFunc) (*runningCall, uint64) {
	c := &runningCall{id: id, cancel: cancel}
	r.mu.Lock()
	r.m[id] = append(r.m[id], c)
	r.n++
	misses := r.misses + 1
	r.mu.Unlock()
	return c, misses
}

// mark returns the mark of the misses so far, never 0 (the zero mark is
// none), for comparison with the one add returns later.
func (r *runningCalls) mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.misses + 1
}

// remove unregisters c; removing it again, or nil, does nothing.
func (r *runningCalls) remove(c *runningCall) {
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.m[c.id]
	i := slices.Index(cs, c)
	if i < 0 {
		return
	}
	r.n--
	if len(cs) == 1 {
		delete(r.m, c.id)
		return
	}
	r.m[c.id] = slices.Delete(slices.Clone(cs), i, i+1)
}

// cancel cancels every call of task id in progress with cause, and reports
// whether there was one; when there was none it counts a miss. Callers
// call it after the commit that made the task cancelling.
func (r *runningCalls) cancel(id string, cause error) bool {
	r.mu.Lock()
	cs := r.m[id]
	if len(cs) == 0 {
		r.misses++
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.cancel(cause)
	}
	return len(cs) > 0
}

// of returns the calls of task id in progress.
func (r *runningCalls) of(id string) []*runningCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.m[id])
}

// any reports whether one of cs is still in progress.
func (r *runningCalls) any(cs []*runningCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		if slices.Contains(r.m[c.id], c) {
			return true
		}
	}
	return false
}

// len returns the number of calls in progress.
func (r *runningCalls) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
