package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// Store is a store.Store that the suite can close, as a daemon that stops
// closes its store. The suite closes every store it opens.
type Store interface {
	store.Store
	// Close closes the store.
	Close(ctx context.Context) error
}

// Harness is what the suite needs from the backend's test. Every field is
// required unless its doc says otherwise.
type Harness struct {
	// NewStore creates a fresh, empty database for one test, and returns
	// the function that opens it: each call opens a new store over that
	// same database, as a daemon that restarts does. The suite closes the
	// store it opened before it opens the database again, and at the end
	// of the test; the harness removes the database (tb.TempDir, or a
	// tb.Cleanup that drops it).
	NewStore func(tb testing.TB) (open func(tb testing.TB) Store)
	// NewModules returns an empty store of module files for one test. The
	// suite keeps it across the restarts of the test, as the data
	// directory outlives a daemon.
	NewModules func(tb testing.TB) modules.Files
	// Executor runs the plugins: the daemon's own (the wazero host behind
	// the adapter of cmd/weft). One Executor serves every test of the
	// suite at once, so that its compile cache compiles each module once.
	Executor runtime.Executor
	// Activities is the module file of the activity test kit,
	// plugins/testkit/testkit.wasm (echo, sleep, spin, fail, count,
	// heartbeat_spin, and the workflows tally and chain).
	Activities []byte
	// Workflows is the module file of the workflow test kit,
	// host/testdata/wfkit.wasm (greet, fanout and the activity shout).
	Workflows []byte
	// Logger receives the engines' logs. Defaults to a logger that writes
	// warnings and errors through t.Log.
	Logger func(tb testing.TB) hclog.Logger
	// Long also runs the tests that take longer than a few seconds.
	// Defaults to true when the environment sets WEFT_LONG_TESTS=1.
	Long bool
}

// The module names the suite deploys its kits under.
const (
	modActivities = "testkit"
	modWorkflows  = "wfkit"
	// modFlaky is the activity kit under a second name, whose first
	// attempts the suite's executor turns into failures (flakyExecutor).
	modFlaky = "flaky"
)

// Run runs the suite: one parallel subtest per behaviour, each over its
// own database and engine.
func Run(t *testing.T, h Harness) {
	t.Helper()
	switch {
	case h.NewStore == nil, h.NewModules == nil, h.Executor == nil:
		t.Fatal("enginetest: Harness.NewStore, NewModules and Executor are required")
	case len(h.Activities) == 0, len(h.Workflows) == 0:
		t.Fatal("enginetest: Harness.Activities and Workflows are required")
	}
	if os.Getenv("WEFT_LONG_TESTS") == "1" {
		h.Long = true
	}
	tests := []struct {
		name string
		run  func(*testing.T, *Harness)
		long bool
	}{
		{name: "Complete", run: testComplete},
		{name: "Fail", run: testFail},
		{name: "RetryThenSucceed", run: testRetry},
		{name: "CancelQueued", run: testCancelQueued},
		{name: "CancelRunning", run: testCancelRunning},
		{name: "CancelAtStart", run: testCancelAtStart},
		{name: "Workflow", run: testWorkflow},
		{name: "WorkflowFanout", run: testWorkflowFanout},
		{name: "WorkflowCancel", run: testWorkflowCancel},
		{name: "ContinueAsNew", run: testContinueAsNew},
		{name: "WorkflowIDQuery", run: testWorkflowIDQuery},
		{name: "RecoverFail", run: testRecoverFail},
		{name: "RecoverRetry", run: testRecoverRetry},
		{name: "RecoverResume", run: testRecoverResume},
		{name: "RecoverWorkflow", run: testRecoverWorkflow},
		{name: "Idempotency", run: testIdempotency},
		{name: "IdempotencyConcurrent", run: testIdempotencyConcurrent},
		{name: "Retention", run: testRetention},
		{name: "HeartbeatTimeout", run: testHeartbeatTimeout},
		{name: "ScheduleToStart", run: testScheduleToStart},
		{name: "TimeoutParams", run: testTimeoutParams},
		{name: "Many", run: testMany, long: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && !h.Long {
				t.Skip("set WEFT_LONG_TESTS=1 to run")
			}
			t.Parallel()
			tc.run(t, &h)
		})
	}
}

// waitTimeout bounds every wait of the suite for something the engine does
// within milliseconds, or a second or two for the workflows' timer, on a
// loaded machine under the race detector.
const waitTimeout = 30 * time.Second

// admin is the caller of the engine's methods that need one: it sees every
// client's tasks, as a client with the admin scope does.
var admin = runtime.Caller{ClientID: "cli_enginetest", All: true}

