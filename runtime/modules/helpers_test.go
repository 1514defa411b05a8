package modules

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// fakeExecutor is a hand-written Executor whose behaviour each test sets
// through its func fields.
type fakeExecutor struct {
	CompileFunc func(ctx context.Context, wasm []byte) ([]store.Function, error)
	ReplayFunc  func(ctx context.Context, t *store.Task, digest string, wasm []byte, host journal.WorkflowHost) (bool, error)

	mu       sync.Mutex
	compiles int
}

func (f *fakeExecutor) Compile(ctx context.Context, wasm []byte) ([]store.Function, error) {
	f.mu.Lock()
	f.compiles++
	f.mu.Unlock()
	if f.CompileFunc != nil {
		return f.CompileFunc(ctx, wasm)
	}
	return []store.Function{
		{Name: "echo", Kind: store.KindActivity},
		{Name: "flow", Kind: store.KindWorkflow},
	}, nil
}

func (f *fakeExecutor) Replay(ctx context.Context, t *store.Task, digest string, wasm []byte, host journal.WorkflowHost) (bool, error) {
	return f.ReplayFunc(ctx, t, digest, wasm, host)
}

func (f *fakeExecutor) compileCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.compiles
}

var (
	_ Executor = (*fakeExecutor)(nil)
	_ Files    = (*blob.Store)(nil)
)

// testWasm is the module file deployed as "test"; the fake compiler does not
// look inside.
var testWasm = []byte("\x00asm\x01\x00\x00\x00 weft modules test module")

// bundle is what setup returns.
type bundle struct {
	db    *sqlite.DB
	files *blob.Store
	exec  *fakeExecutor
}

// setup opens a real SQLite store and module file store in a temporary
// directory and returns a registry over them, with the fake executor.
func setup(tb testing.TB) (*Registry, *bundle) {
	tb.Helper()
	dir := tb.TempDir()
	logger := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: tbWriter{tb}})
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "weft.db"), Logger: logger})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, db.Close(context.Background())) })
	files, err := blob.New(blob.Config{Dir: dir})
	require.NoError(tb, err)
	b := &bundle{db: db, files: files, exec: &fakeExecutor{}}
	r, err := New(Config{Store: db, Files: files, Executor: b.exec, Logger: logger})
	require.NoError(tb, err)
	return r, b
}

// mustRunningWorkflow inserts a workflow task of module "test" pinned to
// digest and moves it to running.
func mustRunningWorkflow(tb testing.TB, db store.Store, digest, function string) *store.Task {
	tb.Helper()
	in, err := codec.EncodeFrame(codec.Null())
	require.NoError(tb, err)
	t, err := db.TaskInsert(tb.Context(), &store.TaskInsertParams{
		Module: "test", ModuleDigest: digest, Function: function, Kind: store.KindWorkflow,
		OwnerClientID: "cli_a", Input: store.Payload{Codec: codec.CodecAvro, Data: in},
	})
	require.NoError(tb, err)
	for _, to := range []store.Status{store.StatusLoading, store.StatusRunning} {
		t, err = db.TaskTransition(tb.Context(), &store.TaskTransitionParams{ID: t.ID, From: []store.Status{t.Status}, To: to})
		require.NoError(tb, err)
	}
	return t
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}
