package runtime

import (
	"context"

	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// Modules returns the engine's module registry: deploying, reading and
// deleting modules, and checking a new version against the running
// workflows (package runtime/modules). The HTTP layer serves /v1/modules
// from it.
func (e *Engine) Modules() *modules.Registry { return e.mods }

// moduleExec adapts the Executor to modules.Executor.
type moduleExec struct{ e *Engine }

func (x moduleExec) Compile(ctx context.Context, wasm []byte) ([]store.Function, error) {
	info, err := x.e.exec.Compile(ctx, wasm)
	if err != nil {
		return nil, err
	}
	fns := make([]store.Function, len(info.Functions))
	for i, f := range info.Functions {
		fns[i] = store.Function{Name: f.Name, Kind: store.Kind(f.Kind)}
	}
	return fns, nil
}

func (x moduleExec) Replay(ctx context.Context, t *store.Task, digest string, wasm []byte, host journal.WorkflowHost) (bool, error) {
	res, err := x.e.exec.Call(ctx, &Call{
		TaskID: t.ID, Attempt: t.Attempt, Module: t.Module, Digest: digest, Function: t.Function,
		Wasm:  func(context.Context) ([]byte, error) { return wasm, nil },
		Input: t.Input.Data, Timeout: t.Timeout, Workflow: host,
		Log: func(string, string) {},
	})
	if err != nil {
		return false, err
	}
	return res.Suspended, nil
}
