package host

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/codec"
)

// Config configures a Host. The zero value of every field means its default.
type Config struct {
	// CacheDir is a directory for wazero's on-disk compilation cache, so a
	// restarted daemon loads compiled modules instead of compiling them
	// again. wazero keeps one subdirectory per wazero version and platform.
	// Defaults to no on-disk cache (modules are compiled in memory only).
	CacheDir string
	// Logger receives the host's own messages; each plugin's log lines go
	// to Logger.Named(<plugin>). Defaults to a logger that discards
	// everything.
	Logger hclog.Logger
	// MemoryLimit is the memory limit of a call whose request sets none, in
	// bytes, rounded up to whole 64 KiB pages. Defaults to 64 MiB.
	MemoryLimit int64
	// MaxMemoryLimit is the largest memory limit a call may ask for, in
	// bytes; larger requests are clamped to it. Defaults to 4 GiB, the most
	// a 32-bit wasm memory can address.
	MaxMemoryLimit int64
	// Timeout is the wall-clock timeout of a call whose request sets none.
	// Defaults to no timeout: the call runs until its context ends.
	Timeout time.Duration
	// InitTimeout bounds the creation of an instance, which runs the
	// guest's _initialize. Defaults to 10 s.
	InitTimeout time.Duration
	// MaxIdle is how many idle instances the host keeps per module and
	// memory limit; instances beyond it are closed when their call ends.
	// Defaults to GOMAXPROCS.
	MaxIdle int
	// Limits bounds every frame a guest hands to the host (outputs, errors,
	// checkpoints, workflow arguments, the manifest). Defaults to
	// codec.DefaultLimits (64 levels, 16 MiB).
	Limits codec.Limits
	// Logs bounds what plugins write to the daemon's log (Logger); see
	// LogLimits for the defaults.
	Logs LogLimits
	// ModuleLimits bounds the structure of every module, checked before it
	// is decoded or compiled (Compile, and a Call that loads its module).
	// Zero fields take DefaultModuleLimits; a module's initial memory is
	// bounded by MemoryLimit.
	ModuleLimits ModuleLimits
	// Precompile, when set, is called for a module that passed the
	// structural check, before it is compiled in this process, with its
	// digest and bytes. An error rejects the module: an *Error keeps its
	// code, any other error becomes invalid_module with its text. The
	// weft daemon compiles the module here in a child process under OS
	// limits (PrecompileModule), so the in-process compile that follows
	// finds it in the compilation cache. Defaults to none.
	Precompile func(ctx context.Context, digest string, wasm []byte) error
	// Admitted, when set, reports whether the module of digest passed
	// admission before under the same limits (the embedder keeps that
	// record, e.g. next to the compilation cache); for such a module the
	// host skips the structural check and Precompile. Defaults to none:
	// every module is checked.
	Admitted func(digest string) bool
}

const (
	pageSize           = 64 << 10
	maxPages           = 1 << 16
	defaultMemoryLimit = 64 << 20
	defaultInitTimeout = 10 * time.Second
)

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.MaxMemoryLimit <= 0 || c.MaxMemoryLimit > maxPages*pageSize {
		c.MaxMemoryLimit = maxPages * pageSize
	}
	if c.MemoryLimit <= 0 {
		c.MemoryLimit = min(defaultMemoryLimit, c.MaxMemoryLimit)
	}
	if c.MemoryLimit > c.MaxMemoryLimit {
		return c, fmt.Errorf("host config: MemoryLimit %d exceeds MaxMemoryLimit %d", c.MemoryLimit, c.MaxMemoryLimit)
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("host config: negative Timeout %s", c.Timeout)
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = defaultInitTimeout
	}
	if c.MaxIdle <= 0 {
		c.MaxIdle = runtime.GOMAXPROCS(0)
	}
	if c.Limits.MaxDepth <= 0 {
		c.Limits.MaxDepth = codec.DefaultLimits.MaxDepth
	}
	if c.Limits.MaxSize <= 0 {
		c.Limits.MaxSize = codec.DefaultLimits.MaxSize
	}
	var err error
	if c.Logs, err = c.Logs.withDefaults(); err != nil {
		return c, err
	}
	ml, err := c.ModuleLimits.withDefaults()
	if err != nil {
		return c, err
	}
	c.ModuleLimits = ml
	return c, nil
}

// pagesFor converts a memory limit in bytes into whole pages, clamped to
// the configured maximum.
func (c Config) pagesFor(limit int64) uint32 {
	if limit <= 0 {
		limit = c.MemoryLimit
	}
	limit = min(limit, c.MaxMemoryLimit)
	return uint32((limit + pageSize - 1) / pageSize)
}
