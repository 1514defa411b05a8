package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weft-run/weft/store"
)

// StoreRetry bounds what the engine keeps in memory when the store refuses
// a task's write (a full disk, an I/O error): the task's next status,
// with its output or error and events, is kept and written again with
// backoff until the store takes it, without a restart. A workflow whose
// run could not be committed runs again from its journal once writes
// succeed. While such writes wait, or while claims fail, the engine is
// not ready (Engine.StoreError). What does not fit is left to start-up
// recovery, and logged. The zero value of each field means its default.
type StoreRetry struct {
	// MaxTasks is how many tasks' writes are kept at most. Defaults to
	// 4,096.
	MaxTasks int
	// MaxBytes is how many bytes of outputs, errors and events they hold
	// at most. Defaults to 256 MiB.
	MaxBytes int64
	// MinBackoff is the first wait before a write is tried again; it
	// doubles at each failure up to MaxBackoff. Defaults to 100 ms.
	MinBackoff time.Duration
	// MaxBackoff is the longest wait between tries. Defaults to 2 s.
	MaxBackoff time.Duration
}

// Defaults of StoreRetry.
const (
	DefaultStoreRetryTasks = 4096
	DefaultStoreRetryBytes = 256 << 20
	defaultRetryMinBackoff = 100 * time.Millisecond
	defaultRetryMaxBackoff = 2 * time.Second
)

func (r StoreRetry) withDefaults() (StoreRetry, error) {
	if r.MaxTasks < 0 || r.MaxBytes < 0 || r.MinBackoff < 0 || r.MaxBackoff < 0 {
		return r, errors.New("runtime: negative StoreRetry value")
	}
	if r.MaxTasks == 0 {
		r.MaxTasks = DefaultStoreRetryTasks
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = DefaultStoreRetryBytes
	}
	if r.MinBackoff == 0 {
		r.MinBackoff = defaultRetryMinBackoff
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = defaultRetryMaxBackoff
	}
	r.MaxBackoff = max(r.MaxBackoff, r.MinBackoff)
	return r, nil
}

// healItem is one task write the store refused, kept to be written again.
type healItem struct {
	// p is the transition to write; nil for a workflow whose run must be
	// run again (id).
	p  *store.TaskTransitionParams
	id string
	// task is the task as the worker had it: for an activity of a
	// workflow, the journal event of a cancel that won meanwhile.
	task  *store.Task
	size  int64
	since time.Time
	tries int // guarded by healer.mu
}

// healer holds the task writes the store refused and writes them again
// (StoreRetry). Its queue is bounded by StoreRetry.MaxTasks and MaxBytes.
type healer struct {
	e    *Engine
	wake chan struct{}

	mu       sync.Mutex
	items    []*healItem
	bytes    int64
	lastErr  error // the store's last refusal, while items wait
	claimErr error // the last claim's error, nil once a claim succeeds
	left     int   // writes left to start-up recovery: the queue was full
}

func newHealer(e *Engine) *healer { return &healer{e: e, wake: make(chan struct{}, 1)} }

// benign reports whether err is an answer of the store rather than a
// refusal to write: a lost race, a task gone or finished, a lease another
// host took over, a bad request.
func benign(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrExists) ||
		errors.Is(err, store.ErrTaskFinished) || errors.Is(err, store.ErrLeaseLost)
}

// transitionItem is the heal item of transition p of task.
func transitionItem(task *store.Task, p *store.TaskTransitionParams) *healItem {
	size := int64(len(p.Output.Data))
	if p.Error != nil {
		size += int64(len(p.Error.Message) + len(p.Error.Details.Data))
	}
	for _, d := range p.Events {
		size += int64(len(d.Payload))
	}
	for _, d := range p.ParentEvents {
		size += int64(len(d.Payload))
	}
	return &healItem{p: p, id: p.ID, task: task, size: size + 256}
}

// rerunItem is the heal item of a workflow whose run was not committed.
func rerunItem(id string) *healItem { return &healItem{id: id, size: 256} }

// add keeps it, refused with err, to be written again; when the queue is
// full, or the engine is shutting down, the task is left to start-up
// recovery.
func (h *healer) add(it *healItem, err error) {
	e := h.e
	if e.runCtx == nil || e.runCtx.Err() != nil {
		e.log.Warn("store refused a task's write during shutdown; start-up recovery will handle the task", "task_id", it.id, "error", err)
		return
	}
	h.mu.Lock()
	full := len(h.items) >= e.cfg.StoreRetry.MaxTasks || h.bytes+it.size > e.cfg.StoreRetry.MaxBytes
	if full {
		h.left++
	} else {
		it.since = time.Now()
		h.items = append(h.items, it)
		h.bytes += it.size
	}
	h.lastErr = err
	n := len(h.items)
	h.mu.Unlock()
	if full {
		e.log.Error("store refused a task's write and the retry queue is full; start-up recovery will handle the task at the next start",
			"task_id", it.id, "queued", n, "error", err)
		return
	}
	e.log.Warn("store refused a task's write; kept to write again", "task_id", it.id, "queued", n, "error", err)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// claimed records the outcome of a claim: a claim the store refused makes
// the engine not ready until one succeeds.
func (h *healer) claimed(err error) {
	if err != nil && benign(err) {
		err = nil
	}
	h.mu.Lock()
	h.claimErr = err
	h.mu.Unlock()
}

// storeError says why the engine is not ready for the store's sake, or
// returns nil.
func (h *healer) storeError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(h.items) > 0:
		return fmt.Errorf("the store refuses writes: %d task writes wait to be written again (oldest %s ago): %w",
			len(h.items), time.Since(h.items[0].since).Round(time.Millisecond), h.lastErr)
	case h.claimErr != nil:
		return fmt.Errorf("the store refuses to claim tasks: %w", h.claimErr)
	}
	return nil
}

