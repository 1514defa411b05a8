package host

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// CallRequest is one call of a guest function. Only Digest and Function
// are required; every hook may be nil.
type CallRequest struct {
	// Digest is the module's digest, "sha256:<hex>".
	Digest string
	// Wasm returns the module's bytes when the host has no compiled form of
	// Digest (after a restart, or after Unload); the host checks them
	// against Digest and compiles them as Compile does. Defaults to none: a
	// call of an unknown digest fails with module_not_found.
	Wasm func(ctx context.Context) ([]byte, error)
	// Plugin names the plugin in logs: its lines go to the host logger
	// Named(Plugin). Defaults to the first 12 hex digits of the digest.
	Plugin string
	// Function is the manifest name of the function to run.
	Function string
	// Input is the function's argument, a single-object Avro Value frame.
	// The host checks its header, not its datum. Defaults to null.
	Input []byte
	// MemoryLimit is the most linear memory the guest may use, in bytes,
	// rounded up to 64 KiB pages and clamped to Config.MaxMemoryLimit.
	// Defaults to Config.MemoryLimit.
	MemoryLimit int64
	// Timeout is the call's wall-clock timeout; the guest is stopped when it
	// passes, and the call fails with timeout. ctx's own deadline applies
	// too. Defaults to Config.Timeout.
	Timeout time.Duration
	// LastCheckpoint is the activity's latest checkpoint frame from an
	// earlier attempt, which last_checkpoint returns until the guest
	// records a new one. Defaults to none.
	LastCheckpoint []byte
	// Log receives each log line of the call: the guest's log import and
	// every line it writes to stdout or stderr. The same lines also go to
	// the plugin's hclog logger. Defaults to the logger only.
	Log func(LogEntry)
	// LogFields are key/value pairs added to each line the call writes to
	// the plugin's logger, such as the id of the task it runs for.
	// Defaults to none.
	LogFields []any
	// LogSkip is how many of the call's first lines go to Log only, not to
	// the plugin's logger: lines the logger already has, such as those a
	// workflow's replay repeats. Defaults to 0.
	LogSkip int
	// Checkpoint durably stores an activity's checkpoint frame before it
	// returns; an error fails the call with hook_failed. Defaults to
	// keeping checkpoints in the call only.
	Checkpoint func(ctx context.Context, frame []byte) error
	// Cancelled reports whether the task was asked to stop; an activity
	// polls it through the cancelled import and may return early. To stop a
	// guest that does not cooperate, cancel ctx. Defaults to reporting only
	// ctx's cancellation.
	Cancelled func() bool
	// Progress receives each progress report of an activity, from the
	// progress import, synchronously: done and total are at least 0, done
	// is at most total when total is above 0, and message is valid UTF-8
	// of at most abi.MaxProgressMessageLen bytes. The host does not
	// throttle reports; a hook that stores them should buffer them and
	// return at once. Defaults to dropping them.
	Progress func(done, total int64, message string)
	// Heartbeat is called at each heartbeat import of an activity,
	// synchronously; it must return at once. Defaults to none.
	Heartbeat func()
	// Workflow answers the workflow imports of a workflow call (see
	// WorkflowHost). A workflow call without it fails with hook_failed at
	// its first workflow import.
	Workflow WorkflowHost
	// Query, in a workflow call, asks the guest to answer this query
	// instead of returning its own result: the guest replays through
	// Workflow, asks for the query with query_request and returns the
	// answer as its output or error (docs/abi.md, "Queries"). From
	// query_request on, the call may use no workflow import but now and
	// random. A call that ends without asking fails with
	// query_not_supported. Defaults to none: query_request returns
	// abi.NoQuery.
	Query *Query
}

// Query is a query a workflow call answers.
type Query struct {
	// Name is the query's name, as the guest registered its handler.
	Name string
	// Input is the query's argument, a Value frame; nil means null.
	Input []byte
}

// Sources of a LogEntry.
const (
	SourceLog    = "log"    // the log import
	SourceStdout = "stdout" // a line the guest wrote to stdout
	SourceStderr = "stderr" // a line the guest wrote to stderr
)

// LogEntry is one log line of a call.
type LogEntry struct {
	// Level is the guest's level for the log import, info for stdout and
	// warn for stderr.
	Level abi.LogLevel
	// Source is SourceLog, SourceStdout or SourceStderr.
	Source string
	// Message is the line, valid UTF-8, at most abi.MaxLogLen bytes.
	Message string
}

