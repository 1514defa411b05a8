package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite testdata/schema.sql from the migrations")

// MustOpen opens a store on path, closed when tb ends.
func MustOpen(tb testing.TB, path string) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), sqlite.Config{Path: path, Logger: testLogger(tb)})
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
	storetest.Run(t, func(tb testing.TB) store.Store {
		return MustOpen(tb, filepath.Join(tb.TempDir(), "weft.db"))
	})
}

func TestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	db := MustOpen(t, path)
	require.NoError(t, db.Close(t.Context()))

	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { _ = raw.Close() }()
	rows, err := raw.QueryContext(t.Context(), `SELECT sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY type DESC, name`)
	require.NoError(t, err)
	defer rows.Close()
	var dump strings.Builder
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		dump.WriteString(s + ";\n\n")
	}
	require.NoError(t, rows.Err())

	var version int
	require.NoError(t, raw.QueryRowContext(t.Context(), "SELECT max(version) FROM schema_migrations").Scan(&version))
	require.Equal(t, sqlite.SchemaVersion(), version)

	golden := filepath.Join("testdata", "schema.sql")
	if *updateSchema {
		require.NoError(t, os.WriteFile(golden, []byte(dump.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), dump.String(), "the migrated schema differs from testdata/schema.sql (run with -update-schema after a new migration)")
}

func TestOpen(t *testing.T) {
	t.Run("ReopenKeepsData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "weft.db")
		db, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		require.NoError(t, err)
		task := storetest.MustInsertTask(t, db, nil)
		require.NoError(t, db.Close(t.Context()))
		require.NoError(t, db.Close(t.Context()), "Close is idempotent")
		_, err = db.TaskGet(t.Context(), task.ID)
		require.ErrorIs(t, err, store.ErrClosed)
		_, err = db.TaskInsert(t.Context(), &store.TaskInsertParams{Module: "m", ModuleDigest: storetest.Digest, Function: "f"})
		require.ErrorIs(t, err, store.ErrClosed)

		again := MustOpen(t, path)
		storetest.MustCheckLog(t, again, task.ID)
	})

	t.Run("SchemaTooNew", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "weft.db")
		db := MustOpen(t, path)
		task := storetest.MustInsertTask(t, db, nil)
		require.NoError(t, db.Close(t.Context()))
		raw, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		_, err = raw.ExecContext(t.Context(), "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)", sqlite.SchemaVersion()+1)
		require.NoError(t, err)
		require.NoError(t, raw.Close())
		before := mustSum(t, path)

		for _, ro := range []bool{false, true} {
			_, err = sqlite.Open(t.Context(), sqlite.Config{Path: path, ReadOnly: ro})
			require.ErrorIs(t, err, sqlite.ErrSchemaTooNew)
			require.ErrorContains(t, err, "upgrade weft")
		}
		require.Equal(t, before, mustSum(t, path), "the newer database is left unchanged")

		// Remove the future row and the data is all there.
		raw, err = sql.Open("sqlite", path)
		require.NoError(t, err)
		_, err = raw.ExecContext(t.Context(), "DELETE FROM schema_migrations WHERE name = 'future'")
		require.NoError(t, err)
		require.NoError(t, raw.Close())
		storetest.MustCheckLog(t, MustOpen(t, path), task.ID)
	})

	t.Run("MigrationLandedLater", func(t *testing.T) {
		// A database migrated past a number that was missing then (a
		// migration of a line of work that landed later) gets it at the
		// next start: here 0010, undone and unrecorded under 0012.
		path := filepath.Join(t.TempDir(), "weft.db")
		require.NoError(t, MustOpen(t, path).Close(t.Context()))
		raw, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		for _, q := range []string{
			"DROP INDEX tasks_workflow_open", "DROP INDEX tasks_workflow_runs",
			"ALTER TABLE tasks DROP COLUMN workflow_id", "ALTER TABLE tasks DROP COLUMN continued_from",
			"ALTER TABLE tasks DROP COLUMN parent_close_policy", "DELETE FROM schema_migrations WHERE version = 10",
		} {
			_, err := raw.ExecContext(t.Context(), q)
			require.NoError(t, err, q)
		}
		require.NoError(t, raw.Close())
		db := MustOpen(t, path)
		task := storetest.MustInsertTask(t, db, &store.TaskInsertParams{Kind: store.KindWorkflow, WorkflowID: "w-1"})
		require.Equal(t, "w-1", task.WorkflowID, "0010 applied again")
		require.NoError(t, db.Close(t.Context()))
	})

	t.Run("Corrupt", func(t *testing.T) {
		tests := []struct {
			name  string
			wreck func(t *testing.T, path string)
		}{
			{"NotADatabase", func(t *testing.T, path string) {
				require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("this is not sqlite\n", 300)), 0o600))
			}},
			{"TruncatedHeader", func(t *testing.T, path string) {
				mustFill(t, path)
				require.NoError(t, os.Truncate(path, 50))
			}},
			{"Truncated", func(t *testing.T, path string) {
				mustFill(t, path)
				info, err := os.Stat(path)
				require.NoError(t, err)
				require.NoError(t, os.Truncate(path, info.Size()/2))
			}},
			{"DamagedPages", func(t *testing.T, path string) {
				mustFill(t, path)
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				require.NoError(t, err)
				junk := []byte(strings.Repeat("\xff", 4096))
				_, err = f.WriteAt(junk, 4096*3)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}},
			{"ForeignDatabase", func(t *testing.T, path string) {
				raw, err := sql.Open("sqlite", path)
				require.NoError(t, err)
				_, err = raw.ExecContext(t.Context(), "CREATE TABLE customers (id INTEGER PRIMARY KEY)")
				require.NoError(t, err)
				require.NoError(t, raw.Close())
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "weft.db")
				tc.wreck(t, path)
				for _, ro := range []bool{false, true} {
					db, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, ReadOnly: ro})
					require.ErrorIs(t, err, sqlite.ErrCorrupt, "read-only=%v", ro)
					require.ErrorContains(t, err, path)
					require.Nil(t, db)
				}
			})
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "weft.db")
		_, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, ReadOnly: true})
		require.ErrorIs(t, err, os.ErrNotExist, "read-only never creates a database")
		_, err = os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist)

		db := MustOpen(t, path)
		task := storetest.MustInsertTask(t, db, nil)
		require.NoError(t, db.Close(t.Context()))
		before := mustSum(t, path)

		ro, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, ReadOnly: true})
		require.NoError(t, err)
		defer func() { _ = ro.Close(t.Context()) }()
		got, err := ro.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, task.ID, got.ID)
		_, _, err = ro.TaskCancel(t.Context(), task.ID)
		require.ErrorIs(t, err, sqlite.ErrReadOnly)
		require.Equal(t, before, mustSum(t, path))
	})

	t.Run("BadConfig", func(t *testing.T) {
		_, err := sqlite.Open(t.Context(), sqlite.Config{})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "x.db"), Synchronous: "sometimes"})
		require.ErrorIs(t, err, store.ErrInvalid)
	})
}

// mustFill creates a store at path with enough rows to span many pages, then
// closes it.
func mustFill(tb testing.TB, path string) {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), sqlite.Config{Path: path, Synchronous: "OFF"})
	require.NoError(tb, err)
	for range 300 {
		storetest.MustInsertTask(tb, db, &store.TaskInsertParams{Input: storetest.Frame(strings.Repeat("x", 200))})
	}
	require.NoError(tb, db.Close(tb.Context()))
}

// mustSum returns the SHA-256 of a file's bytes.
func mustSum(tb testing.TB, path string) [32]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	return sha256.Sum256(b)
}
