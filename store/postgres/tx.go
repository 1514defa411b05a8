package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-run/weft/store"
)

// tx is the transaction a write runs in. Its helpers hold all the SQL.
//
// Round trips, not rows, are what a write costs, so a tx pipelines: BEGIN
// goes out with the first statement, and a write whose result the method
// does not need (a status UPDATE on a locked row, a response row, a wait
// row, the events) is queued and sent ahead of the next statement that
// needs an answer, or with the COMMIT. The statements still run one after
// the other, in order, in one transaction: a read sees every write queued
// before it. A status change is then two round trips, the locking read and
// the writes with the COMMIT.
type tx struct {
	db    *DB
	ctx   context.Context
	conn  *pgxpool.Conn
	begun bool
	// queued are the writes waiting for the next round trip.
	queued []queuedStmt
	// touched are the tasks whose logs grew.
	touched []string
	// events are the event rows the transaction wrote, inserted together
	// before the commit (flushEvents).
	events eventRows
	// dbNow is the database's clock, once read (clock).
	dbNow time.Time

	// In a group commit (group.go), job is the index of the job running,
	// sent says whether one of its statements went out, and void that a
	// write queued by an earlier job failed.
	job  int
	sent bool
	void bool
	// ahead are task rows this transaction locked and read ahead for the
	// jobs of a batch (readAhead), each handed out once by getTask.
	ahead map[string]*store.Task
}

// queuedStmt is a write sent later; with one, it must change exactly one
// row (a row this transaction locked, so another count is a bug).
type queuedStmt struct {
	sql  string
	args []any
	one  bool
	// onErr, when set, turns the statement's failure into the method's
	// error (a unique violation into store.ErrExists).
	onErr func(error) error
	// scan, when set, reads the statement's one row (a read queued with
	// the writes: the database's clock).
	scan func(pgx.Row) error
	// job is the job of a group commit that queued the statement.
	job int
}

func (db *DB) runTx(ctx context.Context, fn func(*tx) error) (touched []string, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection left inside a transaction (a failed ROLLBACK) is not
	// idle, and the pool destroys it instead of handing it out again.
	defer conn.Release()
	t := &tx{db: db, ctx: ctx, conn: conn}
	defer func() {
		if err != nil && t.begun {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), db.opts.StatementTimeout)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()
	if err = fn(t); err != nil {
		return nil, err
	}
	t.flushEvents()
	if len(t.queued) > 0 || t.begun {
		t.notify()
	}
	if len(t.queued) == 0 && !t.begun {
		return t.touched, nil // read nothing, wrote nothing
	}
	if err := t.commit(); err != nil {
		return nil, err
	}
	return t.touched, nil
}

// commit sends the queued writes with the COMMIT and checks that it
// committed. The COMMIT runs to its end even when the transaction's
// context ends meanwhile: a write method returns only once it knows
// whether its transaction committed.
func (t *tx) commit() error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), t.db.opts.StatementTimeout)
	defer cancel()
	br, err := t.send(cctx, "COMMIT", nil)
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// COMMIT of a transaction that failed reports ROLLBACK, not an error.
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: the transaction was rolled back (%s)", tag.String())
	}
	t.begun = false
	return nil
}

// send sends BEGIN (once), the queued writes and sql in one round trip,
// checks the queued writes' results, and returns the batch positioned at
// sql's result, which the caller reads and then closes.
func (t *tx) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := !t.begun
	if begin {
		b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	}
	queued := t.queued
	t.queued = nil
	for _, q := range queued {
		b.Queue(q.sql, q.args...)
	}
	b.Queue(sql, args...)
	t.sent = true
	br := t.conn.SendBatch(ctx, b)
	fail := func(err error) (pgx.BatchResults, error) {
		_ = br.Close()
		return nil, err
	}
	if begin {
		t.begun = true // from here on the connection may be in a transaction
		if _, err := br.Exec(); err != nil {
			return fail(err)
		}
	}
	for _, q := range queued {
		if err := t.check(br, q); err != nil {
			if q.job != t.job {
				t.void = true
			}
			return fail(err)
		}
	}
	return br, nil
}