// CallResult is the outcome of a call that ran to its end.
type CallResult struct {
	// Status is abi.StatusOK (Output is set), abi.StatusError (Error is
	// set) or abi.StatusSuspended (a workflow waits; the embedder replays
	// it when one of its futures resolves).
	Status abi.Status
	// Kind is the function's kind from the manifest.
	Kind abi.Kind
	// Output is the result frame of StatusOK, validated against
	// Config.Limits; with ContinueAsNew, the input of the next run.
	Output []byte
	// ContinueAsNew reports a workflow that called continue_as_new: it
	// ends, and the embedder starts it again as a new run with Output as
	// its input.
	ContinueAsNew bool
	// HandlesCancel reports a workflow call that called watch_cancel: the
	// workflow sees its cancel request and ends itself; the embedder ends
	// one that did not (docs/workflows.md, "Cancellation").
	HandlesCancel bool
	// Error is the application error of StatusError.
	Error *AppError
}

// AppError is an application error the guest returned with set_error
// (docs/abi.md, "Error value").
type AppError struct {
	// Type is the error's stable type, never empty.
	Type string
	// Message is the error's text.
	Message string
	// NonRetryable tells retry policies to stop.
	NonRetryable bool
	// Details is the frame of the error's details Value, nil when it has
	// none.
	Details []byte
	// Frame is the whole error Value's frame as the guest sent it.
	Frame []byte
}

// Error returns "type: message".
func (e *AppError) Error() string {
	if e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

// nullFrame is the frame of null, the input of a request without one.
var nullFrame, _ = codec.EncodeFrame(codec.Null())

// Call runs one guest function to its end in a pooled instance, creating
// (and, on a miss, compiling) what it needs. ctx's cancellation and
// deadline reach the guest: a running guest stops within milliseconds, even
// in a busy loop.
//
// An application error the guest returned is a CallResult with Status
// abi.StatusError and a nil error. Any other failure is an *Error whose Code
// says what happened: function_not_found, invalid_input, module_not_found,
// the compile codes of Compile, trap, exited, timeout, cancelled,
// memory_limit, bad_blob, bad_pointer, abi_violation, import_not_allowed,
// hook_failed or host_closed. After a failure the instance is discarded;
// the host keeps serving other calls.
func (h *Host) Call(ctx context.Context, req *CallRequest) (*CallResult, error) {
	if req == nil {
		return nil, errorf(abi.CodeInvalidInput, "nil call request")
	}
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.calls.Done()
	m, err := h.load(ctx, req.Digest, req.Wasm)
	if err != nil {
		return nil, err
	}
	kind, ok := m.kinds[req.Function]
	if !ok {
		return nil, errorf(abi.CodeFunctionNotFound, "module %s has no function %q; it has: %s", shortDigest(m.digest), req.Function, m.functionNames())
	}
	input := req.Input
	if len(input) == 0 {
		input = nullFrame
	} else if len(input) < codec.HeaderSize || string(input[:codec.HeaderSize]) != string(nullFrame[:codec.HeaderSize]) {
		return nil, errorf(abi.CodeInvalidInput, "the input is not a single-object Avro Value frame (it must start with c301e2a33dff55802237)")
	}
	// The call stops when ctx ends, at its timeout, or when the host closes
	// (Close cancels it through the running list).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := h.timeoutOf(req.Timeout); t > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, t)
		defer cancelTimeout()
	}
	p := m.pool(h.cfg.pagesFor(req.MemoryLimit), h.cfg.MaxIdle)
	inst := p.get()
	if inst == nil {
		if inst, err = h.newInstance(ctx, m, p.pages); err != nil {
			return nil, err
		}
	}
	if !h.track(inst, cancel) {
		inst.close()
		return nil, ErrClosed
	}
	res, err := inst.run(ctx, req, kind, input)
	h.untrack(inst)
	if err == nil && ctx.Err() != nil {
		// The context ended while the guest was returning on its own (it
		// may have seen cancelled() report 1). The caller asked it to stop,
		// so the call ends as stopped, whatever it returned; wazero may have
		// closed the instance meanwhile, so it is not reused.
		err = inst.failure(ctx, ctx.Err(), fmt.Sprintf("call %s", req.Function))
	}
	if err != nil {
		inst.close()
		return nil, err
	}
	p.put(inst)
	return res, nil
}

// callKey is the context key under which a running call's state travels to
// the host functions.
type callKey struct{}

// callState is the state of the call running in an instance; it is reset
// for each call.
type callState struct {
	inst       *instance
	active     bool
	req        *CallRequest
	kind       abi.Kind
	logger     hclog.Logger
	done       <-chan struct{}
	output     []byte
	hasOutput  bool
	appErr     *AppError
	blob       []byte
	hasBlob    bool
	checkpoint []byte
	suspended  bool
	querying   bool // query_request handed over the query
	continued  bool // continue_as_new set the output
	watched    bool // watch_cancel was called
	abort      *Error
	stderr     string // the first line the guest wrote to stderr
	lines      int    // log lines of the call so far
}

