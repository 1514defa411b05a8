package host

import (
	"context"
	"unicode/utf8"

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
		{abi.ImportProgress, []api.ValueType{i64, i64, i64}, []api.ValueType{i32}, activityProgress},
		{abi.ImportHeartbeat, nil, []api.ValueType{i32}, activityHeartbeat},
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

// activityHeartbeat is heartbeat() -> i32. It tells the embedder's
// Heartbeat hook that the activity is alive, then answers as cancelled
// does: 1 once the task was asked to stop, else 0. An activity with a
// heartbeat timeout calls it (or progress, or checkpoint) within that
// interval, or the embedder stops it.
func activityHeartbeat(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindActivity, abi.ModuleActivity+"."+abi.ImportHeartbeat)
	if hook := cs.req.Heartbeat; hook != nil {
		hook()
	}
	c := ctx.Err() != nil || (cs.req.Cancelled != nil && cs.req.Cancelled())
	stack[0] = 0
	if c {
		stack[0] = 1
	}
}

// activityProgress is progress(done i64, total i64, msg i64) -> i32. It
// hands one progress report to the embedder's Progress hook, synchronously,
// and returns abi.ProgressOK; a report with a negative done or total, done
// above a known total, or a message that is not valid UTF-8 is dropped with
// abi.ProgressRefused, and the call goes on. A message longer than
// abi.MaxProgressMessageLen is cut at a rune boundary. A message outside
// the guest's memory fails the call with bad_pointer.
func activityProgress(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindActivity, abi.ModuleActivity+"."+abi.ImportProgress)
	done, total := int64(stack[0]), int64(stack[1])
	msg, ok := progressMessage(cs.view(stack[2], "progress message"))
	if !ok || done < 0 || total < 0 || (total > 0 && done > total) {
		stack[0] = uint64(uint32(abi.ProgressRefused))
		return
	}
	if hook := cs.req.Progress; hook != nil {
		hook(done, total, msg)
	}
	stack[0] = uint64(uint32(abi.ProgressOK))
}

// progressMessage returns the first abi.MaxProgressMessageLen bytes of b,
// cut at a rune boundary, as a string, and whether they are valid UTF-8.
func progressMessage(b []byte) (string, bool) {
	if len(b) > abi.MaxProgressMessageLen {
		cut := abi.MaxProgressMessageLen
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	if !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}
