package runtime

import (
	"context"
	"time"

	"github.com/weft-run/weft/runtime/journal"
)

// Executor runs plugin functions. The engine declares it and the daemon
// adapts the wazero host to it (house style rule 5), so package runtime never
// imports the host.
//
// Both methods must be safe for concurrent use: the engine calls Call from
// many workers at once.
type Executor interface {
	// Compile validates a module (WebAssembly, ABI version, exports,
	// manifest) and returns what it exports. Compiling the bytes of a module
	// already compiled must be cheap (a cache hit by digest): the engine
	// calls Compile when a worker first loads a module, and a later Call of
	// the same digest should reuse the compiled form. An invalid module
	// gives an error with code fault.ModuleInvalid.
	Compile(ctx context.Context, wasm []byte) (*ModuleInfo, error)
	// Call runs one function to its end. An application error of the plugin
	// (a typed error it returned) is a CallResult with Error set and a nil
	// error. A failure on the host side is a non-nil error whose code (see
	// ErrorCode) says what happened: fault.Trap, fault.MemoryLimit, fault.Timeout
	// (the call's deadline), fault.Cancelled (ctx was cancelled),
	// fault.FunctionNotFound, fault.ModuleInvalid, a codec code for a bad input
	// or output frame, or fault.Internal. ctx must reach the guest: the call
	// stops soon after ctx is done.
	//
	// The engine reuses call for the next task of the same worker once Call
	// returns: the Executor must not keep it, nor any slice in it.
	Call(ctx context.Context, call *Call) (*CallResult, error)
}

// MaxMemoryLimit is the largest memory limit a task may ask for: 4 GiB,
// all that a 32-bit WebAssembly memory can address.
const MaxMemoryLimit = 4 << 30

// ModuleInfo is what Executor.Compile found in a module.
type ModuleInfo struct {
	// Functions are the functions the module exports.
	Functions []Function
}

// Function is one function a module exports.
type Function struct {
	// Name is the function name.
	Name string
	// Kind is "activity" or "workflow".
	Kind string
}

// Call is one invocation of a plugin function.
type Call struct {
	// TaskID is the task the call runs for.
	TaskID string
	// Attempt is the task's attempt counter, 1 for the first attempt.
	Attempt int
	// Module is the module name.
	Module string
	// Digest is the pinned module digest, "sha256:<hex>".
	Digest string
	// Function is the function to run.
	Function string
	// Wasm returns the module bytes, verified against Digest, for an
	// Executor that has no compiled form of Digest cached.
	Wasm func(ctx context.Context) ([]byte, error)
	// Input is the function's argument, a single-object Avro frame.
	Input []byte
	// Checkpoint is the last checkpoint the task saved (a frame), when a
	// resumed task continues from it (persistence §11.3); nil otherwise.
	Checkpoint []byte
	// Timeout is the time left for this call; zero means no limit. ctx
	// carries the same deadline.
	Timeout time.Duration
	// MemoryLimit bounds the guest's linear memory, in bytes; zero means
	// the executor's default.
	MemoryLimit int64
	// Log forwards a guest log line at level ("trace", "debug", "info",
	// "warn" or "error") to the task's event log. Writing the line to the
	// daemon's own log, within bounds, is the Executor's part.
	Log func(level, msg string)
	// LogReplayed is how many of the call's first lines repeat lines that
	// earlier runs of a workflow logged, as its replay runs the same code
	// again: the Executor need not write them to the daemon's log again.
	// Zero for an activity.
	LogReplayed int
	// SaveCheckpoint durably stores frame as the task's checkpoint before it
	// returns. It fails with fault.Conflict when the task is no longer
	// running.
	SaveCheckpoint func(ctx context.Context, frame []byte) error
	// Progress receives each progress report of an activity, synchronously,
	// as the plugin makes it: done and total are at least 0 (total 0 means
	// unknown), done is at most a known total, and message is short valid
	// UTF-8. It never blocks on the store: the engine buffers the latest
	// report and writes task.progress events at most once per
	// Config.ProgressInterval.
	Progress func(done, total int64, message string)
	// Heartbeat records that an activity is alive (the heartbeat import):
	// an activity with a heartbeat timeout that goes longer without one,
	// a progress report or a checkpoint is stopped. It never blocks.
	Heartbeat func()
	// Workflow answers the workflow imports of a workflow call, from the
	// task's journal (docs/workflows.md); nil for an activity.
	Workflow journal.WorkflowHost
	// Query, in a workflow call, asks the guest to answer this query
	// instead of returning its result (docs/abi.md, "Queries"): the
	// CallResult then holds the answer (Output) or the handler's error.
	// The call fails with fault.QueryCommand when a handler calls a
	// workflow command and fault.QueryNotSupported when the guest never
	// asked for the query. Nil for a run.
	Query *Query
}

// Query is a query a workflow call answers.
type Query struct {
	// Name is the query's name.
	Name string
	// Input is the query's argument, a single-object Avro frame.
	Input []byte
}

// CallResult is the outcome of a call that ran to its end.
type CallResult struct {
	// Output is the function's result, a single-object Avro frame, when
	// Error is nil. The engine owns it once Call returns.
	Output []byte
	// Error is the application error the function returned, or nil.
	Error *PluginError
	// Suspended reports a workflow that awaits futures not resolved yet: it
	// returned neither Output nor Error and runs again when one resolves.
	Suspended bool
	// ContinueAsNew reports a workflow that continues as new: it ends,
	// and starts again as a new run with Output as its input.
	ContinueAsNew bool
	// HandlesCancel reports a workflow call that watched its cancel
	// request (watch_cancel): the workflow sees the request and ends
	// itself; the request ends one whose call did not.
	HandlesCancel bool
}

// PluginError is a typed application error a plugin returned (house style
// rule 17).
type PluginError struct {
	// Type is the plugin's stable error type, matched against a retry
	// policy's non-retryable error types.
	Type string
	// Message explains the error.
	Message string
	// NonRetryable tells the engine never to retry the task.
	NonRetryable bool
	// Details is an optional frame with details, nil if none.
	Details []byte
}
