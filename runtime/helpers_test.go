package runtime

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// fakeExecutor is a hand-written Executor whose behaviour each test sets
// through its func fields (house style rule 14).
type fakeExecutor struct {
	CompileFunc func(ctx context.Context, wasm []byte) (*ModuleInfo, error)
	CallFunc    func(ctx context.Context, call *Call) (*CallResult, error)

	mu       sync.Mutex
	compiles int
	calls    int
}

func (f *fakeExecutor) Compile(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	f.mu.Lock()
	f.compiles++
	f.mu.Unlock()
	if f.CompileFunc != nil {
		return f.CompileFunc(ctx, wasm)
	}
	return testModuleInfo, nil
}

func (f *fakeExecutor) Call(ctx context.Context, call *Call) (*CallResult, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.CallFunc(ctx, call)
}

func (f *fakeExecutor) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

var _ Executor = (*fakeExecutor)(nil)

// testModuleInfo is what the fake compiler finds in every module.
var testModuleInfo = &ModuleInfo{Functions: []Function{
	{Name: "echo", Kind: "activity"},
	{Name: "work", Kind: "activity"},
	{Name: "flow", Kind: "workflow"},
}}

// testWasm is the module file deployed as "test"; the fake compiler does not
// look inside.
var testWasm = []byte("\x00asm\x01\x00\x00\x00 weft runtime test module")

// echo returns its input.
func echo(_ context.Context, call *Call) (*CallResult, error) {
	return &CallResult{Output: append([]byte(nil), call.Input...)}, nil
}

var _ modules.Files = (*blob.Store)(nil)

// testBundle is what setup returns.
type testBundle struct {
	dir   string
	db    *sqlite.DB
	files *blob.Store
	exec  *fakeExecutor
	admin Caller // sees every client's tasks
}

// engineConfig returns the config of an engine over b's store.
func (b *testBundle) engineConfig(tb testing.TB) Config {
	tb.Helper()
	return Config{
		Store:    b.db,
		Executor: b.exec,
		Modules:  b.files,
		Logger:   testLogger(tb),
		Workers:  8,
		// Nothing may depend on the safety-net poll: creation, signals,
		// retries and due times wake the scheduler themselves.
		PollInterval: time.Hour,
	}
}

// setup opens a real SQLite store and module file store in a temporary
// directory, deploys the test module, and opens an engine configured by
// edit. The engine and store are closed at cleanup.
func setup(tb testing.TB, call func(ctx context.Context, call *Call) (*CallResult, error), edit func(*Config)) (*Engine, *testBundle) {
	tb.Helper()
	b := mustStore(tb)
	b.exec.CallFunc = call
	cfg := b.engineConfig(tb)
	if edit != nil {
		edit(&cfg)
	}
	e := mustOpen(tb, cfg)
	_, err := e.Modules().Deploy(tb.Context(), "test", testWasm)
	require.NoError(tb, err)
	return e, b
}

// mustStore opens the store and module files of a test.
func mustStore(tb testing.TB) *testBundle {
	tb.Helper()
	dir := tb.TempDir()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "weft.db"), Logger: testLogger(tb)})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, db.Close(context.Background())) })
	files, err := blob.New(blob.Config{Dir: dir})
	require.NoError(tb, err)
	return &testBundle{
		dir: dir, db: db, files: files, exec: &fakeExecutor{},
		admin: Caller{ClientID: "cli_admin", All: true},
	}
}

// mustOpen creates and opens an engine, closed at cleanup.
func mustOpen(tb testing.TB, cfg Config) *Engine {
	tb.Helper()
	e, err := New(cfg)
	require.NoError(tb, err)
	require.NoError(tb, e.Open(tb.Context()))
	tb.Cleanup(func() { require.NoError(tb, e.Close(context.Background())) })
	return e
}

// testLogger writes the engine's logs through tb.Log.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: tbWriter{tb}})
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}

