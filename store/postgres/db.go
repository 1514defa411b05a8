package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-run/weft/store"
)

// DB is the PostgreSQL store. It is safe for concurrent use, and several
// DBs (in one process or many) may share one database.
type DB struct {
	opts  Options
	log   hclog.Logger
	pool  *pgxpool.Pool
	watch *watchers
	// group commits the writes (nil for a read-only store, or with
	// Options.MaxBatch 1).
	group *group

	// stopWatch ends the listener and the poller (watch.go), which close
	// listenDone and pollDone when they return.
	stopWatch  context.CancelFunc
	listenDone chan struct{}
	pollDone   chan struct{}

	// claimMu guards claimCursor, the owner TaskClaim's round-robin served
	// last in this process.
	claimMu     sync.Mutex
	claimCursor string

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*DB)(nil)

// Options configures a DB. The zero value gives the defaults.
type Options struct {
	// MaxConns caps the connections of the pool; a call waits for a free
	// one. Defaults to 10.
	MaxConns int32
	// MinConns is the number of connections the pool keeps open when idle.
	// Defaults to 0.
	MinConns int32
	// ConnectTimeout bounds the dial and authentication of one connection.
	// Defaults to 10s.
	ConnectTimeout time.Duration
	// StatementTimeout is the server's statement_timeout on every
	// connection: a statement running longer is cancelled. It also bounds
	// each COMMIT. Defaults to 30s.
	StatementTimeout time.Duration
	// LockTimeout is the server's lock_timeout: a statement waiting longer
	// for a row lock held by another transaction fails. Defaults to 10s.
	LockTimeout time.Duration
	// IdleInTransactionTimeout is the server's
	// idle_in_transaction_session_timeout: a transaction left open and idle
	// this long is ended by the server. Defaults to 60s.
	IdleInTransactionTimeout time.Duration
	// MaxRetries caps how often a transaction that failed with a
	// serialization failure (40001) or a deadlock (40P01) is run again
	// before the call returns ErrRetriesExhausted. Defaults to 10.
	MaxRetries int
	// WatchPollInterval is how often every EventWatch and WorkWatch
	// channel fires even without a notification, so that a notification
	// lost while the listener connection was down delays a watcher by at
	// most this. Defaults to 5s.
	WatchPollInterval time.Duration
	// MaxBatch caps the writes one group commit holds: writes waiting at
	// once run in one transaction, each in a savepoint. It stays below
	// the 64 subtransactions a server session caches, past which every
	// session's snapshots get slower. 1 runs every write alone. Defaults
	// to 48.
	MaxBatch int
	// ObserveCommit, when set, is called after each commit with the
	// number of writes it held and how long it took (for metrics).
	ObserveCommit func(writes int, d time.Duration)
	// Logger receives the store's logs, named "store". Defaults to a null
	// logger.
	Logger hclog.Logger
	// ReadOnly opens the database for reading only, for inspection tools
	// (weft preflight): no migration, every session has
	// default_transaction_read_only on (so the server refuses any write,
	// which fails with ErrReadOnly), no listener connection, and Open
	// refuses a schema whose version is not the one this binary knows
	// (ErrSchemaTooNew for a newer one, ErrSchemaUnknown otherwise).
	// Defaults to false.
	ReadOnly bool
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.MaxConns < 0, o.MinConns < 0, o.MaxRetries < 0, o.ConnectTimeout < 0,
		o.StatementTimeout < 0, o.LockTimeout < 0, o.IdleInTransactionTimeout < 0, o.WatchPollInterval < 0,
		o.MaxBatch < 0:
		return o, fmt.Errorf("%w: postgres: negative option", store.ErrInvalid)
	case o.MaxBatch > maxBatchLimit:
		return o, fmt.Errorf("%w: postgres: MaxBatch %d above %d", store.ErrInvalid, o.MaxBatch, maxBatchLimit)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 48
	}
	if o.MaxConns == 0 {
		o.MaxConns = 10
	}
	if o.MinConns > o.MaxConns {
		return o, fmt.Errorf("%w: postgres: MinConns %d above MaxConns %d", store.ErrInvalid, o.MinConns, o.MaxConns)
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = 30 * time.Second
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = 10 * time.Second
	}
	if o.IdleInTransactionTimeout == 0 {
		o.IdleInTransactionTimeout = time.Minute
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 10
	}
	if o.WatchPollInterval == 0 {
		o.WatchPollInterval = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o, nil
}