// check reads the result of a queued statement.
func (t *tx) check(br pgx.BatchResults, q queuedStmt) error {
	if q.scan != nil {
		return q.scan(br.QueryRow())
	}
	tag, err := br.Exec()
	if err != nil {
		if q.onErr != nil {
			err = q.onErr(err)
		}
		return err
	}
	if q.one && tag.RowsAffected() != 1 {
		return fmt.Errorf("%s: changed %d rows, want 1", firstWords(q.sql), tag.RowsAffected())
	}
	return nil
}

// firstWords returns the start of a statement, for errors.
func firstWords(sql string) string {
	if len(sql) > 40 {
		return sql[:40] + "…"
	}
	return sql
}

// exec runs a statement now and returns its command tag.
func (t *tx) exec(query string, args ...any) (pgconn.CommandTag, error) {
	br, err := t.send(t.ctx, query, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// later queues a write whose result nobody needs.
func (t *tx) later(query string, args ...any) {
	t.queued = append(t.queued, queuedStmt{sql: query, args: args, job: t.job})
}

// laterOne queues an UPDATE of a row this transaction locked, which must
// change exactly that row.
func (t *tx) laterOne(query string, args ...any) {
	t.queued = append(t.queued, queuedStmt{sql: query, args: args, one: true, job: t.job})
}

// laterInsert queues an INSERT whose unique violation onErr turns into
// the method's error.
func (t *tx) laterInsert(onErr func(error) error, query string, args ...any) {
	t.queued = append(t.queued, queuedStmt{sql: query, args: args, onErr: onErr, job: t.job})
}

// isUnique reports a violation of the unique constraint named constraint.
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

// batchRow is the one-row result of a statement sent by queryRow.
type batchRow struct {
	t    *tx
	br   pgx.BatchResults
	err  error
	done bool
}

func (r *batchRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if r.done {
		return errors.New("row scanned twice")
	}
	r.done = true
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// queryRow runs a statement that returns one row; the caller must scan it
// before the next statement.
func (t *tx) queryRow(query string, args ...any) pgx.Row {
	br, err := t.send(t.ctx, query, args)
	return &batchRow{t: t, br: br, err: err}
}

// batchRows are the rows of a statement sent by query; closing them ends
// the round trip.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}

// query runs a statement returning rows; the caller must close them before
// the next statement.
func (t *tx) query(query string, args ...any) (pgx.Rows, error) {
	br, err := t.send(t.ctx, query, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// scanRow runs a one-row query into dest, turning no row into
// store.ErrNotFound.
func (t *tx) scanRow(query string, args []any, dest ...any) error {
	err := t.queryRow(query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// affected runs a statement now and returns the rows it changed.
func (t *tx) affected(query string, args ...any) (int64, error) {
	tag, err := t.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// touch records that the log of taskID grew, for EventWatch.
func (t *tx) touch(taskID string) { t.touched = append(t.touched, taskID) }

// workAppeared records that the transaction may have made work claimable,
// for WorkWatch.
func (t *tx) workAppeared() { t.touched = append(t.touched, workKey) }

// notify queues the transaction's one notification, sent by the COMMIT to
// every host listening (see watch.go), when it grew a log or made work
// claimable.
func (t *tx) notify() {
	if payload, ok := t.db.watch.payload(t.touched); ok {
		t.later("SELECT pg_notify($1, $2)", t.db.watch.channel, payload)
	}
}

// getTask locks the row of task id for this transaction and returns it:
// every read-modify-write of a task starts here, so writers of one task
// take turns and each sees the row the previous one committed.
func (t *tx) getTask(id string) (*store.Task, error) {
	if task, ok := t.ahead[id]; ok {
		delete(t.ahead, id)
		return task, nil
	}
	task, err := scanTask(t.queryRow("SELECT "+taskColumns+" FROM tasks WHERE id = $1 FOR NO KEY UPDATE", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, store.ErrNotFound)
	}
	return task, err
}

// withTask runs fn on the locked current row of task id.
func (t *tx) withTask(id string, fn func(*store.Task) error) error {
	task, err := t.getTask(id)
	if err != nil {
		return err
	}
	return fn(task)
}