// mustEnvelope encodes v as an envelope.
func mustEnvelope(tb testing.TB, v codec.Value) codec.Envelope {
	tb.Helper()
	env, err := codec.EncodeEnvelope(v)
	require.NoError(tb, err)
	return env
}

// mustFrame encodes v as a frame.
func mustFrame(tb testing.TB, v codec.Value) []byte {
	tb.Helper()
	f, err := codec.EncodeFrame(v)
	require.NoError(tb, err)
	return f
}

// mustCreate creates a task of the test module.
func mustCreate(tb testing.TB, e *Engine, p TaskCreateParams) *store.Task {
	tb.Helper()
	if p.Module == "" {
		p.Module = "test"
	}
	if p.Input == (codec.Envelope{}) {
		p.Input = mustEnvelope(tb, codec.String("hello"))
	}
	t, err := e.TaskCreate(tb.Context(), &p)
	require.NoError(tb, err)
	return t
}

// mustEvents subscribes to a task's whole log and returns every event up to
// the terminal one, failing after 10 s.
func mustEvents(tb testing.TB, e *Engine, who Caller, id string, after int64) []*store.Event {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 10*time.Second)
	defer cancel()
	ch, err := e.EventSubscribe(ctx, who, id, after)
	require.NoError(tb, err)
	var evs []*store.Event
	for ev := range ch {
		evs = append(evs, ev)
	}
	require.NoError(tb, ctx.Err(), "task %s did not finish; got %d events", id, len(evs))
	require.NotEmpty(tb, evs)
	require.True(tb, store.IsTerminalEvent(evs[len(evs)-1].Type), "last event %s", evs[len(evs)-1].Type)
	return evs
}

// mustFinish waits until a task is finished and returns it.
func mustFinish(tb testing.TB, e *Engine, id string) *store.Task {
	tb.Helper()
	mustEvents(tb, e, Caller{All: true}, id, -1)
	t, err := e.store.TaskGet(tb.Context(), id)
	require.NoError(tb, err)
	require.True(tb, t.Status.IsTerminal())
	return t
}

// mustStatus waits until a task reaches status, polling the store (tests
// only; the engine itself never polls).
func mustStatus(tb testing.TB, e *Engine, id string, status store.Status) *store.Task {
	tb.Helper()
	var t *store.Task
	require.Eventually(tb, func() bool {
		var err error
		t, err = e.store.TaskGet(context.Background(), id)
		require.NoError(tb, err)
		return t.Status == status
	}, 10*time.Second, time.Millisecond, "task %s never became %s", id, status)
	return t
}

// eventTypes lists the types of evs.
func eventTypes(evs []*store.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// requireGapless checks that evs have the sequence numbers from, from+1, …
func requireGapless(tb testing.TB, evs []*store.Event, from int64) {
	tb.Helper()
	for i, ev := range evs {
		require.Equal(tb, from+int64(i), ev.Seq, "event %d (%s)", i, ev.Type)
	}
}

// beginKey claims an idempotency key in the store, as access does before a
// keyed request reaches the engine; request stands for the request digest.
func beginKey(tb testing.TB, db store.Store, clientID, key, request string) {
	tb.Helper()
	res := keyOutcome(tb, db, clientID, key, request)
	require.Equal(tb, store.IdempotencyNew, res.Outcome, "key %q was free", key)
}

// keyOutcome asks the store to begin an idempotency key again and returns
// what it says: the key's state as a retry of the request would find it.
func keyOutcome(tb testing.TB, db store.Store, clientID, key, request string) *store.IdempotencyKeyBeginResult {
	tb.Helper()
	sum := sha256.Sum256([]byte(request))
	now := time.Now()
	res, err := db.IdempotencyKeyBegin(tb.Context(), &store.IdempotencyKeyBeginParams{
		ClientID: clientID, Key: key, RequestDigest: sum[:], ExpiresAt: now.Add(time.Hour), Now: now,
	})
	require.NoError(tb, err)
	return res
}
