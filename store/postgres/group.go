package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// group is the group commit of a DB's writes: every write method hands its
// transaction function to one committer goroutine (a backend.Queue), which
// runs the writes waiting at once (up to Options.MaxBatch) in one
// transaction, each in a savepoint of its own, and commits them with one
// COMMIT, one WAL flush and one notification. A write that is alone runs in
// a transaction of its own, as it would without the group.
//
// One committer per DB means this process's writes never wait for each
// other's row locks inside two open transactions, so they cannot deadlock
// each other however the batches mix; other hosts' transactions still can,
// and a deadlock is retried like any other (DB.write).
//
// A job's work is its writeFn: when rowWise, fn changes an existing task
// row only after it locked the row with getTask, and ids are the tasks it
// locks first, so the batch may read those rows ahead (readAhead). A job
// that is not row-wise (a claim, a lease extension: statements over many
// rows) may change any row, so the rows read ahead are dropped before it.
type group struct {
	db *DB
	q  *backend.Queue[*writeFn]
}

// groupJob is one write waiting for the committer.
type groupJob = backend.Job[*writeFn]

func newGroup(db *DB, maxBatch int) *group {
	g := &group{db: db}
	g.q = backend.NewQueue(maxBatch, errClosing, g.runBatch)
	return g
}

// do runs w in the next batch and returns once the batch committed (or
// failed). When ctx ends before the committer took the job, the job never
// runs; once taken, do waits for its outcome.
func (g *group) do(ctx context.Context, w *writeFn) ([]string, error) {
	return g.q.Submit(ctx, w)
}

// errClosing is the error of a write handed to a closed group.
var errClosing = errors.New("store closing")

// close stops taking jobs and waits until the queued ones are done.
func (g *group) close(ctx context.Context) error { return g.q.Close(ctx) }

// runBatch commits the jobs of one batch and answers each.
func (g *group) runBatch(live []*groupJob) {
	start := time.Now()
	if len(live) == 1 {
		j := live[0]
		touched, err := g.db.runTx(j.Ctx, j.Work.fn)
		g.observe(1, start)
		j.Finish(touched, err)
		return
	}
	results, err := g.commit(live)
	if err != nil {
		var pe *pgconn.PgError
		if errors.Is(err, errBatchVoid) || errors.As(err, &pe) || pgconn.SafeToRetry(err) {
			// Nothing of the batch committed (it failed before its COMMIT
			// went out, or the server answered the COMMIT with an error):
			// each job runs alone, so that one job's failure is no other
			// job's.
			g.db.log.Debug("group commit failed, committing its writes one by one", "writes", len(live), "error", err)
			for i, j := range live {
				touched, err := g.db.runTx(j.Ctx, j.Work.fn)
				results[i] = groupResult{touched: touched, err: err}
			}
		} else {
			// Whether the COMMIT took effect is unknown: every job says
			// so, as a write alone would.
			for i := range results {
				results[i] = groupResult{err: err}
			}
		}
	}
	g.observe(len(live), start)
	for i, j := range live {
		j.Finish(results[i].touched, results[i].err)
	}
}

// groupResult is the outcome of one job of a batch: its error, and the
// tasks whose logs it grew.
type groupResult struct {
	touched []string
	err     error
}

// observe reports a commit of writes that began at start.
func (g *group) observe(writes int, start time.Time) {
	if g.db.opts.ObserveCommit != nil {
		g.db.opts.ObserveCommit(writes, time.Since(start))
	}
}

// readAheadSQL locks and reads the rows of tasks a batch's jobs will lock
// first, skipping rows other transactions hold: those the jobs read
// themselves, waiting as they would alone, so that reading ahead never
// waits for anyone.
const readAheadSQL = "SELECT " + taskColumns + " FROM tasks WHERE id = ANY($1) FOR NO KEY UPDATE SKIP LOCKED"

// readAhead locks the rows of ids and keeps them for getTask, which hands
// each out once: the first job that locks a row after this gets it as
// read here, which is the row as it is, since this transaction holds it
// and no job changed it in between (a job that changes a row locks it
// first, so it took it; a job that is not row-wise drops them all).
func (t *tx) readAhead(ids []string) error {
	rows, err := t.query(readAheadSQL, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	t.ahead = make(map[string]*store.Task, len(ids))
	for rows.Next() {
		task, err := scanTask(rows)
		if err != nil {
			return err
		}
		t.ahead[task.ID] = task
	}
	return rows.Err()
}

// errBatchVoid marks a batch that must not commit: a write queued by one
// job failed while a later job's statement went out, so the first job,
// already taken as done, did not happen as it said.
var errBatchVoid = errors.New("a write of an earlier job in the batch failed")

// savepoint names the savepoint of the job running in a batch.
const savepoint = "job"

// commit runs jobs in one transaction, each between SAVEPOINT and
// RELEASE, and commits it. A job that fails is rolled back to its
// savepoint and the others go on. It returns each job's outcome, or an
// error that voids the batch.
func (g *group) commit(jobs []*groupJob) (results []groupResult, err error) {
	results = make([]groupResult, len(jobs))
	ctx := context.Background()
	conn, err := g.db.pool.Acquire(ctx)
	if err != nil {
		return results, err
	}
	defer conn.Release()
	t := &tx{db: g.db, conn: conn}
	defer func() {
		if err != nil && t.begun {
			rctx, cancel := context.WithTimeout(ctx, g.db.opts.StatementTimeout)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()
	var touched []string
	ahead := 0 // jobs up to here had their rows read ahead
	for i, j := range jobs {
		// The job's statements run for the batch: a caller that gives up
		// meanwhile must not cancel the batch's connection.
		t.ctx = context.WithoutCancel(j.Ctx)
		t.job = i
		t.touched = nil
		switch {
		case !j.Work.rowWise:
			t.ahead = nil
		case i >= ahead:
			// The row-wise jobs from here to the next other one: their
			// rows in one round trip.
			var ids []string
			for ahead = i; ahead < len(jobs) && jobs[ahead].Work.rowWise; ahead++ {
				for _, id := range jobs[ahead].Work.ids {
					if id != "" {
						ids = append(ids, id)
					}
				}
			}
			if ahead-i > 1 && len(ids) > 0 {
				if err := t.readAhead(ids); err != nil {
					return results, fmt.Errorf("%w: read ahead: %w", errBatchVoid, err)
				}
			}
		}
		t.sent = false // the read ahead went out for the batch, not for this job
		mark := len(t.queued)
		t.later("SAVEPOINT " + savepoint)
		jerr := j.Work.fn(t)
		if jerr == nil {
			t.flushEvents()
			t.later("RELEASE SAVEPOINT " + savepoint)
		}
		if t.void {
			return results, fmt.Errorf("%w: %w", errBatchVoid, jerr)
		}
		if jerr == nil {
			results[i].touched = t.touched
			touched = append(touched, t.touched...)
			continue
		}
		results[i].err = jerr
		t.events = eventRows{}
		if !t.sent {
			// Nothing of the job went out: drop what it queued.
			t.queued = t.queued[:mark]
			continue
		}
		t.queued = nil // sent before: the previous jobs' writes went with the job's
		t.later("ROLLBACK TO SAVEPOINT " + savepoint)
		t.later("RELEASE SAVEPOINT " + savepoint)
	}
	t.ctx = ctx
	t.job = len(jobs)
	t.touched = touched
	t.notify()
	if err := t.commit(); err != nil {
		if t.void {
			return results, fmt.Errorf("%w: %w", errBatchVoid, err)
		}
		return results, err
	}
	return results, nil
}
