package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// fakeExecutor is a runtime.Executor whose methods are func fields: the
// tests run the real engine and store with plugins played by Go functions.
type fakeExecutor struct {
	CompileFunc func(ctx context.Context, wasm []byte) (*runtime.ModuleInfo, error)
	CallFunc    func(ctx context.Context, call *runtime.Call) (*runtime.CallResult, error)
}

var _ runtime.Executor = (*fakeExecutor)(nil)

func (x *fakeExecutor) Compile(ctx context.Context, wasm []byte) (*runtime.ModuleInfo, error) {
	return x.CompileFunc(ctx, wasm)
}

func (x *fakeExecutor) Call(ctx context.Context, call *runtime.Call) (*runtime.CallResult, error) {
	return x.CallFunc(ctx, call)
}

// wasmMagic starts every module the fake executor accepts.
const wasmMagic = "\x00asm\x01\x00\x00\x00"

// fakeModule returns module bytes for the fake executor: the wasm magic and
// a manifest of "name:kind" entries.
func fakeModule(fns ...string) []byte { return []byte(wasmMagic + strings.Join(fns, ",")) }

// compileFake reads the manifest of a fakeModule.
func compileFake(_ context.Context, wasm []byte) (*runtime.ModuleInfo, error) {
	manifest, ok := bytes.CutPrefix(wasm, []byte(wasmMagic))
	if !ok {
		return nil, fault.Errorf(fault.ModuleInvalid, "not a WebAssembly module")
	}
	info := &runtime.ModuleInfo{}
	for entry := range strings.SplitSeq(string(manifest), ",") {
		name, kind, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fault.Errorf(fault.ModuleInvalid, "bad manifest entry %q", entry)
		}
		info.Functions = append(info.Functions, runtime.Function{Name: name, Kind: kind})
	}
	return info, nil
}

// testBundle is a served API over a real engine and a real SQLite store.
type testBundle struct {
	url    string
	admin  string // the admin token
	engine *runtime.Engine
	access *access.Service
	db     *sqlite.DB
	reg    *prometheus.Registry

	gateOnce sync.Once
	gate     chan struct{} // closed by release: lets "block" calls finish
	started  chan string   // receives the task id of every "block" call
}

// release lets every "block" call (running or future) finish.
func (b *testBundle) release() { b.gateOnce.Do(func() { close(b.gate) }) }

// The functions of the test module "m" (see setup).
const testModuleFns = "echo:activity,block:activity,fail:activity,wf:workflow"

// setup serves the API over a real engine and access service, with a
// SQLite store in a
// temporary directory and a fake executor whose functions are:
//
//   - echo: returns its input;
//   - block: reports its task id on b.started, waits for b.release (or
//     cancellation), then returns its input;
//   - fail: returns a non-retryable application error of type bad_input;
//   - wf: a workflow that behaves like block.
//
// The module "m" with these functions is deployed.
func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	dir := t.TempDir()
	logger := testLogger(t)
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "weft.db"), Logger: logger, SkipQuickCheck: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close(context.Background())) })
	// Cleanups run last first: the HTTP server closes after the engine, so
	// that requests still waiting for a task (a POST /v1/responses whose
	// client left) end with the engine instead of holding Close.
	var ts *httptest.Server
	t.Cleanup(func() {
		if ts != nil {
			ts.Close()
		}
	})

	b := &testBundle{db: db, gate: make(chan struct{}), started: make(chan string, 100), reg: prometheus.NewRegistry()}
	exec := &fakeExecutor{CompileFunc: compileFake, CallFunc: b.call}
	files, err := blob.New(blob.Config{Dir: dir})
	require.NoError(t, err)
	mx, err := metrics.New(b.reg)
	require.NoError(t, err)
	eng, err := runtime.New(runtime.Config{
		Store: db, Executor: exec, Modules: files, Logger: logger, Metrics: mx,
		Workers: 4,
	})
	require.NoError(t, err)
	b.engine = eng
	acc, err := access.New(access.Config{Store: db, Logger: logger, PairingRate: 5, MaxMemoryLimit: runtime.MaxMemoryLimit})
	require.NoError(t, err)
	b.access = acc
	tok, created, err := acc.Bootstrap(t.Context(), dir)
	require.NoError(t, err)
	require.True(t, created)
	b.admin = tok
	require.NoError(t, eng.Open(t.Context()))
	t.Cleanup(func() {
		b.release()
		require.NoError(t, eng.Close(context.Background()))
	})
	_, err = eng.Modules().Deploy(t.Context(), "m", fakeModule(strings.Split(testModuleFns, ",")...))
	require.NoError(t, err)

	cfg.Engine, cfg.Modules, cfg.Access = eng, eng.Modules(), acc
	cfg.Logger = logger
	if cfg.Metrics == nil {
		cfg.Metrics = b.reg
	}
	s, err := New(cfg)
	require.NoError(t, err)
	ts = httptest.NewServer(s.Handler())
	b.url = ts.URL
	return b
}

