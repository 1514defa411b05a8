package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// A guest stands in for a wasm module in the engine's workflow tests: its
// workflows are Go functions written against journal.WorkflowHost the way an SDK
// drives the ABI (a suspension unwinds with a panic, as the Go SDK does),
// and its activities are plain functions. The fake Executor runs them as
// the host would.
type (
	guestWorkflow func(g *wf, in codec.Value) (codec.Value, error)
	guestActivity func(ctx context.Context, in codec.Value) (codec.Value, error)
)

// guest is one module version.
type guest struct {
	workflows  map[string]guestWorkflow
	activities map[string]guestActivity
}

// wf is the workflow context a guest workflow gets.
type wf struct {
	ctx context.Context
	wh  journal.WorkflowHost
	log func(level, msg string)
}

// unwind is the panic that ends a suspended run, or a run whose import
// failed (as the host fails the call).
type unwind struct{ err error }

// appError is a typed application error a guest returns.
type appError struct {
	typ          string
	msg          string
	nonRetryable bool
}

func (e *appError) Error() string { return e.typ + ": " + e.msg }

func (g *wf) check(id int64, err error) int64 {
	if err != nil {
		panic(unwind{err: err})
	}
	return id
}

func (g *wf) activity(fn string, in codec.Value, opts ...func(*journal.ActivityCommand)) int64 {
	frame, err := codec.EncodeFrame(in)
	if err != nil {
		panic(err)
	}
	c := &journal.ActivityCommand{Function: fn, Input: frame}
	for _, o := range opts {
		o(c)
	}
	return g.check(g.wh.ScheduleActivity(g.ctx, c))
}

func (g *wf) timer(d time.Duration) int64 { return g.check(g.wh.StartTimer(g.ctx, d)) }

func (g *wf) signal(name string, timeout time.Duration) int64 {
	return g.check(g.wh.WaitSignal(g.ctx, name, timeout))
}

// any waits for one of ids and returns its index.
func (g *wf) any(ids ...int64) int {
	i, ready, err := g.wh.Await(g.ctx, ids, false)
	if err != nil {
		panic(unwind{err: err})
	}
	if !ready {
		panic(unwind{})
	}
	return i
}

// all waits for every one of ids.
func (g *wf) all(ids ...int64) {
	_, ready, err := g.wh.Await(g.ctx, ids, true)
	if err != nil {
		panic(unwind{err: err})
	}
	if !ready {
		panic(unwind{})
	}
}

// get waits for id and returns its value, or its error as an *appError
// (type "timeout" for a signal timeout).
func (g *wf) get(id int64) (codec.Value, error) {
	g.any(id)
	r, err := g.wh.Result(g.ctx, id)
	if err != nil {
		panic(unwind{err: err})
	}
	switch r.Outcome {
	case journal.OutcomeTimeout:
		return codec.Null(), &appError{typ: "timeout"}
	case journal.OutcomeError:
		v, err := codec.DecodeFrame(r.Frame)
		if err != nil {
			panic(err)
		}
		typ, _ := v.Get("type")
		msg, _ := v.Get("message")
		ts, _ := typ.AsString()
		ms, _ := msg.AsString()
		return codec.Null(), &appError{typ: ts, msg: ms}
	}
	v, err := codec.DecodeFrame(r.Frame)
	if err != nil {
		panic(err)
	}
	return v, nil
}

// must is get for a future that must succeed.
func (g *wf) must(id int64) codec.Value {
	v, err := g.get(id)
	if err != nil {
		panic(fmt.Sprintf("future %d: %v", id, err))
	}
	return v
}

// guestExecutor runs guests by digest: the Executor of the workflow tests.
// It counts the runs of each workflow task and the calls of each activity.
type guestExecutor struct {
	mu       sync.Mutex
	byDigest map[string]*guest
	runs     map[string]int // task id → workflow runs
	calls    map[string]int // activity function → calls
}

func newGuestExecutor() *guestExecutor {
	return &guestExecutor{byDigest: map[string]*guest{}, runs: map[string]int{}, calls: map[string]int{}}
}

// add registers a module version; wasm are its (fake) bytes.
func (x *guestExecutor) add(wasm []byte, g *guest) {
	x.mu.Lock()
	x.byDigest[modules.Digest(wasm)] = g
	x.mu.Unlock()
}

func (x *guestExecutor) Compile(_ context.Context, wasm []byte) (*ModuleInfo, error) {
	x.mu.Lock()
	g, ok := x.byDigest[modules.Digest(wasm)]
	x.mu.Unlock()
	if !ok {
		return nil, fault.Errorf(fault.ModuleInvalid, "unknown test module")
	}
	info := &ModuleInfo{}
	for name := range g.workflows {
		info.Functions = append(info.Functions, Function{Name: name, Kind: "workflow"})
	}
	for name := range g.activities {
		info.Functions = append(info.Functions, Function{Name: name, Kind: "activity"})
	}
	return info, nil
}

