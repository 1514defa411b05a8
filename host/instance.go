package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// instance is one instantiated module. It belongs to one goroutine at a
// time: idle in its pool, or owned by the call running in it.
type instance struct {
	h      *Host
	m      *module
	mod    api.Module
	mem    api.Memory
	call   api.Function // weft_call
	alloc  api.Function // weft_alloc
	free   api.Function // weft_free
	stack  [2]uint64
	limit  uint64 // memory limit in bytes
	logger hclog.Logger

	// scratch is the host-owned buffer (from weft_alloc) that receives the
	// function name and the input of each call.
	scratch, scratchCap uint32

	memRefused bool // the allocator refused to grow the memory
	nano       int64
	cs         callState

	// While the instance runs a call: the call's cancel function and its
	// neighbours in the host's running list.
	cancel     context.CancelCauseFunc
	prev, next *instance
	stdout     lineWriter
	stderr     lineWriter
	// logs is the daemon-log budget of the call or initialization in
	// progress.
	logs logScope
}

// newInstance instantiates m with a memory limit of pages and runs its
// _initialize. Failures are classified like those of a call, with
// memory_limit when the module needs more memory at start than the limit.
func (h *Host) newInstance(ctx context.Context, m *module, pages uint32) (*instance, error) {
	if m.minPages > pages {
		return nil, errorf(abi.CodeMemoryLimit, "the module needs %d pages (%s) of memory at start; the call's memory limit is %d pages (%s)",
			m.minPages, mib(int64(m.minPages)*pageSize), pages, mib(int64(pages)*pageSize))
	}
	inst := &instance{h: h, m: m, limit: uint64(pages) * pageSize, logger: h.pluginLogger(shortDigest(m.digest))}
	inst.cs.inst = inst
	inst.logs.begin(h.cfg.Logs, time.Now())
	defer inst.endLogs()
	inst.stdout = lineWriter{inst: inst, source: SourceStdout, level: abi.LevelInfo}
	inst.stderr = lineWriter{inst: inst, source: SourceStderr, level: abi.LevelWarn}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdout(&inst.stdout).
		WithStderr(&inst.stderr).
		WithWalltime(inst.walltime, 1).
		WithNanotime(inst.nanotime, 1).
		WithNanosleep(inst.nanosleep).
		WithRandSource(randSource{inst})
	ictx, cancel := context.WithTimeout(ctx, h.cfg.InitTimeout)
	defer cancel()
	mod, err := h.rt.InstantiateModule(experimental.WithMemoryAllocator(ictx, inst.allocator()), m.compiled, cfg)
	if err != nil {
		if h.isClosed() {
			return nil, ErrClosed
		}
		return nil, wrapf(abi.CodeInvalidModule, err, "instantiate module %s", shortDigest(m.digest))
	}
	h.created.Add(1)
	inst.mod = mod
	inst.mem = mod.Memory()
	if init := mod.ExportedFunction(abi.ExportInitialize); init != nil {
		if err := init.CallWithStack(inst.withCall(ictx), inst.stack[:]); err != nil {
			ferr := inst.failure(ictx, err, "initialize the module (_initialize)")
			inst.close()
			return nil, ferr
		}
	}
	inst.stdout.flush()
	inst.stderr.flush()
	inst.call = mod.ExportedFunction(abi.ExportCall)
	inst.alloc = mod.ExportedFunction(abi.ExportAlloc)
	inst.free = mod.ExportedFunction(abi.ExportFree)
	return inst, nil
}

// close releases the instance.
func (inst *instance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
		inst.mod = nil
		inst.h.dropped.Add(1)
	}
}

// failure classifies err, returned by a guest function called with ctx,
// into an *Error; what says what was running.
func (inst *instance) failure(ctx context.Context, err error, what string) *Error {
	inst.stdout.flush()
	inst.stderr.flush()
	if a := inst.cs.abort; a != nil {
		return a
	}
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	if inst.h.isClosed() {
		return ErrClosed
	}
	if context.Cause(ctx) == ErrClosed {
		return ErrClosed
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return &Error{Code: abi.CodeTimeout, Message: what + ": stopped at the deadline", Err: context.DeadlineExceeded}
		case sys.ExitCodeContextCanceled:
			return &Error{Code: abi.CodeCancelled, Message: what + ": stopped by cancellation", Err: context.Canceled}
		}
		if inst.memRefused {
			return inst.memoryFailure(what, err)
		}
		msg := fmt.Sprintf("%s: the guest called proc_exit(%d)", what, exit.ExitCode())
		if s := inst.cs.stderr; s != "" {
			msg += "; its stderr began: " + s
		}
		return &Error{Code: abi.CodeExited, Message: msg, Err: err}
	}
	if ctx.Err() != nil {
		// The guest stopped on its own while the context ended; report the
		// context's reason.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &Error{Code: abi.CodeTimeout, Message: what + ": stopped at the deadline", Err: err}
		}
		return &Error{Code: abi.CodeCancelled, Message: what + ": stopped by cancellation", Err: err}
	}
	if inst.memRefused {
		return inst.memoryFailure(what, err)
	}
	msg := what + ": " + clip(err.Error(), 4096)
	if s := inst.cs.stderr; s != "" {
		msg += "\nits stderr began: " + s
	}
	return &Error{Code: abi.CodeTrap, Message: msg, Err: err}
}

func (inst *instance) memoryFailure(what string, err error) *Error {
	return &Error{Code: abi.CodeMemoryLimit, Err: err, Message: fmt.Sprintf(
		"%s: the guest needed more memory than the call's limit of %s (it had %s)", what, mib(int64(inst.limit)), mib(int64(inst.mem.Size())))}
}

// mib renders a byte count in MiB, or KiB below 1 MiB.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.4g MiB", float64(n)/(1<<20))
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + " …(cut)"
}
