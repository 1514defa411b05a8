package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/weft-run/weft/store"
)

// FileName is the name of the database file inside a weft data directory.
const FileName = "weft.db"

// DB is the SQLite store. It is safe for concurrent use.
type DB struct {
	cfg    Config
	log    hclog.Logger
	read   *sql.DB // read-only pool
	wdb    *sql.DB // the single write connection's pool (nil when read-only)
	w      *writer // nil when read-only
	cdb    *sql.DB // the checkpointer's connection (nil when read-only)
	ckpt   *checkpointer
	watch  *watchers
	rstmts sync.Map // query text → *sql.Stmt on read

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*DB)(nil)

// Config configures a DB.
type Config struct {
	// Path is the database file. Required.
	Path string
	// Synchronous is SQLite's synchronous setting: FULL, NORMAL or OFF.
	// Only FULL makes every commit survive a power loss. Defaults to FULL.
	Synchronous string
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before giving up. Defaults to 5s.
	BusyTimeout time.Duration
	// ReadOnly opens the database for reading only: no migration, no
	// writer, the file is never modified (pre-deploy preflight). Write
	// methods return ErrReadOnly. Defaults to false.
	ReadOnly bool
	// MaxBatch caps the jobs of one group commit. Defaults to 512.
	MaxBatch int
	// ReadConns is the size of the read-only pool. Defaults to 4.
	ReadConns int
	// SkipQuickCheck skips PRAGMA quick_check at Open, which reads the whole
	// file to detect damage. Defaults to false.
	SkipQuickCheck bool
	// Logger receives the store's logs, named "store". Defaults to a null
	// logger.
	Logger hclog.Logger
	// ObserveCommit, when set, is called by the writer after every group
	// commit with the number of jobs and the time from BEGIN to the end of
	// COMMIT (store commit latency). It must not block. Defaults to nil.
	ObserveCommit func(jobs int, d time.Duration)
}

func (c Config) withDefaults() (Config, error) {
	if c.Path == "" {
		return c, fmt.Errorf("%w: sqlite: Config.Path is required", store.ErrInvalid)
	}
	switch strings.ToUpper(c.Synchronous) {
	case "":
		c.Synchronous = "FULL"
	case "FULL", "NORMAL", "OFF", "EXTRA":
		c.Synchronous = strings.ToUpper(c.Synchronous)
	default:
		return c, fmt.Errorf("%w: sqlite: unknown synchronous setting %q", store.ErrInvalid, c.Synchronous)
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 512
	}
	if c.ReadConns <= 0 {
		c.ReadConns = 4
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c, nil
}

// Open opens (creating it if needed) and migrates the database at
// cfg.Path, and starts the writer. It returns ErrCorrupt for a damaged
// file or one that is not a weft database, and ErrSchemaTooNew for a
// database from a newer weft.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	db := &DB{cfg: cfg, log: cfg.Logger.Named("store"), watch: newWatchers()}
	if cfg.ReadOnly {
		if _, err := os.Stat(cfg.Path); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	} else if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := db.open(ctx); err != nil {
		_ = db.Close(context.Background()) // stops a writer already started
		return nil, fmt.Errorf("open store %s: %w", cfg.Path, err)
	}
	return db, nil
}

// The connections of a DB.
const (
	connWriter = iota
	connReader
	connCheckpoint
)

// dsn builds the connection string of a connection kind. Each setting is
// applied by the driver on every new connection, before it is used.
func (db *DB) dsn(kind int) string {
	readOnly := kind == connReader
	q := url.Values{}
	// busy_timeout: wait this long for another connection's lock instead of
	// failing at once with SQLITE_BUSY (the writer, a checkpoint, or a
	// second process such as weft preflight).
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", db.cfg.BusyTimeout.Milliseconds()))
	if readOnly {
		// query_only: a read connection refuses every write, so nothing but
		// the writer can change the file.
		q.Add("_pragma", "query_only(1)")
		if db.cfg.ReadOnly {
			// mode=ro: the whole store is read-only; SQLite opens the file
			// without write access and never creates it.
			q.Set("mode", "ro")
		}
		return "file:" + uriPath(db.cfg.Path) + "?" + q.Encode()
	}
	// foreign_keys: enforce REFERENCES clauses (events and responses belong
	// to a task, cascading on delete); SQLite leaves them off by default.
	q.Add("_pragma", "foreign_keys(1)")
	// journal_mode=WAL: readers never block the writer and the writer never
	// blocks readers; a commit appends to the log, which is one fsync.
	q.Add("_pragma", "journal_mode(WAL)")
	// synchronous: FULL fsyncs the WAL at every commit, so a commit that
	// returned survives a power loss (NORMAL would only survive a crash of
	// the process).
	q.Add("_pragma", "synchronous("+db.cfg.Synchronous+")")
	// temp_store=MEMORY: the statement journals of the group commit's
	// savepoints stay in memory instead of temporary files.
	q.Add("_pragma", "temp_store(MEMORY)")
	if kind == connWriter {
		// wal_autocheckpoint: the checkpointer's connection copies the WAL
		// back into the database file; the writer does it itself only if
		// the WAL grows this large.
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walFallbackPages))
	}
	return "file:" + uriPath(db.cfg.Path) + "?" + q.Encode()
}

