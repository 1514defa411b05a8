package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

// writer owns the single write connection and runs the group commit loop
// described in the package doc.
type writer struct {
	conn     *sql.Conn
	maxBatch int
	log      hclog.Logger
	observe  func(int, time.Duration)
	watch    *watchers
	ckpt     *checkpointer
	commits  int // since the last checkpoint request; writer goroutine only

	q *backend.Queue[func(*tx) error] // the jobs: each one's transaction function

	stmts map[string]*sql.Stmt // query text → statement on conn; writer goroutine only
	cache *taskCache           // writer goroutine only

	// claimCursor is the owner served last by TaskClaim's round-robin;
	// touched only by jobs, which run on the writer goroutine.
	claimCursor string
}

// job is one write: its transaction function runs inside the batch
// transaction.
type job = backend.Job[func(*tx) error]

func newWriter(conn *sql.Conn, cfg Config, log hclog.Logger, w *watchers, ckpt *checkpointer) *writer {
	wr := &writer{
		conn:     conn,
		ckpt:     ckpt,
		maxBatch: cfg.MaxBatch,
		log:      log,
		observe:  cfg.ObserveCommit,
		watch:    w,
		stmts:    make(map[string]*sql.Stmt),
		cache:    newTaskCache(),
	}
	wr.q = backend.NewQueue(cfg.MaxBatch, store.ErrClosed, wr.runBatch)
	return wr
}

// submit queues fn and waits for the commit of its batch. When ctx ends
// before the writer took the job, the job never runs and ctx's error is
// returned; once taken, submit waits for the outcome.
func (w *writer) submit(ctx context.Context, fn func(*tx) error) error {
	_, err := w.q.Submit(ctx, fn)
	return err
}

// close stops accepting jobs, lets the writer finish the queued ones and
// waits for it.
func (w *writer) close(ctx context.Context) error { return w.q.Close(ctx) }

// closeConn releases the statements and the connection; call after run
// returned.
func (w *writer) closeConn() {
	select {
	case <-w.q.Done():
	default:
		return // still running: leave the connection to the writer
	}
	for _, s := range w.stmts {
		_ = s.Close()
	}
	_ = w.conn.Close()
}

// runBatch commits the jobs of one batch and answers each.
func (w *writer) runBatch(live []*job) {
	start := time.Now()
	errs, touched, err := w.commit(live)
	if err != nil {
		w.cache.reset() // rows cached by the voided batch were never committed
		// The batch as a whole failed (the commit, or the savepoint
		// machinery after an error that ended the transaction): run every
		// job alone so that one job's failure is no other job's.
		w.log.Warn("group commit failed, committing jobs one by one", "jobs", len(live), "error", err)
		for i, j := range live {
			t, jerr, _ := w.commitOne(j)
			errs[i] = jerr
			touched = append(touched, t...)
		}
	}
	if w.observe != nil {
		w.observe(len(live), time.Since(start))
	}
	if w.commits++; w.commits >= checkpointEvery {
		w.commits = 0
		w.ckpt.request()
	}
	w.watch.Notify(touched)
	for i, j := range live {
		j.Finish(nil, errs[i])
	}
}

// commit runs jobs in one transaction, each in a savepoint. It returns each
// job's error and the tasks whose logs grew, or an error that voids the
// whole batch (nothing committed).
func (w *writer) commit(jobs []*job) (errs []error, touched []string, err error) {
	errs = make([]error, len(jobs))
	if len(jobs) == 1 {
		t, jerr, _ := w.commitOne(jobs[0])
		errs[0] = jerr
		return errs, t, nil
	}
	ctx := context.Background()
	if _, err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return errs, nil, fmt.Errorf("begin: %w", err)
	}
	for i, j := range jobs {
		// The job opens its savepoint before its first write (tx.before):
		// a job that fails having only read needs no rollback.
		t := &tx{w: w, ctx: j.Ctx, batched: true}
		jerr := j.Work(t)
		if jerr == nil {
			jerr = t.flushEvents()
		}
		if jerr == nil {
			touched = append(touched, t.touched...)
		} else {
			w.cache.evict(t.cached)
		}
		if !t.savepoint {
			errs[i] = jerr
			continue
		}
		if jerr != nil {
			errs[i] = jerr
			if _, err := w.exec(ctx, "ROLLBACK TO job"); err != nil {
				w.rollback()
				return errs, nil, fmt.Errorf("rollback to savepoint: %w (after %v)", err, jerr)
			}
		}
		if _, err := w.exec(ctx, "RELEASE job"); err != nil {
			w.rollback()
			return errs, nil, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if _, err := w.exec(ctx, "COMMIT"); err != nil {
		w.rollback()
		return errs, nil, fmt.Errorf("commit: %w", err)
	}
	return errs, touched, nil
}

// commitOne runs one job in its own transaction. It returns the tasks
// whose logs grew, the job's error, and a failure of BEGIN or COMMIT (which
// is also the job's error).
func (w *writer) commitOne(j *job) (touched []string, jobErr, txErr error) {
	ctx := context.Background()
	if _, err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		err = fmt.Errorf("begin: %w", err)
		return nil, err, err
	}
	t := &tx{w: w, ctx: j.Ctx}
	err := j.Work(t)
	if err == nil {
		err = t.flushEvents()
	}
	if err != nil {
		w.rollback()
		w.cache.evict(t.cached)
		return nil, err, nil
	}
	if _, err := w.exec(ctx, "COMMIT"); err != nil {
		w.rollback()
		w.cache.reset()
		err = fmt.Errorf("commit: %w", err)
		return nil, err, err
	}
	return t.touched, nil, nil
}

