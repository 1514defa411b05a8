package postgres_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/store/storetest"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite testdata/schema.sql from the migrations")

// The helpers of pgtest, under their short names.
var (
	NewDatabase = pgtest.NewDatabase
	NewSchema   = pgtest.NewSchema
)

// MustOpen opens a store on dsn, closed when tb ends.
func MustOpen(tb testing.TB, dsn string) *postgres.DB {
	tb.Helper()
	return mustOpenWith(tb, dsn, postgres.Options{})
}

// mustOpenWith opens a store on dsn with opts (and the test's logger),
// closed when tb ends.
func mustOpenWith(tb testing.TB, dsn string, opts postgres.Options) *postgres.DB {
	tb.Helper()
	opts.Logger = testLogger(tb)
	db, err := postgres.Open(tb.Context(), dsn, opts)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(tb, db.Close(ctx))
	})
	return db
}

// testLogger writes through tb.Log.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Warn, Output: logWriter{tb}})
}

type logWriter struct{ tb testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestConformance(t *testing.T) {
	dsn := NewDatabase(t)
	storetest.Run(t, func(tb testing.TB) store.Store {
		return MustOpen(tb, NewSchema(tb, dsn))
	})
}

// schemaDump describes the tables, columns, constraints and indexes of the
// schema the connection uses, one statement-like line each, sorted.
func schemaDump(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var lines []string
	collect := func(q string) {
		rows, err := conn.Query(t.Context(), q)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		lines = append(lines, got...)
		lines = append(lines, "")
	}
	collect(`SELECT format('COLUMN %s.%s %s%s%s%s', c.table_name, c.column_name,
			CASE WHEN c.data_type = 'ARRAY' THEN substr(c.udt_name, 2) || '[]' ELSE c.data_type END,
			CASE WHEN c.collation_name IS NOT NULL THEN ' COLLATE ' || c.collation_name ELSE '' END,
			CASE WHEN c.is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END,
			CASE WHEN c.column_default IS NOT NULL THEN ' DEFAULT ' || c.column_default ELSE '' END)
		FROM information_schema.columns c
		WHERE c.table_schema = current_schema()
		ORDER BY c.table_name, c.ordinal_position`)
	collect(`SELECT format('CONSTRAINT %s ON %s %s', con.conname, rel.relname, pg_get_constraintdef(con.oid))
		FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
		WHERE rel.relnamespace = current_schema()::regnamespace
		ORDER BY rel.relname, con.conname`)
	collect(`SELECT regexp_replace(indexdef, ' ON \S+\.', ' ON ') FROM pg_indexes
		WHERE schemaname = current_schema() ORDER BY tablename, indexname`)
	return strings.Join(lines, "\n")
}

func TestSchema(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	db := MustOpen(t, dsn)
	require.NoError(t, db.Close(t.Context()))

	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	var version int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT max(version) FROM schema_migrations").Scan(&version))
	require.NoError(t, conn.Close(t.Context()))
	require.Equal(t, postgres.SchemaVersion(), version)

	dump := schemaDump(t, dsn)
	golden := filepath.Join("testdata", "schema.sql")
	if *updateSchema {
		require.NoError(t, os.WriteFile(golden, []byte(dump), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), dump, "the migrated schema differs from testdata/schema.sql (run with -update-schema after a new migration)")
}

func TestOpen(t *testing.T) {
	database := NewDatabase(t)

	t.Run("ReopenKeepsData", func(t *testing.T) {
		dsn := NewSchema(t, database)
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
		require.NoError(t, err)
		task := storetest.MustInsertTask(t, db, nil)
		require.NoError(t, db.Close(t.Context()))
		require.NoError(t, db.Close(t.Context()), "Close is idempotent")
		_, err = db.TaskGet(t.Context(), task.ID)
		require.ErrorIs(t, err, store.ErrClosed)
		_, err = db.TaskInsert(t.Context(), &store.TaskInsertParams{Module: "m", ModuleDigest: storetest.Digest, Function: "f"})
		require.ErrorIs(t, err, store.ErrClosed)

		again := MustOpen(t, dsn)
		storetest.MustCheckLog(t, again, task.ID)
	})

	t.Run("SchemaTooNew", func(t *testing.T) {
		dsn := NewSchema(t, database)
		db := MustOpen(t, dsn)
		task := storetest.MustInsertTask(t, db, nil)
		require.NoError(t, db.Close(t.Context()))
		conn, err := pgx.Connect(t.Context(), dsn)
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		_, err = conn.Exec(t.Context(), "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'future', now())", postgres.SchemaVersion()+1)
		require.NoError(t, err)
		before := schemaDump(t, dsn)

		_, err = postgres.Open(t.Context(), dsn, postgres.Options{})
		require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
		require.ErrorContains(t, err, "upgrade weft")
		require.NotContains(t, err.Error(), "password")
		require.Equal(t, before, schemaDump(t, dsn), "the newer database is left unchanged")

		_, err = conn.Exec(t.Context(), "DELETE FROM schema_migrations WHERE name = 'future'")
		require.NoError(t, err)
		storetest.MustCheckLog(t, MustOpen(t, dsn), task.ID)
	})

	t.Run("ConcurrentOpens", func(t *testing.T) {
		// Hosts starting together against a new database: the migration
		// lock lets exactly one apply each migration.
		dsn := NewSchema(t, database)
		const n = 4
		dbs := make([]*postgres.DB, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dbs[i], errs[i] = postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 2})
			}()
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			defer func() { _ = dbs[i].Close(context.Background()) }()
		}
		conn, err := pgx.Connect(t.Context(), dsn)
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		var rows, distinct, newest int
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT version), max(version) FROM schema_migrations").Scan(&rows, &distinct, &newest))
		require.Equal(t, distinct, rows, "each migration applied once")
		require.Equal(t, postgres.SchemaVersion(), newest)
		res, err := dbs[0].ServiceInit(t.Context(), &store.ServiceInitParams{})
		require.NoError(t, err)
		require.True(t, res.Created)
		res, err = dbs[1].ServiceInit(t.Context(), &store.ServiceInitParams{})
		require.NoError(t, err)
		require.False(t, res.Created, "the second host reads the identity the first created")
	})

	t.Run("BadOptions", func(t *testing.T) {
		_, err := postgres.Open(t.Context(), "postgres://%zz", postgres.Options{})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = postgres.Open(t.Context(), database, postgres.Options{MaxConns: -1})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = postgres.Open(t.Context(), database, postgres.Options{MaxConns: 2, MinConns: 3})
		require.ErrorIs(t, err, store.ErrInvalid)
	})

	t.Run("StatementTimeout", func(t *testing.T) {
		dsn := NewSchema(t, database)
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{StatementTimeout: 1500 * time.Millisecond, LockTimeout: 750 * time.Millisecond})
		require.NoError(t, err)
		defer func() { _ = db.Close(context.Background()) }()
		conn, err := pgx.Connect(t.Context(), dsn)
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		task := storetest.MustInsertTask(t, db, nil)
		// Another session holds the task's row: the store's write gives up
		// after the lock timeout instead of waiting for ever.
		tx, err := conn.Begin(t.Context())
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		_, err = tx.Exec(t.Context(), "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", task.ID)
		require.NoError(t, err)
		start := time.Now()
		_, _, err = db.TaskCancel(t.Context(), task.ID)
		require.ErrorContains(t, err, "lock timeout")
		require.Less(t, time.Since(start), 5*time.Second)
		require.NoError(t, tx.Rollback(t.Context()))
		_, changed, err := db.TaskCancel(t.Context(), task.ID)
		require.NoError(t, err)
		require.True(t, changed)
	})
}