// env is one test's database, module files and engine.
type env struct {
	tb    testing.TB
	h     *Harness
	open  func(testing.TB) Store
	files modules.Files
	edit  func(*runtime.Config)
	// host is the engine's host id, the same at every start, as a daemon
	// restarted with its --host: on a shared store the restarted engine
	// takes back at once what the stopped one held.
	host string
	db   Store
	e    *runtime.Engine
	// acc is access control over the same store: idempotency keys are
	// claimed through it, as the HTTP layer does.
	acc *access.Service
}

// newEnv opens a fresh database and an engine over it with the kits
// deployed; edit, when not nil, changes the engine's config (at every
// start). Everything is closed at the end of the test.
func newEnv(tb testing.TB, h *Harness, edit func(*runtime.Config)) *env {
	tb.Helper()
	v := &env{tb: tb, h: h, open: h.NewStore(tb), files: h.NewModules(tb), edit: edit, host: runtime.DefaultHost()}
	tb.Cleanup(v.stop)
	v.start()
	ctx := context.Background()
	for name, wasm := range map[string][]byte{modActivities: h.Activities, modFlaky: h.Activities, modWorkflows: h.Workflows} {
		_, err := v.e.Modules().Deploy(ctx, name, wasm)
		require.NoError(tb, err, "deploy %s", name)
	}
	return v
}

// start opens the database and an engine over it.
func (v *env) start() {
	v.tb.Helper()
	v.db = v.open(v.tb)
	var log hclog.Logger
	if v.h.Logger != nil {
		log = v.h.Logger(v.tb)
	} else {
		log = hclog.New(&hclog.LoggerOptions{Output: tbWriter{v.tb}, Level: hclog.Warn})
	}
	cfg := runtime.Config{
		Store:    v.db,
		Executor: flakyExecutor{v.h.Executor},
		Modules:  v.files,
		Logger:   log,
		Workers:  8,
		// The scheduler is woken by every change; the poll is a safety
		// net only.
		PollInterval:    200 * time.Millisecond,
		ShutdownTimeout: 10 * time.Second,
		DefaultRetry:    &store.RetryPolicy{MaximumAttempts: 1},
		Host:            v.host,
	}
	if v.edit != nil {
		v.edit(&cfg)
	}
	e, err := runtime.New(cfg)
	require.NoError(v.tb, err)
	require.NoError(v.tb, e.Open(context.Background()))
	v.e = e
	v.acc, err = access.New(access.Config{Store: v.db, Logger: log})
	require.NoError(v.tb, err)
}

// stop closes the engine and the store, as a daemon that stops does; the
// tasks in progress stay as they are, for the next start's recovery.
func (v *env) stop() {
	v.tb.Helper()
	ctx := context.Background()
	if v.e != nil {
		require.NoError(v.tb, v.e.Close(ctx))
		v.e = nil
	}
	if v.db != nil {
		require.NoError(v.tb, v.db.Close(ctx))
		v.db = nil
	}
}

// restart stops the engine and its store, then opens the same database
// again with a new engine, whose Open runs start-up recovery.
func (v *env) restart() {
	v.tb.Helper()
	v.stop()
	v.start()
}

// create creates a task owned by admin's client.
func (v *env) create(module, function, input string, edit func(*runtime.TaskCreateParams)) *store.Task {
	v.tb.Helper()
	p := &runtime.TaskCreateParams{
		ClientID: admin.ClientID, Admin: true, Module: module, Function: function, Input: envelope(v.tb, input),
	}
	if edit != nil {
		edit(p)
	}
	t, err := v.e.TaskCreate(context.Background(), p)
	require.NoError(v.tb, err, "create %s.%s", module, function)
	return t
}

// wait waits until task id finishes and returns it as the store has it.
func (v *env) wait(id string) *store.Task {
	v.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := v.e.TaskWait(ctx, admin, id)
	require.NoError(v.tb, err, "task %s did not finish within %s", id, waitTimeout)
	t, err := v.db.TaskGet(context.Background(), id)
	require.NoError(v.tb, err)
	require.True(v.tb, t.Status.IsTerminal(), "task %s is %s", id, t.Status)
	return t
}

// waitFor polls the store until cond holds for task id, and returns the
// task as it was then. cond runs in the test's goroutine and may assert.
func (v *env) waitFor(id, what string, cond func(*store.Task) bool) *store.Task {
	v.tb.Helper()
	var t *store.Task
	poll(v.tb, "task "+id+": "+what, func() bool {
		var err error
		t, err = v.db.TaskGet(context.Background(), id)
		require.NoError(v.tb, err)
		return cond(t)
	})
	return t
}