func (x *guestExecutor) Call(ctx context.Context, call *Call) (res *CallResult, err error) {
	x.mu.Lock()
	g, ok := x.byDigest[call.Digest]
	x.mu.Unlock()
	if !ok {
		return nil, fault.Errorf(fault.ModuleNotFound, "no module %s", call.Digest)
	}
	in, derr := codec.DecodeFrame(call.Input)
	if derr != nil {
		return nil, derr
	}
	output := func(v codec.Value, err error) (*CallResult, error) {
		var ae *appError
		if errors.As(err, &ae) {
			return &CallResult{Error: &PluginError{Type: ae.typ, Message: ae.msg, NonRetryable: ae.nonRetryable}}, nil
		}
		if err != nil {
			return nil, err
		}
		f, err := codec.EncodeFrame(v)
		if err != nil {
			return nil, err
		}
		return &CallResult{Output: f}, nil
	}
	if fn, ok := g.activities[call.Function]; ok {
		x.mu.Lock()
		x.calls[call.Function]++
		x.mu.Unlock()
		if call.Workflow != nil {
			return nil, fault.Errorf(fault.Code("import_not_allowed"), "an activity got a journal.WorkflowHost")
		}
		return output(fn(ctx, in))
	}
	fn, ok := g.workflows[call.Function]
	if !ok {
		return nil, fault.Errorf(fault.FunctionNotFound, "no function %q", call.Function)
	}
	if call.Workflow == nil {
		return nil, fault.Errorf(fault.Code("hook_failed"), "a workflow call without journal.WorkflowHost")
	}
	x.mu.Lock()
	x.runs[call.TaskID]++
	x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			u, ok := p.(unwind)
			if !ok {
				panic(p)
			}
			if u.err != nil {
				res, err = nil, &fault.Error{Code: fault.Code("hook_failed"), Message: u.err.Error()}
				return
			}
			res, err = &CallResult{Suspended: true}, nil
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, &fault.Error{Code: fault.Cancelled, Message: "cancelled"}
	}
	return output(fn(&wf{ctx: ctx, wh: call.Workflow, log: call.Log}, in))
}

func (x *guestExecutor) runCount(id string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.runs[id]
}

func (x *guestExecutor) callCount(fn string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.calls[fn]
}

var _ Executor = (*guestExecutor)(nil)

// wfBundle is an engine over a real store whose module "wf" is a guest.
type wfBundle struct {
	*testBundle
	x   *guestExecutor
	cfg Config
}

// wfWasm is the (fake) file of the first version of module "wf".
var wfWasm = []byte("\x00asm\x01\x00\x00\x00 weft workflow test module v1")

// wfSetup opens an engine over a real SQLite store with module "wf" = g
// deployed, configured by edit.
func wfSetup(tb testing.TB, g *guest, edit func(*Config)) (*Engine, *wfBundle) {
	tb.Helper()
	b := mustStore(tb)
	x := newGuestExecutor()
	x.add(wfWasm, g)
	cfg := b.engineConfig(tb)
	cfg.Executor = x
	if edit != nil {
		edit(&cfg)
	}
	e := mustOpen(tb, cfg)
	_, err := e.Modules().Deploy(tb.Context(), "wf", wfWasm)
	require.NoError(tb, err)
	return e, &wfBundle{testBundle: b, x: x, cfg: cfg}
}

// reopen closes e and opens a new engine over the same store: a restart.
func (b *wfBundle) reopen(tb testing.TB, e *Engine) *Engine {
	tb.Helper()
	require.NoError(tb, e.Close(tb.Context()))
	return mustOpen(tb, b.cfg)
}

// start creates a workflow task of module "wf".
func start(tb testing.TB, e *Engine, fn string, in codec.Value, onRestart store.OnRestart) *store.Task {
	tb.Helper()
	return mustCreate(tb, e, TaskCreateParams{Module: "wf", Function: fn, Input: mustEnvelope(tb, in), OnRestart: onRestart})
}

// signal sends a signal to task id.
func signal(tb testing.TB, e *Engine, id, name string, v codec.Value) {
	tb.Helper()
	require.NoError(tb, e.TaskSignal(tb.Context(), Caller{All: true}, id, name, mustEnvelope(tb, v)))
}

// output decodes a completed task's output.
func output(tb testing.TB, t *store.Task) codec.Value {
	tb.Helper()
	require.Equal(tb, store.StatusCompleted, t.Status, "task %s: %+v", t.ID, t.Error)
	v, err := codec.DecodeFrame(t.Output.Data)
	require.NoError(tb, err)
	return v
}

// journalTypes lists the journal event types of a task's log, in order.
func journalTypes(tb testing.TB, e *Engine, id string) []string {
	tb.Helper()
	var out []string
	for _, ev := range allEvents(tb, e, id) {
		switch ev.Type {
		case journal.EventActivityScheduled, journal.EventActivityCompleted, journal.EventActivityFailed, journal.EventTimerStarted,
			journal.EventTimerFired, journal.EventSignalWaiting, journal.EventSignalReceived, journal.EventSignalTimedOut:
			out = append(out, ev.Type)
		}
	}
	return out
}

// allEvents reads a task's whole log from the store.
func allEvents(tb testing.TB, e *Engine, id string) []*store.Event {
	tb.Helper()
	evs, err := e.store.EventList(tb.Context(), &store.EventListParams{TaskID: id, Limit: 10000})
	require.NoError(tb, err)
	return evs
}

// waitJournal waits until the log of task id holds an event of type typ
// (polling the store; tests only).
func waitJournal(tb testing.TB, e *Engine, id, typ string, n int) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		c := 0
		for _, ev := range allEvents(tb, e, id) {
			if ev.Type == typ {
				c++
			}
		}
		return c >= n
	}, 10*time.Second, time.Millisecond, "task %s never logged %d %s", id, n, typ)
}

// echoActivity returns its input.
func echoActivity(_ context.Context, in codec.Value) (codec.Value, error) { return in, nil }
