package host

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// Host compiles and runs plugins. Create it with New and release it with
// Close. It is safe for concurrent use.
type Host struct {
	cfg     Config
	log     hclog.Logger
	rt      wazero.Runtime
	cache   wazero.CompilationCache
	modules sync.Map // digest → *module
	loggers sync.Map // plugin name → hclog.Logger

	mu     sync.RWMutex // guards closed and calls.Add
	closed bool
	done   chan struct{} // closed by Close

	runMu    sync.Mutex
	running  *instance    // instances running a call, linked through prev/next
	stopping bool         // set by Close: no call may start
	created  atomic.Int64 // instances created
	dropped  atomic.Int64 // instances closed
	calls    sync.WaitGroup
	closeErr error
	once     sync.Once
}

// New creates a Host: one wazero runtime (with the compilation cache in
// cfg.CacheDir when set), WASI and the weft host modules. It fails when the
// cache directory cannot be created or cfg is invalid.
func New(cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	rc, cache, err := cfg.runtimeConfig()
	if err != nil {
		return nil, err
	}
	h.cache = cache
	ctx := context.Background()
	h.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, h.rt); err != nil {
		_ = h.rt.Close(ctx)
		return nil, fmt.Errorf("instantiate wasi: %w", err)
	}
	for _, m := range []struct {
		name string
		fns  []hostFunc
	}{
		{abi.ModuleEnv, envFuncs()},
		{abi.ModuleActivity, activityFuncs()},
		{abi.ModuleWorkflow, workflowFuncs()},
	} {
		if err := instantiateHostModule(ctx, h.rt, m.name, m.fns); err != nil {
			_ = h.rt.Close(ctx)
			return nil, fmt.Errorf("instantiate %s: %w", m.name, err)
		}
	}
	return h, nil
}

// enter registers a call or compile in flight; it fails after Close.
func (h *Host) enter() error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return ErrClosed
	}
	h.calls.Add(1)
	return nil
}

func (h *Host) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

// Close stops every running call (they fail with host_closed), waits for
// them to return, and releases the runtime, its compiled modules and the
// compilation cache. It is idempotent. If ctx ends before the calls return,
// Close returns an error saying so and leaves the runtime open.
func (h *Host) Close(ctx context.Context) error {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		close(h.done)
		h.mu.Unlock()
		// A running guest can only be stopped safely through its call's
		// context (close-on-context-done); closing the runtime under it
		// would race with the guest's own use of its module.
		h.stopRunning()
		done := make(chan struct{})
		go func() { h.calls.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			h.closeErr = fmt.Errorf("close host: calls still running: %w", ctx.Err())
			return
		}
		err := h.rt.Close(ctx)
		if h.cache != nil {
			if cerr := h.cache.Close(ctx); cerr != nil && err == nil {
				err = cerr
			}
		}
		if err != nil {
			h.closeErr = fmt.Errorf("close host: %w", err)
		}
	})
	return h.closeErr
}

// track records inst as running a call that cancel stops. It reports false
// once Close has begun.
func (h *Host) track(inst *instance, cancel context.CancelCauseFunc) bool {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	if h.stopping {
		return false
	}
	inst.cancel = cancel
	inst.prev, inst.next = nil, h.running
	if h.running != nil {
		h.running.prev = inst
	}
	h.running = inst
	return true
}

// untrack forgets a running instance.
func (h *Host) untrack(inst *instance) {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	if inst.prev != nil {
		inst.prev.next = inst.next
	} else if h.running == inst {
		h.running = inst.next
	}
	if inst.next != nil {
		inst.next.prev = inst.prev
	}
	inst.prev, inst.next, inst.cancel = nil, nil, nil
}

// stopRunning cancels every running call with ErrClosed and lets no new
// one start.
func (h *Host) stopRunning() {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	h.stopping = true
	for inst := h.running; inst != nil; inst = inst.next {
		inst.cancel(ErrClosed)
	}
}

// Stats are counters of a Host's instances.
type Stats struct {
	// Created counts the instances created since New.
	Created int64
	// Live is the number of instances now open: idle in a pool or running
	// a call.
	Live int64
}

// Stats returns the host's instance counters.
func (h *Host) Stats() Stats {
	c, d := h.created.Load(), h.dropped.Load()
	return Stats{Created: c, Live: c - d}
}

// pluginLogger returns the logger of the plugin called name.
func (h *Host) pluginLogger(name string) hclog.Logger {
	if l, ok := h.loggers.Load(name); ok {
		return l.(hclog.Logger)
	}
	l, _ := h.loggers.LoadOrStore(name, h.log.Named(name))
	return l.(hclog.Logger)
}

// shortDigest is the first 12 hex digits of a digest, for names in logs.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	return d[:min(12, len(d))]
}

// hostFunc is one function of a host import module.
type hostFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      api.GoModuleFunc
}

func instantiateHostModule(ctx context.Context, rt wazero.Runtime, name string, fns []hostFunc) error {
	b := rt.NewHostModuleBuilder(name)
	for _, f := range fns {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).WithName(f.name).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// timeoutOf returns the timeout of a call: the request's, else the
// configured default.
func (h *Host) timeoutOf(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return h.cfg.Timeout
}
