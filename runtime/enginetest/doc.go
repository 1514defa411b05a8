// Package enginetest is the end-to-end conformance suite of a store
// backend: the real engine (runtime.New, Open, Close) runs real plugins
// over the store under test, and every test proves one behaviour a user
// sees through the engine's public API, reading the store only to assert.
// store/storetest checks the store method by method; this suite checks
// that the engine and the store together keep the contracts: tasks that
// complete, fail, retry and cancel, workflows with activities, timers and
// signals, start-up recovery after a restart under each on_restart policy,
// idempotency keys, gapless event logs and retention.
//
// The suite imports runtime, store and codec only. The backend's test wires
// in what it must not import (the store implementation, the module files,
// the wazero host) through a Harness:
//
//	func TestEngineSuite(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{
//			NewStore: func(tb testing.TB) func(testing.TB) enginetest.Store {
//				path := filepath.Join(tb.TempDir(), "weft.db")
//				return func(tb testing.TB) enginetest.Store {
//					db, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
//					require.NoError(tb, err)
//					return db
//				}
//			},
//			NewModules: func(tb testing.TB) modules.Files {
//				files, err := blob.New(blob.Config{Dir: tb.TempDir()})
//				require.NoError(tb, err)
//				return files
//			},
//			Executor:   executor,   // the daemon's host adapter, one for the whole suite
//			Activities: testkit,    // plugins/testkit/testkit.wasm
//			Workflows:  wfkit,      // host/testdata/wfkit.wasm
//		})
//	}
//
// cmd/weft's TestEngineSuite is the SQLite instance, and the model for
// another backend: its host compiles modules in the daemon's compile child
// (the real weft binary) into a shared compilation cache, because wazero's
// compiler inside a test binary built with -race takes minutes over the
// kits, and loading them from the cache takes milliseconds.
//
// The tests run in parallel, each with its own database and engine, and
// take a few seconds in all once the kits are compiled; the ones that take
// longer run only when the environment sets WEFT_LONG_TESTS=1
// (Harness.Long).
package enginetest
