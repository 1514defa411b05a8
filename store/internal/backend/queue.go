package backend

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Queue is the group commit's queue, the same in both backends: writers
// submit jobs and wait, and one goroutine takes the jobs waiting at once,
// up to the batch size, and hands those whose callers still wait to the
// backend's commit function, which must Finish each of them.
//
// A caller whose context ends before its job was taken gets the context's
// error and the job never runs; once taken, the caller waits for Finish,
// since the job may already be in a batch on its way to the database.
type Queue[W any] struct {
	max       int
	commit    func([]*Job[W])
	closedErr error

	mu      sync.RWMutex // guards closed against sends on jobs
	closed  bool
	jobs    chan *Job[W]
	done    chan struct{} // closed when run returns
	pending atomic.Int64  // jobs submitted and not yet finished or skipped
}

// Job is one submitted write: the backend's work W, run in ctx.
type Job[W any] struct {
	// Ctx is the caller's context.
	Ctx context.Context
	// Work is what the backend runs for the job.
	Work  W
	state atomic.Int32
	done  chan jobResult
}

// jobResult is what Finish hands to the waiting caller.
type jobResult struct {
	touched []string
	err     error
}

const (
	jobPending int32 = iota
	jobTaken
	jobAbandoned
)

// NewQueue starts the queue's goroutine: it takes up to max jobs at a time
// and calls commit with those still wanted, in submission order.
// closedErr is the error of a job submitted after Close.
func NewQueue[W any](max int, closedErr error, commit func([]*Job[W])) *Queue[W] {
	q := &Queue[W]{
		max: max, commit: commit, closedErr: closedErr,
		jobs: make(chan *Job[W], max), done: make(chan struct{}),
	}
	go q.run()
	return q
}

// Submit queues work and waits until the commit function finished its
// job; it returns what Finish was given.
func (q *Queue[W]) Submit(ctx context.Context, work W) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	j := &Job[W]{Ctx: ctx, Work: work, done: make(chan jobResult, 1)}
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return nil, q.closedErr
	}
	q.pending.Add(1)
	select {
	case q.jobs <- j:
	case <-ctx.Done():
		q.pending.Add(-1)
		q.mu.RUnlock()
		return nil, ctx.Err()
	}
	q.mu.RUnlock()
	select {
	case r := <-j.done:
		return r.touched, r.err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobPending, jobAbandoned) {
			return nil, ctx.Err()
		}
		r := <-j.done
		return r.touched, r.err
	}
}

// NewJob returns a job of work in ctx that is not submitted: a commit
// function's tests hand it to the function directly and read its outcome
// with Wait.
func NewJob[W any](ctx context.Context, work W) *Job[W] {
	j := &Job[W]{Ctx: ctx, Work: work, done: make(chan jobResult, 1)}
	j.state.Store(jobTaken)
	return j
}

// Wait waits for the job's Finish and returns what it was given.
func (j *Job[W]) Wait() ([]string, error) {
	r := <-j.done
	return r.touched, r.err
}

// Finish answers the job's caller: err is the job's outcome, touched the
// tasks whose logs it grew. Call it once per job handed to commit.
func (j *Job[W]) Finish(touched []string, err error) {
	j.done <- jobResult{touched: touched, err: err}
}

// Pending is how many submitted jobs are not finished yet.
func (q *Queue[W]) Pending() int64 { return q.pending.Load() }

// Close stops taking jobs and waits until the queued ones are finished.
func (q *Queue[W]) Close(ctx context.Context) error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.jobs)
	}
	q.mu.Unlock()
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d writes still committing: %w", q.pending.Load(), ctx.Err())
	}
}

// Done is closed once Close was called and every queued job finished.
func (q *Queue[W]) Done() <-chan struct{} { return q.done }

func (q *Queue[W]) run() {
	defer close(q.done)
	batch := make([]*Job[W], 0, q.max)
	for {
		j, ok := <-q.jobs
		if !ok {
			return
		}
		batch = append(batch, j)
	drain:
		for len(batch) < q.max {
			select {
			case j, ok := <-q.jobs:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		q.runBatch(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// runBatch takes each job of batch, skipping those whose callers gave up,
// and commits the rest.
func (q *Queue[W]) runBatch(batch []*Job[W]) {
	live := batch[:0:0]
	for _, j := range batch {
		if j.state.CompareAndSwap(jobPending, jobTaken) {
			live = append(live, j)
		} else {
			q.pending.Add(-1)
		}
	}
	if len(live) == 0 {
		return
	}
	// The pending count drops as the jobs are answered.
	defer q.pending.Add(-int64(len(live)))
	q.commit(live)
}