// call plays the functions of the test module.
func (b *testBundle) call(ctx context.Context, c *runtime.Call) (*runtime.CallResult, error) {
	switch c.Function {
	case "echo":
		return &runtime.CallResult{Output: bytes.Clone(c.Input)}, nil
	case "fail":
		return &runtime.CallResult{Error: &runtime.PluginError{Type: "bad_input", Message: "the input was rejected", NonRetryable: true}}, nil
	case "block", "wf":
		select {
		case b.started <- c.TaskID:
		default:
		}
		select {
		case <-b.gate:
			return &runtime.CallResult{Output: bytes.Clone(c.Input)}, nil
		case <-ctx.Done():
			return nil, &fault.Error{Code: fault.Cancelled, Message: "call stopped", Err: context.Cause(ctx)}
		}
	}
	return nil, fault.Errorf(fault.FunctionNotFound, "no function %q", c.Function)
}

// do sends a request as the admin.
func (b *testBundle) do(t testing.TB, method, path, body string, header http.Header) *http.Response {
	t.Helper()
	return doToken(t, b.admin, method, b.url+path, body, header)
}

// taskBody is a POST /v1/tasks body for function fn of module m with the
// long 7 as input.
func taskBody(t testing.TB, fn string, extra ...string) string {
	t.Helper()
	s := `{"module":"m","function":"` + fn + `","input":` + string(mustJSON(t, env7))
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

// task is the part of a task document the tests read.
type task struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"`
	Module             string         `json:"module"`
	ModuleDigest       string         `json:"module_digest"`
	Function           string         `json:"function"`
	Kind               string         `json:"kind"`
	Status             string         `json:"status"`
	OnRestart          string         `json:"on_restart"`
	TimeoutMS          int64          `json:"timeout_ms"`
	InputEnvelope      map[string]any `json:"input_envelope"`
	Input              any            `json:"input"`
	OutputEnvelope     map[string]any `json:"output_envelope"`
	Output             any            `json:"output"`
	Error              map[string]any `json:"error"`
	ClientID           string         `json:"client_id"`
	ResponseID         string         `json:"response_id"`
	LastSequenceNumber int64          `json:"last_sequence_number"`
	CreatedAt          time.Time      `json:"created_at"`
	FinishedAt         *time.Time     `json:"finished_at"`
}

// createTask starts fn as the admin and returns the 202 document.
func (b *testBundle) createTask(t testing.TB, fn string, extra ...string) task {
	t.Helper()
	resp := b.do(t, http.MethodPost, "/v1/tasks", taskBody(t, fn, extra...), nil)
	tk := MustDecode[task](t, resp, http.StatusAccepted)
	require.Equal(t, "/v1/tasks/"+tk.ID, resp.Header.Get("Location"))
	return tk
}

// waitStatus polls the task until its status is want (the engine pushes,
// the test only observes).
func (b *testBundle) waitStatus(t testing.TB, id, want string) task {
	t.Helper()
	var tk task
	require.Eventually(t, func() bool {
		tk = MustDecode[task](t, b.do(t, http.MethodGet, "/v1/tasks/"+id, "", nil), http.StatusOK)
		return tk.Status == want
	}, 10*time.Second, 5*time.Millisecond, "task %s never became %s", id, want)
	return tk
}

// waitStarted waits until a "block" call for task id runs.
func (b *testBundle) waitStarted(t testing.TB, id string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-b.started:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("task %s never started", id)
		}
	}
}

// pair makes a client with scopes through the pairing routes and returns
// its id and token.
func (b *testBundle) pair(t testing.TB, name string, scopes ...string) (id, token string) {
	t.Helper()
	body := string(mustJSON(t, map[string]any{"scopes": scopes}))
	code := MustDecode[map[string]any](t, b.do(t, http.MethodPost, "/v1/pairings", body, nil), http.StatusCreated)["code"].(string)
	got := MustDecode[map[string]any](t, doToken(t, "", http.MethodPost, b.url+"/v1/pair", `{"code":"`+code+`","name":"`+name+`"}`, nil), http.StatusCreated)
	return got["client_id"].(string), got["token"].(string)
}