// waitEvent polls the log of task id until it holds an event of type typ.
func (v *env) waitEvent(id, typ string) {
	v.tb.Helper()
	poll(v.tb, "task "+id+" has a "+typ+" event", func() bool {
		for _, ev := range v.events(id) {
			if ev.Type == typ {
				return true
			}
		}
		return false
	})
}

// poll calls cond, in the test's goroutine, every few milliseconds until
// it holds, and fails the test after waitTimeout.
func poll(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not after %s: %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// events returns the whole log of task id.
func (v *env) events(id string) []*store.Event {
	v.tb.Helper()
	var out []*store.Event
	for from := int64(0); ; {
		evs, err := v.db.EventList(context.Background(), &store.EventListParams{TaskID: id, From: from, Limit: 1000})
		require.NoError(v.tb, err)
		out = append(out, evs...)
		if len(evs) < 1000 {
			return out
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// checkLog checks the log of a finished task: sequence numbers from 0
// without a gap, response.created first, and exactly one terminal event,
// the last one, of the task's status. It returns the event types in order.
func (v *env) checkLog(t *store.Task) []string {
	v.tb.Helper()
	evs := v.events(t.ID)
	require.NotEmpty(v.tb, evs, "task %s has no events", t.ID)
	types := make([]string, len(evs))
	terminal := 0
	for i, ev := range evs {
		require.Equal(v.tb, int64(i), ev.Seq, "task %s: event %d of %v", t.ID, i, types[:i])
		types[i] = ev.Type
		switch ev.Type {
		case store.EventResponseCompleted, store.EventResponseFailed, store.EventResponseCancelled:
			terminal++
		}
	}
	require.Equal(v.tb, store.EventResponseCreated, types[0], "task %s: %v", t.ID, types)
	require.Equal(v.tb, 1, terminal, "task %s has one terminal event: %v", t.ID, types)
	want := map[store.Status]string{
		store.StatusCompleted: store.EventResponseCompleted,
		store.StatusFailed:    store.EventResponseFailed,
		store.StatusCancelled: store.EventResponseCancelled,
	}[t.Status]
	require.Equal(v.tb, want, types[len(types)-1], "task %s (%s) ends its log with its terminal event: %v", t.ID, t.Status, types)
	require.Equal(v.tb, int64(len(evs)-1), t.LastSeq, "task %s: last_seq", t.ID)
	return types
}

// count returns how many events of type typ types holds.
func count(types []string, typ string) int {
	n := 0
	for _, s := range types {
		if s == typ {
			n++
		}
	}
	return n
}

// envelope encodes a value given as its typed JSON projection; "" is null.
func envelope(tb testing.TB, projection string) codec.Envelope {
	tb.Helper()
	if projection == "" {
		projection = "null"
	}
	val, err := codec.ParseProjection([]byte(projection))
	require.NoError(tb, err, "input %s", projection)
	env, err := codec.EncodeEnvelope(val)
	require.NoError(tb, err)
	return env
}

// projection returns the typed JSON projection of a stored payload.
func projection(tb testing.TB, p store.Payload) string {
	tb.Helper()
	val, err := codec.DecodeFrame(p.Data)
	require.NoError(tb, err)
	out, err := codec.MarshalProjection(val)
	require.NoError(tb, err)
	return string(out)
}

// flakyExecutor runs every call through the harness's Executor, except the
// first two attempts of a task of module modFlaky: those run the kit's fail
// with a retryable error instead, so that a task of that module succeeds by
// its retry policy on the third attempt.
type flakyExecutor struct {
	runtime.Executor
}

// flakyAttempts is how many attempts of a modFlaky task fail.
const flakyAttempts = 2

// Call implements runtime.Executor.
func (x flakyExecutor) Call(ctx context.Context, call *runtime.Call) (*runtime.CallResult, error) {
	if call.Module != modFlaky || call.Attempt > flakyAttempts {
		return x.Executor.Call(ctx, call)
	}
	c := *call
	c.Function = "fail"
	frame, err := codec.EncodeFrame(codec.Map(
		codec.Entry{Key: "type", Value: codec.String("flaky")},
		codec.Entry{Key: "message", Value: codec.String(fmt.Sprintf("attempt %d fails", call.Attempt))},
	))
	if err != nil {
		return nil, err
	}
	c.Input = frame
	return x.Executor.Call(ctx, &c)
}

// tbWriter writes log lines through tb.Log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// isNotFound reports whether err says the row is gone.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