// maxBatchLimit is the largest Options.MaxBatch: the subtransactions one
// server session caches (PGPROC_MAX_CACHED_SUBXIDS).
const maxBatchLimit = 64

// Open connects to the database at dsn (a postgres:// URL or a key=value
// connection string), migrates it, and returns the store. It returns
// store.ErrInvalid for a bad dsn or options and ErrSchemaTooNew for a
// database migrated by a newer weft.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = opts.MaxConns
	cfg.MinConns = opts.MinConns
	cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	rp := cfg.ConnConfig.RuntimeParams
	rp["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	rp["lock_timeout"] = strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10)
	rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTransactionTimeout.Milliseconds(), 10)
	rp["timezone"] = "UTC"
	if rp["application_name"] == "" {
		rp["application_name"] = "weft"
	}
	if opts.ReadOnly {
		rp["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db := &DB{opts: opts, log: opts.Logger.Named("store"), pool: pool}
	check := migrate
	if opts.ReadOnly {
		check = checkSchema
	}
	if err := check(ctx, pool, db.log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", redact(cfg), err)
	}
	var schema string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", redact(cfg), err)
	}
	db.watch = newWatchers(channelName(schema))
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	db.stopWatch, db.listenDone, db.pollDone = stop, make(chan struct{}), make(chan struct{})
	if opts.ReadOnly {
		// Nothing is written, so nothing to hear of but the other hosts'
		// commits: the poller alone keeps watchers going.
		close(db.listenDone)
		go db.poll(wctx, opts.WatchPollInterval)
		return db, nil
	}
	lcfg := cfg.ConnConfig.Copy()
	conn, err := db.listenConn(ctx, lcfg)
	if err != nil {
		stop()
		pool.Close()
		return nil, fmt.Errorf("open store %s: listen: %w", redact(cfg), err)
	}
	go db.listen(wctx, lcfg, conn)
	go db.poll(wctx, opts.WatchPollInterval)
	if opts.MaxBatch > 1 {
		db.group = newGroup(db, opts.MaxBatch)
	}
	return db, nil
}

// parseDSN parses a connection string, with store.ErrInvalid for a bad
// one.
func parseDSN(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: %v", store.ErrInvalid, err)
	}
	return cfg, nil
}

// CheckDSN reports, with store.ErrInvalid, a connection string Open would
// refuse before connecting: a malformed URL, an unknown sslmode, a bad
// port. It connects to nothing.
func CheckDSN(dsn string) error {
	_, err := parseDSN(dsn)
	return err
}

// Redact names the database of dsn without its password, for logs; a dsn
// that does not parse is named "postgres".
func Redact(dsn string) string {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "postgres"
	}
	return redact(cfg)
}

// channelName is the notification channel of the store in schema: at most
// 63 bytes, the longest identifier.
func channelName(schema string) string {
	c := "weft_" + schema
	if len(c) > 63 {
		c = c[:63]
	}
	return c
}

// redact names the database of cfg without its password.
func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Close closes the pool once every call in progress has released its
// connection. It is idempotent. When ctx ends first it returns ctx's error
// and the pool goes on closing in the background.
func (db *DB) Close(ctx context.Context) error {
	db.closed.Store(true)
	db.closeOnce.Do(func() {
		if db.group != nil {
			if err := db.group.close(ctx); err != nil {
				db.closeErr = fmt.Errorf("close store: %w", err)
			}
		}
		db.stopWatch()
		<-db.listenDone
		<-db.pollDone
		done := make(chan struct{})
		go func() {
			db.pool.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			db.closeErr = fmt.Errorf("close store: calls still hold connections: %w", ctx.Err())
		}
	})
	return db.closeErr
}