func (w *writer) rollback() {
	if _, err := w.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		w.log.Debug("rollback", "error", err)
	}
}

// stmt returns the cached statement for query on the write connection.
func (w *writer) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := w.stmts[query]; ok {
		return s, nil
	}
	s, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, classify(err)
	}
	w.stmts[query] = s
	return s, nil
}

func (w *writer) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	r, err := s.ExecContext(ctx, args...)
	return r, classify(err)
}

// tx is the transaction a job runs in. Its helpers hold all the SQL; they
// run on the writer goroutine only. The job's context is not used for
// statements: once taken, a job runs to the end of its batch.
type tx struct {
	w         *writer
	ctx       context.Context
	batched   bool     // shares its transaction with other jobs
	savepoint bool     // the job's savepoint is open
	touched   []string // tasks whose logs grew
	cached    []string // tasks this job put in the cache
	// events are the event rows the job wrote, five columns each, inserted
	// when it ends (flushEvents).
	events []any
}

// before opens the job's savepoint ahead of its first write when the job
// shares its transaction, so that its writes can be undone alone.
func (t *tx) before(query string) error {
	if !t.batched || t.savepoint || strings.HasPrefix(query, "SELECT") {
		return nil
	}
	if _, err := t.w.exec(context.Background(), "SAVEPOINT job"); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	t.savepoint = true
	return nil
}

// exec runs a statement.
func (t *tx) exec(query string, args ...any) (sql.Result, error) {
	if err := t.before(query); err != nil {
		return nil, err
	}
	return t.w.exec(context.Background(), query, args...)
}

// queryRow runs a statement that returns one row (a SELECT, or a write
// with RETURNING).
func (t *tx) queryRow(query string, args ...any) (*sql.Row, error) {
	if err := t.before(query); err != nil {
		return nil, err
	}
	s, err := t.w.stmt(context.Background(), query)
	if err != nil {
		return nil, err
	}
	return s.QueryRowContext(context.Background(), args...), nil
}

// query runs a statement returning rows; the caller must close them before
// the next statement.
func (t *tx) query(query string, args ...any) (*sql.Rows, error) {
	if err := t.before(query); err != nil {
		return nil, err
	}
	s, err := t.w.stmt(context.Background(), query)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(context.Background(), args...)
	return rows, classify(err)
}

// scanRow runs a one-row query into dest, turning no row into
// store.ErrNotFound.
func (t *tx) scanRow(query string, args []any, dest ...any) error {
	row, err := t.queryRow(query, args...)
	if err != nil {
		return err
	}
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return classify(err)
	}
	return nil
}

// touch records that the log of taskID grew, for EventWatch.
func (t *tx) touch(taskID string) { t.touched = append(t.touched, taskID) }

// errStale reports an UPDATE of a task row that matched no row: the cached
// row it was based on was stale.
var errStale = errors.New("stale task row")

// execOne runs an UPDATE that must change exactly one row, else errStale.
func (t *tx) execOne(query string, args ...any) error {
	r, err := t.exec(query, args...)
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return errStale
	}
	return nil
}

// getTask returns the current row of task id: cached, or read in this
// transaction.
func (t *tx) getTask(id string) (*store.Task, error) {
	if task, ok := t.w.cache.get(id); ok {
		return task, nil
	}
	row, err := t.queryRow("SELECT "+taskColumns+" FROM tasks WHERE id = ?", id)
	if err != nil {
		return nil, err
	}
	task, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(err)
	}
	t.cachePut(task)
	return task, nil
}

// cachePut records task as the current row of its id.
func (t *tx) cachePut(task *store.Task) {
	t.w.cache.put(task)
	t.cached = append(t.cached, task.ID)
}

// withTask runs fn on the current row of task id. When fn's write finds the
// cached row stale, the row is read again and fn runs once more.
func (t *tx) withTask(id string, fn func(*store.Task) error) error {
	for i := 0; ; i++ {
		task, err := t.getTask(id)
		if err != nil {
			return err
		}
		err = fn(task)
		if errors.Is(err, errStale) && i == 0 {
			t.w.log.Warn("stale cached task row", "task_id", id)
			t.w.cache.evict([]string{id})
			continue
		}
		return err
	}
}
