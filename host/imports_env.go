package host

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// envFuncs are the functions of the import module weft:env/v1, which every
// call may use (docs/abi.md, "weft:env/v1").
func envFuncs() []hostFunc {
	return []hostFunc{
		{abi.ImportLog, []api.ValueType{i32, i64}, nil, envLog},
		{abi.ImportSetOutput, []api.ValueType{i64}, nil, envSetOutput},
		{abi.ImportSetError, []api.ValueType{i64}, nil, envSetError},
		{abi.ImportBlobRead, []api.ValueType{i64}, nil, envBlobRead},
	}
}

// envLog is log(level i32, msg i64). It records the UTF-8 message (invalid
// sequences replaced, cut at abi.MaxLogLen bytes) at level (0 trace, 1
// debug, 2 info, 3 warn, 4 error; any other value is info) as a log line of
// the call and on the plugin's logger. It may be called at any time,
// including from _initialize. A message outside memory fails the call with
// bad_pointer.
func envLog(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	msg := sanitize(cs.view(stack[1], "log message"))
	cs.inst.emit(abi.LogLevel(int32(uint32(stack[0]))), SourceLog, msg)
}

// envSetOutput is set_output(frame i64). It hands the call's result to the
// host, which validates the frame and copies it before returning; the guest
// may reuse the memory at once. It may be called once per call, and not
// together with set_error; a second call fails the call with abi_violation,
// a bad frame with bad_blob.
func envSetOutput(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.inCall(abi.ImportSetOutput)
	if cs.hasOutput || cs.appErr != nil {
		cs.failf(abi.CodeABIViolation, "%s called set_output after set_output or set_error", cs.function())
	}
	cs.output = cs.frame(stack[0], "output")
	cs.hasOutput = true
}

// envSetError is set_error(frame i64). It hands the call's application
// error to the host: a map Value with a non-empty string "type", and
// optionally a string "message", a boolean "non_retryable" and any
// "details". The host validates and copies it before returning. Rules as
// for set_output; an error Value of the wrong shape fails the call with
// bad_blob.
func envSetError(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.inCall(abi.ImportSetError)
	if cs.hasOutput || cs.appErr != nil {
		cs.failf(abi.CodeABIViolation, "%s called set_error after set_output or set_error", cs.function())
	}
	frame := cs.frame(stack[0], "error")
	ae, err := parseAppError(frame, cs.inst.h.cfg.Limits)
	if err != nil {
		cs.fail(err)
	}
	cs.appErr = ae
}

// envBlobRead is blob_read(dst i64). It copies the pending blob (the
// snapshot of last_checkpoint, the outcome of future_result) into dst,
// whose length must be exactly the blob's, and clears it. Without a pending
// blob, or with another length, the call fails with abi_violation.
func envBlobRead(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.inCall(abi.ImportBlobRead)
	if !cs.hasBlob {
		cs.failf(abi.CodeABIViolation, "%s called blob_read with no pending blob", cs.function())
	}
	dst := cs.view(stack[0], "blob_read destination")
	if len(dst) != len(cs.blob) {
		cs.failf(abi.CodeABIViolation, "%s called blob_read with %d bytes for a %d-byte blob", cs.function(), len(dst), len(cs.blob))
	}
	copy(dst, cs.blob)
	cs.blob, cs.hasBlob = nil, false
}

// parseAppError reads an error Value frame (docs/abi.md, "Error value").
func parseAppError(frame []byte, limits codec.Limits) (*AppError, *Error) {
	v, err := codec.DecodeFrameLimits(frame, limits)
	if err != nil {
		return nil, wrapf(abi.CodeBadBlob, err, "error value")
	}
	if v.Kind() != codec.KindMap {
		return nil, errorf(abi.CodeBadBlob, "the error value is a %s; it must be a map {type, message, non_retryable, details}", v.Kind())
	}
	ae := &AppError{Frame: frame}
	t, _ := v.Get(abi.ErrorType)
	typ, ok := t.AsString()
	if !ok || typ == "" {
		return nil, errorf(abi.CodeBadBlob, "the error value has no non-empty string field %q", abi.ErrorType)
	}
	ae.Type = typ
	if m, ok := v.Get(abi.ErrorMessage); ok && !m.IsNull() {
		if ae.Message, ok = m.AsString(); !ok {
			return nil, errorf(abi.CodeBadBlob, "the error value's %q is a %s, not a string", abi.ErrorMessage, m.Kind())
		}
	}
	if nr, ok := v.Get(abi.ErrorNonRetryable); ok && !nr.IsNull() {
		if ae.NonRetryable, ok = nr.AsBool(); !ok {
			return nil, errorf(abi.CodeBadBlob, "the error value's %q is a %s, not a boolean", abi.ErrorNonRetryable, nr.Kind())
		}
	}
	if d, ok := v.Get(abi.ErrorDetails); ok && !d.IsNull() {
		if ae.Details, err = codec.EncodeFrame(d); err != nil {
			return nil, wrapf(abi.CodeBadBlob, err, "error details")
		}
	}
	return ae, nil
}