// first returns the oldest waiting item, or nil.
func (h *healer) first() *healItem {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// done removes it, the oldest item.
func (h *healer) done(it *healItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) > 0 && h.items[0] == it {
		h.items[0] = nil
		h.items = h.items[1:]
		h.bytes -= it.size
	}
	if len(h.items) == 0 {
		h.items, h.lastErr = nil, nil
	}
}

// run writes the waiting items again, oldest first, until ctx ends: after
// a refusal it waits MinBackoff, doubling up to MaxBackoff, and tries the
// oldest again.
func (h *healer) run(ctx context.Context) {
	e := h.e
	defer e.wg.Done()
	cfg := e.cfg.StoreRetry
	backoff := cfg.MinBackoff
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		it := h.first()
		if it == nil {
			backoff = cfg.MinBackoff
			select {
			case <-h.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		timer.Reset(backoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			h.mu.Lock()
			n := len(h.items)
			h.mu.Unlock()
			e.log.Warn("shutting down with task writes the store refused; start-up recovery will handle those tasks", "tasks", n)
			return
		}
		h.mu.Lock()
		it.tries++ // read by tests under mu
		h.mu.Unlock()
		err := e.heal(ctx, it)
		switch {
		case err == nil:
			h.done(it)
			backoff = cfg.MinBackoff
			e.log.Info("task write written again", "task_id", it.id, "tries", it.tries, "after", time.Since(it.since).Round(time.Millisecond))
			if h.first() != nil {
				backoff = 0 // the store takes writes again: the next at once
			}
		case benign(err):
			h.done(it)
			e.log.Warn("task write not written again", "task_id", it.id, "error", err)
		default:
			h.mu.Lock()
			h.lastErr = err
			h.mu.Unlock()
			backoff = min(max(2*backoff, cfg.MinBackoff), cfg.MaxBackoff)
			if it.tries&(it.tries-1) == 0 { // tries 1, 2, 4, 8, …: a bounded log
				e.log.Warn("store still refuses a task's write", "task_id", it.id, "tries", it.tries, "error", err)
			}
		}
	}
}

// heal writes it again. A cancel that won meanwhile is carried out
// instead; a task that moved on otherwise needs nothing.
func (e *Engine) heal(ctx context.Context, it *healItem) error {
	if it.p == nil {
		return e.rerunWorkflow(ctx, it.id)
	}
	p := it.p
	var (
		t      *store.Task
		parent *store.Task
		err    error
	)
	start := time.Now()
	if p.WakeParent {
		// An activity's end with its workflow's journal event.
		var res *store.WorkflowChildEndResult
		res, err = e.store.WorkflowChildEnd(ctx, p)
		if res != nil {
			t, parent = res.Task, res.Parent
		}
	} else {
		t, err = e.store.TaskTransition(ctx, p)
	}
	e.metrics.observeWrite("task_transition", time.Since(start))
	if errors.Is(err, store.ErrConflict) {
		if t != nil && t.Status == store.StatusCancelling && p.To != store.StatusCancelled {
			np := &store.TaskTransitionParams{ID: p.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled}
			e.childOutcome(it.task, np)
			it.p = np
			return e.heal(ctx, it)
		}
		return nil // the task moved on: recovered, cancelled, or written after all
	}
	if err != nil {
		return err
	}
	switch {
	case t.Status.IsTerminal():
		e.taskFinished(t)
	case t.Status == store.StatusQueued:
		if p.NotBefore.IsZero() {
			e.sched.notify()
		} else {
			e.sched.wakeAt(p.NotBefore)
		}
	}
	if parent != nil {
		// The end claimed its waiting workflow for this caller, which runs
		// none: the workflow is made claimable again.
		if err := e.rerunWorkflow(ctx, parent.ID); err != nil && !benign(err) {
			e.healer.add(rerunItem(parent.ID), err)
		}
	}
	return nil
}

// rerunWorkflow makes running workflow id, whose run was not committed,
// claimable now: a worker runs it again from its journal. A cancel that
// arrived meanwhile is carried out instead.
func (e *Engine) rerunWorkflow(ctx context.Context, id string) error {
	t, err := e.store.TaskGet(ctx, id)
	if err != nil {
		return err
	}
	switch t.Status {
	case store.StatusCancelling:
		t, err = e.store.TaskTransition(ctx, &store.TaskTransitionParams{
			ID: id, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled,
		})
		if err != nil {
			return err
		}
		e.taskFinished(t)
	case store.StatusRunning:
		e.jcache.Drop(id)
		if err := e.store.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: []string{id}}); err != nil {
			return err
		}
		e.wf.markDue()
		e.sched.notify()
	}
	return nil
}

// StoreError reports why the store keeps the engine from being ready: it
// refused task writes that now wait to be written again, or refused the
// last claim. It returns nil when the store takes writes.
func (e *Engine) StoreError() error { return e.healer.storeError() }

var (
	retryWaitingDesc = prometheus.NewDesc("weft_store_retry_tasks",
		"Task writes the store refused that wait in memory to be written again.", nil, nil)
	retryLeftDesc = prometheus.NewDesc("weft_store_retry_left_total",
		"Task writes the store refused that did not fit the retry queue and were left to start-up recovery.", nil, nil)
)

// healCollector reports the healer's queue at scrape time.
type healCollector struct{ m *Metrics }

func (c healCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- retryWaitingDesc
	ch <- retryLeftDesc
}

func (c healCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.m.healer.Load()
	if h == nil {
		return
	}
	h.mu.Lock()
	waiting, left := len(h.items), h.left
	h.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(retryWaitingDesc, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(retryLeftDesc, prometheus.CounterValue, float64(left))
}