// errRetry asks write to run the transaction again: a unique row that a
// concurrent transaction inserted first (a module version).
var errRetry = errors.New("concurrent insert, retry")

// write runs fn in one READ COMMITTED transaction and commits it. A
// serialization failure, a deadlock or errRetry runs it again from the
// start, up to Options.MaxRetries times, so fn must reset whatever it
// captured. After the commit the tasks whose logs grew are published to
// EventWatch.
func (db *DB) write(ctx context.Context, fn func(*tx) error) error {
	return db.writeWith(ctx, &writeFn{fn: fn})
}

// writeFn is a write's transaction function and what a group commit may
// know of it (group).
type writeFn struct {
	fn      func(*tx) error
	rowWise bool
	ids     []string
}

// writeRows is write for a row-wise fn: it changes an existing task row
// only after locking it with getTask, and ids are the tasks it locks
// first (see group).
func (db *DB) writeRows(ctx context.Context, fn func(*tx) error, ids ...string) error {
	return db.writeWith(ctx, &writeFn{fn: fn, rowWise: true, ids: ids})
}

// writeWith is write for w.
func (db *DB) writeWith(ctx context.Context, w *writeFn) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	if db.opts.ReadOnly {
		return fmt.Errorf("%w: store opened read-only", ErrReadOnly)
	}
	var last error
	for attempt := 0; attempt <= db.opts.MaxRetries; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return err
			}
		}
		touched, err := db.runWrite(ctx, w)
		if err == nil {
			db.watch.publish(touched)
			return nil
		}
		if !retryable(err) {
			if readOnlyRefusal(err) {
				return fmt.Errorf("%w: %w", ErrReadOnly, err)
			}
			return db.closedOr(err)
		}
		db.log.Debug("transaction retried", "attempt", attempt+1, "error", err)
		last = err
	}
	return fmt.Errorf("%w: %d attempts: %w", ErrRetriesExhausted, db.opts.MaxRetries+1, last)
}

// runWrite runs fn in the group commit, or alone without one.
func (db *DB) runWrite(ctx context.Context, w *writeFn) ([]string, error) {
	if db.group == nil {
		return db.runTx(ctx, w.fn)
	}
	touched, err := db.group.do(ctx, w)
	if errors.Is(err, errClosing) {
		return nil, store.ErrClosed
	}
	return touched, err
}

// backoff waits before retry attempt n: a jittered delay doubling from 1ms
// up to 100ms.
func backoff(ctx context.Context, n int) error {
	d := min(time.Millisecond<<min(n, 7), 100*time.Millisecond)
	d = d/2 + rand.N(d/2+1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryable reports a failure after which the whole transaction may run
// again: a serialization failure, a deadlock, or errRetry.
func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}

// readOnlyRefusal reports the server's refusal of a write in a read-only
// transaction (25006).
func readOnlyRefusal(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "25006"
}

// closedOr returns ErrClosed for a failure of a store closed meanwhile, and
// err otherwise.
func (db *DB) closedOr(err error) error {
	if db.closed.Load() && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("%w: %v", store.ErrClosed, err)
	}
	return err
}

// queryRow runs a one-row read outside any transaction.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) (pgx.Row, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	return db.pool.QueryRow(ctx, query, args...), nil
}

// query runs a read outside any transaction.
func (db *DB) query(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, db.closedOr(err)
	}
	return rows, nil
}

// Stat returns the statistics of the connection pool, for metrics.
func (db *DB) Stat() *pgxpool.Stat { return db.pool.Stat() }
