package host

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// activityFuncs are the functions of the import module weft:activity/v1,
// which only activity calls may use; a workflow that calls one fails with
// import_not_allowed (docs/abi.md, "weft:activity/v1").
func activityFuncs() []hostFunc {
	return []hostFunc{
		{abi.ImportCheckpoint, []api.ValueType{i64}, nil, activityCheckpoint},
		{abi.ImportLastCheckpoint, nil, []api.ValueType{i64}, activityLastCheckpoint},
		{abi.ImportCancelled, nil, []api.ValueType{i32}, activityCancelled},
	}
}

// activityCheckpoint is checkpoint(frame i64). It records the frame as the
// activity's latest snapshot: the host validates and copies it, and the
// embedder's Checkpoint hook stores it durably before the import returns.
// A bad frame fails the call with bad_blob, a failing hook with
// hook_failed.
func activityCheckpoint(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindActivity, abi.ModuleActivity+"."+abi.ImportCheckpoint)
	frame := cs.frame(stack[0], "checkpoint")
	if hook := cs.req.Checkpoint; hook != nil {
		if err := hook(hookContext(ctx), frame); err != nil {
			cs.fail(wrapf(abi.CodeHookFailed, err, "store the checkpoint of %s", cs.function()))
		}
	}
	cs.checkpoint = frame
}

// activityLastCheckpoint is last_checkpoint() -> i64. It returns the length
// of the activity's latest snapshot (the last checkpoint of this call, else
// the one the task saved in an earlier attempt) and makes it the pending
// blob for blob_read, or returns abi.NoBlob (-1) when there is none.
func activityLastCheckpoint(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindActivity, abi.ModuleActivity+"."+abi.ImportLastCheckpoint)
	if cs.checkpoint == nil {
		stack[0] = api.EncodeI64(abi.NoBlob)
		return
	}
	cs.setBlob(cs.checkpoint)
	stack[0] = uint64(len(cs.checkpoint))
}

// activityCancelled is cancelled() -> i32. It returns 1 once the task was
// asked to stop (the embedder's Cancelled hook, or the call's context
// ending), else 0. A cooperative activity polls it and returns early; one
// that does not is stopped when the context ends.
func activityCancelled(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindActivity, abi.ModuleActivity+"."+abi.ImportCancelled)
	c := ctx.Err() != nil || (cs.req.Cancelled != nil && cs.req.Cancelled())
	stack[0] = 0
	if c {
		stack[0] = 1
	}
}
