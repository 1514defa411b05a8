//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/enginetest"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/store/sqlite"
)

// The kits of the engine suite: the stock test plugin and the workflow test
// kit of the host's tests.
var (
	suiteActivitiesWasm = filepath.Join("..", "..", "plugins", "testkit", "testkit.wasm")
	suiteWorkflowsWasm  = filepath.Join("..", "..", "host", "testdata", "wfkit.wasm")
)

// TestEngineSuite runs the engine-level conformance suite over the SQLite
// store, with the daemon's wazero host behind its executor adapter, set up
// as the daemon sets it up: modules are compiled by the real weft binary as
// the compile child, into the compilation cache that the daemons of this
// test run share. The host loads them from there, so a test binary built
// with -race (whose own compiler would take minutes over the kits) never
// compiles one, and each kit is compiled once per run. One host serves the
// whole suite.
func TestEngineSuite(t *testing.T) {
	runEngineSuite(t, func(tb testing.TB) func(testing.TB) enginetest.Store {
		path := filepath.Join(tb.TempDir(), sqlite.FileName)
		return func(tb testing.TB) enginetest.Store {
			db, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Logger: hclog.NewNullLogger()})
			require.NoError(tb, err)
			return db
		}
	})
}

// TestEngineSuitePostgres runs the same suite over the PostgreSQL store, a
// fresh database per test on the server named by WEFT_TEST_POSTGRES (the
// test is skipped without it); a restart opens the database again.
func TestEngineSuitePostgres(t *testing.T) {
	pgtest.Server(t)
	runEngineSuite(t, func(tb testing.TB) func(testing.TB) enginetest.Store {
		dsn := pgtest.NewDatabase(tb)
		return func(tb testing.TB) enginetest.Store {
			db, err := postgres.Open(context.Background(), dsn, postgres.Options{Logger: hclog.NewNullLogger()})
			require.NoError(tb, err)
			return db
		}
	})
}

// runEngineSuite runs the engine suite over the stores newStore makes.
func runEngineSuite(t *testing.T, newStore func(tb testing.TB) func(testing.TB) enginetest.Store) {
	activities, err := os.ReadFile(suiteActivitiesWasm)
	require.NoError(t, err)
	workflows, err := os.ReadFile(suiteWorkflowsWasm)
	require.NoError(t, err)
	bin := MustBuildWeft(t)
	cfg := daemon.DefaultConfig()
	cfg.CacheDir = filepath.Join(weftBuildDir, "cache")
	cfg.CompileBin = bin
	h, err := daemon.OpenHost(t.Context(), cfg, hclog.NewNullLogger())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })

	enginetest.Run(t, enginetest.Harness{
		NewStore: newStore,
		NewModules: func(tb testing.TB) runtime.ModuleFiles {
			files, err := blob.New(blob.Config{Dir: tb.TempDir()})
			require.NoError(tb, err)
			return files
		},
		Executor:   daemon.Executor(h),
		Activities: activities,
		Workflows:  workflows,
	})
}