// run runs one call in inst.
func (inst *instance) run(ctx context.Context, req *CallRequest, kind abi.Kind, input []byte) (*CallResult, error) {
	cs := &inst.cs
	*cs = callState{inst: inst, active: true, req: req, kind: kind, done: ctx.Done(), checkpoint: req.LastCheckpoint}
	if req.Plugin != "" {
		cs.logger = inst.h.pluginLogger(req.Plugin)
	} else {
		cs.logger = inst.logger
	}
	inst.logs.begin(inst.h.cfg.Logs, time.Now())
	defer func() { inst.endLogs(); cs.active = false; cs.req = nil }()
	ctx = inst.withCall(ctx)

	name := req.Function
	need := uint64(len(name)) + uint64(len(input))
	if need > uint64(inst.scratchCap) {
		if err := inst.grow(ctx, need); err != nil {
			return nil, err
		}
	}
	view, ok := inst.mem.Read(inst.scratch, uint32(need))
	if !ok {
		return nil, errorf(abi.CodeBadPointer, "weft_alloc returned %#x for %d bytes, outside the guest's %d-byte memory", inst.scratch, inst.scratchCap, inst.mem.Size())
	}
	copy(view, name)
	copy(view[len(name):], input)
	inst.stack[0] = abi.Pack(inst.scratch, uint32(len(name)))
	inst.stack[1] = abi.Pack(inst.scratch+uint32(len(name)), uint32(len(input)))
	if err := inst.call.CallWithStack(ctx, inst.stack[:]); err != nil {
		return nil, inst.failure(ctx, err, fmt.Sprintf("call %s", name))
	}
	inst.stdout.flush()
	inst.stderr.flush()
	status := abi.Status(int32(uint32(inst.stack[0])))
	res := &CallResult{Status: status, Kind: kind, HandlesCancel: cs.watched}
	switch {
	case req.Query != nil && !cs.querying:
		return nil, errorf(abi.CodeQueryNotSupported, "workflow %s returned %s without asking for the query %q (query_request): it registers no query handler", name, status, req.Query.Name)
	case cs.querying && status == abi.StatusSuspended:
		return nil, errorf(abi.CodeABIViolation, "workflow %s returned suspended after query_request; it must return the query's answer or error", name)
	case cs.suspended && status != abi.StatusSuspended:
		return nil, errorf(abi.CodeABIViolation, "workflow %s returned %s after await answered suspended; it must unwind and return suspended", name, status)
	case cs.continued && status != abi.StatusOK:
		return nil, errorf(abi.CodeABIViolation, "workflow %s returned %s after continue_as_new; it must return ok", name, status)
	case status == abi.StatusOK && cs.hasOutput:
		res.Output, res.ContinueAsNew = cs.output, cs.continued
	case status == abi.StatusOK:
		return nil, errorf(abi.CodeABIViolation, "%s returned ok without calling set_output", name)
	case status == abi.StatusError && cs.appErr != nil:
		res.Error = cs.appErr
	case status == abi.StatusError:
		return nil, errorf(abi.CodeABIViolation, "%s returned error without calling set_error", name)
	case status == abi.StatusSuspended && kind != abi.KindWorkflow:
		return nil, errorf(abi.CodeABIViolation, "activity %s returned suspended; only workflows suspend", name)
	case status == abi.StatusSuspended && !cs.suspended:
		return nil, errorf(abi.CodeABIViolation, "workflow %s returned suspended, but no await answered suspended", name)
	case status == abi.StatusSuspended:
	default:
		return nil, errorf(abi.CodeABIViolation, "%s returned the unknown status %d", name, int32(status))
	}
	return res, nil
}

// grow replaces the scratch buffer with one of at least need bytes.
func (inst *instance) grow(ctx context.Context, need uint64) error {
	if need > inst.limit || need >= 1<<32 {
		return errorf(abi.CodeMemoryLimit, "the call's name and input take %s, more than the memory limit of %s", mib(int64(need)), mib(int64(inst.limit)))
	}
	if inst.scratchCap > 0 {
		inst.stack[0], inst.stack[1] = uint64(inst.scratch), uint64(inst.scratchCap)
		if err := inst.free.CallWithStack(ctx, inst.stack[:]); err != nil {
			return inst.failure(ctx, err, "call weft_free")
		}
		inst.scratch, inst.scratchCap = 0, 0
	}
	c := uint64(1024)
	for c < need {
		c *= 2
	}
	if c > inst.limit || c >= 1<<32 {
		c = need
	}
	inst.stack[0] = c
	if err := inst.alloc.CallWithStack(ctx, inst.stack[:]); err != nil {
		return inst.failure(ctx, err, fmt.Sprintf("call weft_alloc(%d)", c))
	}
	ptr := uint32(inst.stack[0])
	if uint64(ptr)+c > uint64(inst.mem.Size()) || ptr == 0 {
		return errorf(abi.CodeBadPointer, "weft_alloc(%d) returned %#x, outside the guest's %d-byte memory", c, ptr, inst.mem.Size())
	}
	inst.scratch, inst.scratchCap = ptr, uint32(c)
	return nil
}
