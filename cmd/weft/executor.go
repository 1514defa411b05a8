package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// executor adapts the wazero host to the engine's Executor. It lives here, in
// the composition root, so that neither runtime nor host imports the other
// (house style rule 4).
type executor struct {
	host *host.Host
}

var _ runtime.Executor = executor{}

// Compile implements runtime.Executor.
func (x executor) Compile(ctx context.Context, wasm []byte) (*runtime.ModuleInfo, error) {
	info, err := x.host.Compile(ctx, wasm)
	if err != nil {
		return nil, hostError(err)
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
		LastCheckpoint: c.Checkpoint,
		Checkpoint:     c.SaveCheckpoint,
	}
	if c.Log != nil {
		log := c.Log
		req.Log = func(e host.LogEntry) { log(e.Level.String(), e.Message) }
	}
	res, err := x.host.Call(ctx, req)
	if err != nil {
		return nil, hostError(err)
	}
	switch res.Status {
	case abi.StatusOK:
		return &runtime.CallResult{Output: res.Output}, nil
	case abi.StatusError:
		e := res.Error
		return &runtime.CallResult{Error: &runtime.PluginError{
			Type: e.Type, Message: e.Message, NonRetryable: e.NonRetryable, Details: e.Details,
		}}, nil
	default:
		return nil, runtime.Errorf(runtime.CodeInternal, "plugin call ended with status %v", res.Status)
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
		return &runtime.Error{Code: runtime.CodeModuleInvalid, Message: fmt.Sprintf("%s: %s", he.Code, he.Message)}
	}
	return &runtime.Error{Code: runtime.Code(he.Code), Message: he.Message}
}
