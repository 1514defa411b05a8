package host

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// callCtx is a context that carries an instance's call state to the host
// functions. Guest code runs only under such a context, so every host
// function finds the instance it serves. A new one is made for every guest
// call: wazero's watcher goroutine may still read a call's context after
// the call returned, so it is never reused.
type callCtx struct {
	context.Context
	cs *callState
}

// Value returns the call state for callKey, else the parent's value.
func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return c.cs
	}
	return c.Context.Value(key)
}

// withCall returns ctx carrying inst's call state.
func (inst *instance) withCall(ctx context.Context) context.Context {
	return &callCtx{Context: ctx, cs: &inst.cs}
}

// hookContext returns the context to hand an embedder's hook: the call's
// own context, without the wrapper that carries the call state.
func hookContext(ctx context.Context) context.Context {
	if c, ok := ctx.(*callCtx); ok {
		return c.Context
	}
	return ctx
}

// stateOf returns the call state in ctx.
func stateOf(ctx context.Context) *callState {
	if c, ok := ctx.(*callCtx); ok {
		return c.cs
	}
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil {
		// Only a guest the host runs can call a host function, and it always
		// runs under withCall.
		panic(errorf(abi.CodeABIViolation, "host function called without a call state"))
	}
	return cs
}

// fail aborts the running guest call with e: the host function panics,
// wazero unwinds the guest, and the call fails with e's code.
func (cs *callState) fail(e *Error) {
	if cs.abort == nil {
		cs.abort = e
	}
	panic(e)
}

func (cs *callState) failf(code abi.Code, format string, args ...any) {
	cs.fail(errorf(code, format, args...))
}

// function names the running function for messages.
func (cs *callState) function() string {
	if cs.req == nil {
		return "the module"
	}
	return fmt.Sprintf("%s %q", cs.kind, cs.req.Function)
}

// inCall fails the call when no weft_call is running (an import called
// from _initialize or weft_manifest).
func (cs *callState) inCall(imp string) {
	if !cs.active {
		cs.failf(abi.CodeABIViolation, "%s called outside weft_call", imp)
	}
}

// need fails the call unless the running function is of kind, naming the
// import imp.
func (cs *callState) need(kind abi.Kind, imp string) {
	cs.inCall(imp)
	if cs.kind != kind {
		who := "activities"
		if kind == abi.KindWorkflow {
			who = "workflows"
		}
		cs.failf(abi.CodeImportNotAllowed, "%s called %s, which only %s may call", cs.function(), imp, who)
	}
}

// view returns the guest memory a packed pointer and length name, without
// copying; it fails the call with bad_pointer when the range is outside the
// memory or overflows.
func (cs *callState) view(packed uint64, what string) []byte {
	ptr, n := abi.Unpack(packed)
	mem := cs.inst.mem
	if uint64(ptr)+uint64(n) > uint64(mem.Size()) {
		cs.failf(abi.CodeBadPointer, "%s: %d bytes at %#x are outside the guest's %d-byte memory", what, n, ptr, mem.Size())
	}
	b, _ := mem.Read(ptr, n)
	return b
}

// frame returns a copy of the frame at packed after validating it against
// the host's limits; a bad frame fails the call with bad_blob.
func (cs *callState) frame(packed uint64, what string) []byte {
	b := cs.view(packed, what)
	if err := codec.ValidateFrame(b, cs.inst.h.cfg.Limits); err != nil {
		cs.fail(wrapf(abi.CodeBadBlob, err, "%s from %s", what, cs.function()))
	}
	return append([]byte(nil), b...)
}

// name returns the UTF-8 name at packed; empty names are allowed only when
// optional.
func (cs *callState) name(packed uint64, what string, optional bool) string {
	b := cs.view(packed, what)
	switch {
	case len(b) == 0 && !optional:
		cs.failf(abi.CodeABIViolation, "%s is empty", what)
	case len(b) > abi.MaxNameLen:
		cs.failf(abi.CodeABIViolation, "%s is %d bytes; the most is %d", what, len(b), abi.MaxNameLen)
	case !utf8.Valid(b):
		cs.failf(abi.CodeABIViolation, "%s is not valid UTF-8", what)
	}
	return string(b)
}

// setBlob makes b the pending blob that blob_read copies.
func (cs *callState) setBlob(b []byte) {
	cs.blob, cs.hasBlob = b, true
}

// emit records one log line of the instance: to the call's Log hook, and
// to the plugin's logger within the budgets of Config.Logs.
func (inst *instance) emit(level abi.LogLevel, source, msg string) {
	cs := &inst.cs
	if source == SourceStderr && cs.stderr == "" {
		cs.stderr = clip(msg, 512)
	}
	logger := inst.logger
	if cs.active {
		logger = cs.logger
		if cs.req.Log != nil {
			cs.req.Log(LogEntry{Level: level, Source: source, Message: msg})
		}
		if cs.lines++; cs.lines <= cs.req.LogSkip {
			return // the logger has it from an earlier call
		}
	}
	hl := hclogLevel(level)
	if hl < logger.GetLevel() {
		return // below the logger's level: nothing to write, nothing to spend
	}
	lim := inst.h.cfg.Logs
	now := time.Now()
	if inst.logs.admit(lim, inst.m.logs, now, len(msg)) {
		msg = cutLine(msg, lim.MaxLine)
		if cs.active {
			logger.Log(hl, msg, inst.logArgs("source", source)...)
		} else {
			logger.Log(hl, msg, "source", source)
		}
	}
	if inst.logs.due(lim, now, false) {
		inst.reportDropped(now)
	}
}

// logArgs returns the fields of a line of the call in progress: the
// function, the request's LogFields, and kv.
func (inst *instance) logArgs(kv ...any) []any {
	cs := &inst.cs
	args := make([]any, 0, 2+len(cs.req.LogFields)+len(kv))
	args = append(args, "function", cs.req.Function)
	args = append(args, cs.req.LogFields...)
	return append(args, kv...)
}

// reportDropped writes the warning that counts the lines the current call
// or initialization dropped from the daemon's log since the last one.
func (inst *instance) reportDropped(now time.Time) {
	lines, bytes := inst.logs.take(now)
	const msg = "plugin log lines dropped"
	if inst.cs.active {
		inst.cs.logger.Warn(msg, inst.logArgs("dropped_lines", lines, "dropped_bytes", bytes)...)
		return
	}
	inst.logger.Warn(msg, "dropped_lines", lines, "dropped_bytes", bytes)
}

// endLogs ends the log scope of a call or an initialization: what it
// dropped and did not report yet is reported now.
func (inst *instance) endLogs() {
	if now := time.Now(); inst.logs.due(inst.h.cfg.Logs, now, true) {
		inst.reportDropped(now)
	}
}

// sanitize makes a guest's log message valid UTF-8 of at most
// abi.MaxLogLen bytes, without a trailing newline.
func sanitize(b []byte) string {
	if len(b) > abi.MaxLogLen {
		b = b[:abi.MaxLogLen]
	}
	s := strings.TrimRight(string(b), "\r\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

func hclogLevel(l abi.LogLevel) hclog.Level {
	switch l {
	case abi.LevelTrace:
		return hclog.Trace
	case abi.LevelDebug:
		return hclog.Debug
	case abi.LevelWarn:
		return hclog.Warn
	case abi.LevelError:
		return hclog.Error
	}
	return hclog.Info
}