// TestRetry checks that a transaction the server aborts as a deadlock
// victim runs again. Another session holds the parent workflow's row; the
// child's completion locks the child, then waits for the parent (to append
// activity.completed to its log); the other session then asks for the
// child's row. The store's backend detects the cycle first (the other
// session's deadlock_timeout is far longer) and aborts the store's
// transaction, whose retry succeeds once the other session is done.
func TestRetry(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	var logs syncBuffer
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs}),
	})
	require.NoError(t, err)
	defer func() { _ = db.Close(context.Background()) }()
	parent := storetest.MustRunning(t, db, &store.TaskInsertParams{Kind: store.KindWorkflow})
	child := storetest.MustRunning(t, db, &store.TaskInsertParams{ParentTaskID: parent.ID})

	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), "SET LOCAL deadlock_timeout = '30s'")
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", parent.ID)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := db.TaskTransition(t.Context(), &store.TaskTransitionParams{
			ID: child.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			ParentEvents: []store.EventDraft{{Type: "activity.completed"}},
		})
		done <- err
	}()
	// Wait until the store's transaction holds the child and waits for the
	// parent, then close the cycle.
	watch, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer func() { _ = watch.Close(context.Background()) }()
	require.Eventually(t, func() bool {
		var waiting bool
		err := watch.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid())`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond)
	_, err = tx.Exec(t.Context(), "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", child.ID)
	require.NoError(t, err, "the store's transaction is the victim, not this one")
	require.NoError(t, tx.Commit(t.Context()))

	require.NoError(t, <-done)
	require.Contains(t, logs.String(), "transaction retried")
	require.Contains(t, logs.String(), "40P01")
	require.Equal(t, store.StatusCompleted, storetest.MustCheckLog(t, db, child.ID).Status)
	got := storetest.MustCheckLog(t, db, parent.ID)
	events := storetest.MustEvents(t, db, parent.ID)
	require.Equal(t, "activity.completed", events[got.LastSeq].Type)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHosts runs two stores on one database, as two hosts would: claims
// and takeovers never hand one task to both, and appends from both to one task's log
// leave no gap.
func TestHosts(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	a, b := MustOpen(t, dsn), MustOpen(t, dsn)
	hosts := []*postgres.DB{a, b}
	ctx := t.Context()

	const n = 300
	for i := range n {
		storetest.MustInsertTask(t, hosts[i%2], &store.TaskInsertParams{OwnerClientID: []string{"cli_a", "cli_b", "cli_c"}[i%3]})
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				host := []string{"host-a", "host-b"}[w%2]
				claimed, err := hosts[w%2].TaskClaim(ctx, &store.TaskClaimParams{Limit: 5, Host: host})
				if err != nil {
					t.Error(err)
					return
				}
				if len(claimed) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claimed {
					seen[c.ID]++
					if c.Lease.Host != host || c.Lease.Token != 1 {
						t.Errorf("task %s claimed by %s with lease %+v", c.ID, host, c.Lease)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, n, "every task claimed")
	for id, k := range seen {
		require.Equal(t, 1, k, "task %s claimed %d times", id, k)
	}

	// Hosts reclaiming at once never take over one task twice.
	const expired = 40
	for range expired {
		storetest.MustInsertTask(t, a, &store.TaskInsertParams{
			OnRestart: store.OnRestartResume, Start: true, Host: "host-dead", LeaseTTL: time.Millisecond,
		})
	}
	time.Sleep(30 * time.Millisecond)
	taken := map[string]string{}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("host-%d", w)
			for {
				res, err := hosts[w%2].TaskReclaim(ctx, &store.TaskReclaimParams{Host: host, Limit: 3})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Resumed) == 0 {
					return
				}
				mu.Lock()
				for _, r := range res.Resumed {
					if prev, ok := taken[r.ID]; ok {
						t.Errorf("task %s taken over by %s and %s", r.ID, prev, host)
					}
					taken[r.ID] = host
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, taken, expired)

	task := storetest.MustRunning(t, a, nil)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := hosts[w%2].EventAppend(ctx, &store.EventAppendParams{
					TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}, {Type: store.EventLog}},
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(2+8*25*2), storetest.MustCheckLog(t, b, task.ID).LastSeq)
}

// TestHostsWatch runs two stores on one database, as two hosts would, each
// without the poll: a watch on one fires for the commits of the other,
// through the notifications alone, and again when its listener connection
// is cut and comes back.
func TestHostsWatch(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	open := func() *postgres.DB {
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{Logger: testLogger(t), WatchPollInterval: time.Hour})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close(context.Background())) })
		return db
	}
	a, b := open(), open()
	ctx := t.Context()
	fired := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal: %s", what)
		}
	}
	quiet := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("a signal: %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	drain := func(ch <-chan struct{}) {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}

	work, stopWork := b.WorkWatch()
	defer stopWork()
	task := storetest.MustInsertTask(t, a, nil)
	fired(work, "work watch on B after a task was queued through A")

	events, stop := b.EventWatch(task.ID)
	defer stop()
	other, stopOther := b.EventWatch(storetest.MustInsertTask(t, b, nil).ID)
	defer stopOther()
	drain(events)
	drain(other)
	_, err := a.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "signal"}}})
	require.NoError(t, err)
	fired(events, "event watch on B after an append through A")
	quiet(other, "event watch of another task")
	list, err := b.EventList(ctx, &store.EventListParams{TaskID: task.ID, From: 1})
	require.NoError(t, err)
	require.Len(t, list, 1)

	// Cut B's listener: its watchers fire when it is back, since what was
	// notified meanwhile is lost.
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer func() { _ = admin.Close(context.Background()) }()
	drain(events)
	tag, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`)
	require.NoError(t, err)
	require.EqualValues(t, 2, tag.RowsAffected(), "one listener per store")
	fired(events, "event watch on B after its listener reconnected")
	time.Sleep(300 * time.Millisecond)
	drain(events)
	_, err = a.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "signal"}}})
	require.NoError(t, err)
	fired(events, "event watch on B after an append through A, once reconnected")
}

// TestCancelledWrite checks that a write whose context ends while it waits
// for a row lock returns at once and leaves no connection inside a
// transaction.
func TestCancelledWrite(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	db := MustOpen(t, dsn)
	task := storetest.MustInsertTask(t, db, nil)
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", task.ID)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = db.TaskCancel(ctx, task.ID)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second)
	require.NoError(t, tx.Rollback(t.Context()))

	for range 3 {
		_, err := db.EventAppend(t.Context(), &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}})
		require.NoError(t, err)
	}
	var stuck int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'weft' AND state LIKE 'idle in transaction%'`).Scan(&stuck))
	require.Zero(t, stuck, "a pooled connection was left inside a transaction")
	require.Equal(t, int64(3), storetest.MustCheckLog(t, db, task.ID).LastSeq)
}