// uriPath escapes a file path for a file: URI.
func uriPath(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(p)
}

func (db *DB) open(ctx context.Context) error {
	var err error
	if !db.cfg.ReadOnly {
		db.wdb, err = sql.Open("sqlite", db.dsn(connWriter))
		if err != nil {
			return err
		}
		// One write connection, held by the writer for the life of the DB.
		db.wdb.SetMaxOpenConns(1)
		db.wdb.SetMaxIdleConns(1)
		db.wdb.SetConnMaxLifetime(0)
		conn, err := db.wdb.Conn(ctx)
		if err != nil {
			return classify(err)
		}
		if err := checkFile(ctx, conn, db.cfg.SkipQuickCheck); err != nil {
			_ = conn.Close()
			return err
		}
		if err := migrate(ctx, conn, db.log); err != nil {
			_ = conn.Close()
			return err
		}
		db.cdb, err = sql.Open("sqlite", db.dsn(connCheckpoint))
		if err != nil {
			_ = conn.Close()
			return err
		}
		db.cdb.SetMaxOpenConns(1)
		cconn, err := db.cdb.Conn(ctx)
		if err != nil {
			_ = conn.Close()
			return classify(err)
		}
		db.ckpt = newCheckpointer(cconn, db.log)
		db.w = newWriter(conn, db.cfg, db.log, db.watch, db.ckpt)
	}
	db.read, err = sql.Open("sqlite", db.dsn(connReader))
	if err != nil {
		return err
	}
	db.read.SetMaxOpenConns(db.cfg.ReadConns)
	db.read.SetMaxIdleConns(db.cfg.ReadConns)
	if db.cfg.ReadOnly {
		conn, err := db.read.Conn(ctx)
		if err != nil {
			return classify(err)
		}
		defer func() { _ = conn.Close() }()
		if err := checkFile(ctx, conn, db.cfg.SkipQuickCheck); err != nil {
			return err
		}
		if err := checkVersion(ctx, conn); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the writer after the jobs already submitted, then closes every
// connection. It is idempotent. When ctx ends first it returns an error
// saying what the writer was still doing.
func (db *DB) Close(ctx context.Context) error {
	db.closed.Store(true)
	db.closeOnce.Do(func() {
		if db.w != nil {
			if err := db.w.close(ctx); err != nil {
				db.closeErr = fmt.Errorf("close store: %w", err)
				return
			}
		}
		db.closeErr = db.closeAll()
	})
	return db.closeErr
}

func (db *DB) closeAll() error {
	var errs []error
	db.rstmts.Range(func(_, v any) bool {
		_ = v.(*sql.Stmt).Close()
		return true
	})
	if db.w != nil {
		db.w.closeConn()
	}
	if db.ckpt != nil {
		db.ckpt.close()
	}
	if db.cdb != nil {
		errs = append(errs, db.cdb.Close())
	}
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.wdb != nil {
		errs = append(errs, db.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// write runs fn as one job of a group commit and returns its error.
func (db *DB) write(ctx context.Context, fn func(*tx) error) error {
	if db.w == nil {
		return ErrReadOnly
	}
	return db.w.submit(ctx, fn)
}

// rstmt returns the cached read statement for query.
func (db *DB) rstmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	if s, ok := db.rstmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := db.read.PrepareContext(ctx, query)
	if err != nil {
		return nil, classify(err)
	}
	if prev, loaded := db.rstmts.LoadOrStore(query, s); loaded {
		_ = s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// queryRow runs a one-row read.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	s, err := db.rstmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryRowContext(ctx, args...), nil
}

// query runs a read.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := db.rstmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, args...)
	if err != nil {
		return nil, classify(err)
	}
	return rows, nil
}

// checkFile turns a damaged or foreign file into ErrCorrupt.
func checkFile(ctx context.Context, conn *sql.Conn, skipQuickCheck bool) error {
	// Reading the schema is the first access to the file: a file that is
	// not a database fails here.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return classify(err)
	}
	if skipQuickCheck {
		return nil
	}
	rows, err := conn.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return classify(err)
		}
		if line != "ok" && len(problems) < 5 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: integrity check failed: %s", ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// classify maps SQLite's damage codes to ErrCorrupt, keeping the
// driver's message.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	return err
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
	}
	return false
}
