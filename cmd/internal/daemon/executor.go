package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/store"
)

// executor adapts the wazero host to the engine's Executor. It lives here, in
// the composition root, so that neither runtime nor host imports the other
// (house style rule 4).
type executor struct {
	host *host.Host
}

var _ runtime.Executor = executor{}

// Executor returns the engine's Executor over the wazero host h.
func Executor(h *host.Host) runtime.Executor { return executor{host: h} }

// Compile implements runtime.Executor.
func (x executor) Compile(ctx context.Context, wasm []byte) (*runtime.ModuleInfo, error) {
	info, err := x.host.Compile(ctx, wasm)
	if err != nil {
		return nil, compileError(err)
	}
	out := &runtime.ModuleInfo{Functions: make([]runtime.Function, len(info.Functions))}
	for i, f := range info.Functions {
		out.Functions[i] = runtime.Function{Name: f.Name, Kind: string(f.Kind)}
	}
	return out, nil
}

// Call implements runtime.Executor.
func (x executor) Call(ctx context.Context, c *runtime.Call) (*runtime.CallResult, error) {
	req := &host.CallRequest{
		Digest:         c.Digest,
		Wasm:           c.Wasm,
		Plugin:         c.Module,
		Function:       c.Function,
		Input:          c.Input,
		Timeout:        c.Timeout,
		MemoryLimit:    c.MemoryLimit,
		LastCheckpoint: c.Checkpoint,
		Checkpoint:     c.SaveCheckpoint,
		Progress:       c.Progress,
		Heartbeat:      c.Heartbeat,
		LogFields:      []any{"task_id", c.TaskID},
		LogSkip:        c.LogReplayed,
	}
	if c.Log != nil {
		log := c.Log
		req.Log = func(e host.LogEntry) { log(e.Level.String(), e.Message) }
	}
	if c.Workflow != nil {
		req.Workflow = &workflowHost{wh: c.Workflow}
	}
	if c.Query != nil {
		req.Query = &host.Query{Name: c.Query.Name, Input: c.Query.Input}
	}
	res, err := x.host.Call(ctx, req)
	if err != nil {
		return nil, hostError(err)
	}
	switch res.Status {
	case abi.StatusOK:
		return &runtime.CallResult{Output: res.Output, ContinueAsNew: res.ContinueAsNew, HandlesCancel: res.HandlesCancel}, nil
	case abi.StatusError:
		e := res.Error
		return &runtime.CallResult{Error: &runtime.PluginError{
			Type: e.Type, Message: e.Message, NonRetryable: e.NonRetryable, Details: e.Details,
		}, HandlesCancel: res.HandlesCancel}, nil
	case abi.StatusSuspended:
		return &runtime.CallResult{Suspended: true, HandlesCancel: res.HandlesCancel}, nil
	default:
		return nil, fault.Errorf(fault.Internal, "plugin call ended with status %v", res.Status)
	}
}

// hostError turns a host failure into the engine's error vocabulary: the
// host's codes pass through as task error codes, and every way a module can
// be unfit to deploy becomes module_invalid with the host's explanation.
func hostError(err error) error {
	var he *host.Error
	if !errors.As(err, &he) {
		return err
	}
	switch he.Code {
	case abi.CodeInvalidModule, abi.CodeMissingExport, abi.CodeABIMismatch, abi.CodeInvalidManifest:
		return &fault.Error{Code: fault.ModuleInvalid, Message: fmt.Sprintf("%s: %s", he.Code, he.Message)}
	}
	return &fault.Error{Code: fault.Code(he.Code), Message: he.Message}
}

// compileError is hostError for a deploy: a module that traps, exits or
// outgrows its memory while it initializes is unfit to deploy, like one
// that fails validation.
func compileError(err error) error {
	switch host.ErrorCode(err) {
	case abi.CodeTrap, abi.CodeExited, abi.CodeMemoryLimit:
		var he *host.Error
		errors.As(err, &he)
		return &fault.Error{Code: fault.ModuleInvalid, Message: fmt.Sprintf("%s: %s", he.Code, he.Message)}
	}
	return hostError(err)
}

// workflowHost adapts the engine's WorkflowHost to the host's: the same
// calls, with the host's types.
type workflowHost struct {
	wh    journal.WorkflowHost
	ids   []int64                 // reused by Await
	cmd   journal.ActivityCommand // reused by ScheduleActivity
	retry journal.ActivityRetry   // reused by ScheduleActivity
	child journal.ChildWorkflow   // reused by ScheduleActivity
}

var _ host.WorkflowHost = (*workflowHost)(nil)

// ScheduleActivity implements host.WorkflowHost.
func (h *workflowHost) ScheduleActivity(ctx context.Context, c host.ActivityCall) (host.FutureID, error) {
	h.cmd = journal.ActivityCommand{
		Module: c.Module, Function: c.Function, Input: c.Input, Timeout: c.Options.Timeout,
		ScheduleToStartTimeout: c.Options.ScheduleToStartTimeout, HeartbeatTimeout: c.Options.HeartbeatTimeout,
	}
	if r := c.Options.Retry; r != nil {
		h.retry = journal.ActivityRetry{
			MaxAttempts:            r.MaxAttempts,
			InitialInterval:        r.InitialInterval,
			BackoffCoefficient:     r.BackoffCoefficient,
			MaxInterval:            r.MaxInterval,
			NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		}
		h.cmd.Retry = &h.retry
	}
	if cw := c.Options.ChildWorkflow; cw != nil {
		h.child = journal.ChildWorkflow{WorkflowID: cw.WorkflowID, ParentClosePolicy: store.ParentClosePolicy(cw.ParentClosePolicy)}
		h.cmd.Child = &h.child
	}
	id, err := h.wh.ScheduleActivity(ctx, &h.cmd)
	return host.FutureID(id), err
}

// StartTimer implements host.WorkflowHost.
func (h *workflowHost) StartTimer(ctx context.Context, d time.Duration) (host.FutureID, error) {
	id, err := h.wh.StartTimer(ctx, d)
	return host.FutureID(id), err
}

// WaitSignal implements host.WorkflowHost.
func (h *workflowHost) WaitSignal(ctx context.Context, name string, timeout time.Duration) (host.FutureID, error) {
	id, err := h.wh.WaitSignal(ctx, name, timeout)
	return host.FutureID(id), err
}

// Await implements host.WorkflowHost.
func (h *workflowHost) Await(ctx context.Context, ids []host.FutureID, all bool) (int, bool, error) {
	h.ids = h.ids[:0]
	for _, id := range ids {
		h.ids = append(h.ids, int64(id))
	}
	return h.wh.Await(ctx, h.ids, all)
}

// Result implements host.WorkflowHost.
func (h *workflowHost) Result(ctx context.Context, id host.FutureID) (host.FutureResult, error) {
	r, err := h.wh.Result(ctx, int64(id))
	return host.FutureResult{Outcome: abi.Outcome(r.Outcome), Frame: r.Frame}, err
}

// Now implements host.WorkflowHost.
func (h *workflowHost) Now() time.Time { return h.wh.Now() }

// Random implements host.WorkflowHost.
func (h *workflowHost) Random(p []byte) { h.wh.Random(p) }

// History implements host.WorkflowHost.
func (h *workflowHost) History() (length, size int64) { return h.wh.History() }
