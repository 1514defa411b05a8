package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// Module admission (docs/operations.md, "Module admission"): a structural
// pass in the host bounds what a module declares, and the compile itself
// runs first in a child process of this binary under OS limits, so that a
// module whose compile would take the daemon's memory or minutes of its CPU
// kills only the child.

// Defaults of the compile child.
const (
	defaultCompileTimeout   = 60 * time.Second
	defaultCompileMaxMemory = 2 << 30
	defaultMemoryLimit      = 64 << 20
	defaultCompileWorkers   = 2
	admittedDir             = "admitted"
	compileStderrMax        = 64 << 10
	// exitRejected is the child's status for a module it rejects; its
	// stderr holds the reason.
	exitRejected = 3
)

// Admission is the module-admission part of the daemon's configuration
// (docs/operations.md, "Module admission").
type Admission struct {
	// Limits are the structural limits a module is checked against.
	Limits host.ModuleLimits
	// MemoryLimit is the memory limit of a plugin call whose task sets
	// none; a module's initial memory must fit in it.
	MemoryLimit int64
	// CompileTimeout is the wall-clock and CPU time a compile may take.
	CompileTimeout time.Duration
	// CompileMaxMemory is the memory the compile child may take beyond
	// its start.
	CompileMaxMemory int64
	// CompileWorkers is how many compile children run at once.
	CompileWorkers int
}

// addAdmissionFlags registers the flags of module admission on f.
func addAdmissionFlags(f *pflag.FlagSet, c *Admission) {
	d := host.DefaultModuleLimits
	l := &c.Limits
	SizeVar(f, &c.MemoryLimit, "memory-limit", defaultMemoryLimit, "memory limit of a plugin call whose task sets none, in bytes; a module's initial memory must fit in it")
	f.DurationVar(&c.CompileTimeout, "compile-timeout", defaultCompileTimeout, "wall-clock and CPU time a module's compile may take before the deploy fails")
	SizeVar(f, &c.CompileMaxMemory, "compile-max-memory", defaultCompileMaxMemory, "memory, in bytes, the child process that compiles a module may take beyond its start")
	f.IntVar(&c.CompileWorkers, "compile-workers", defaultCompileWorkers, "compile children run at once; further compiles wait their turn")
	SizeVar(f, &l.MaxModuleSize, "module-max-size", d.MaxModuleSize, "largest module, in bytes")
	f.Int64Var(&l.MaxFunctions, "module-max-functions", d.MaxFunctions, "most functions of a module, imported and defined")
	f.Int64Var(&l.MaxLocals, "module-max-locals", d.MaxLocals, "most locals one function declares")
	f.Int64Var(&l.MaxTotalLocals, "module-max-total-locals", d.MaxTotalLocals, "most locals of all functions of a module together")
	SizeVar(f, &l.MaxBodySize, "module-max-body-size", d.MaxBodySize, "largest function body, in bytes")
	f.Int64Var(&l.MaxParams, "module-max-params", d.MaxParams, "most parameters of a function type")
	f.Int64Var(&l.MaxResults, "module-max-results", d.MaxResults, "most results of a function type")
	f.Int64Var(&l.MaxTypes, "module-max-types", d.MaxTypes, "most function types of a module")
	f.Int64Var(&l.MaxBrTableTargets, "module-max-br-table-targets", d.MaxBrTableTargets, "most targets of one br_table")
	f.Int64Var(&l.MaxNesting, "module-max-nesting", d.MaxNesting, "deepest nesting of blocks in a function")
	f.Int64Var(&l.MaxDataSegments, "module-max-data-segments", d.MaxDataSegments, "most data segments of a module")
	SizeVar(f, &l.MaxDataSize, "module-max-data-size", d.MaxDataSize, "most bytes of all data segments of a module")
	f.Int64Var(&l.MaxElemSegments, "module-max-elem-segments", d.MaxElemSegments, "most element segments of a module")
	f.Int64Var(&l.MaxElemSize, "module-max-elem-size", d.MaxElemSize, "most elements of all element segments of a module")
	f.Int64Var(&l.MaxTableSize, "module-max-table-size", d.MaxTableSize, "largest initial or maximum size of a table, in elements")
	f.Int64Var(&l.MaxTables, "module-max-tables", d.MaxTables, "most tables of a module")
	f.Int64Var(&l.MaxImports, "module-max-imports", d.MaxImports, "most imports of a module")
	f.Int64Var(&l.MaxExports, "module-max-exports", d.MaxExports, "most exports of a module")
	f.Int64Var(&l.MaxGlobals, "module-max-globals", d.MaxGlobals, "most globals of a module")
}

// validate rejects settings that cannot work.
func (c Admission) validate() error {
	switch {
	case c.MemoryLimit <= 0 || c.MemoryLimit > 4<<30:
		return fmt.Errorf("--memory-limit must be between 1 and %d bytes", int64(4<<30))
	case c.CompileTimeout <= 0:
		return fmt.Errorf("--compile-timeout must be positive")
	case c.CompileMaxMemory < 256<<20:
		return fmt.Errorf("--compile-max-memory must be at least %d bytes", 256<<20)
	case c.CompileWorkers < 1:
		return fmt.Errorf("--compile-workers must be at least 1")
	}
	return nil
}

// compileJob is what the daemon hands its compile child: the parts of the
// host configuration that decide how a module is checked and compiled, and
// the child's own limits.
type compileJob struct {
	CacheDir       string            `json:"cache_dir"`
	MemoryLimit    int64             `json:"memory_limit"`
	MaxMemoryLimit int64             `json:"max_memory_limit"`
	Limits         host.ModuleLimits `json:"limits"`
	MaxMemory      int64             `json:"max_memory"`
	CPUSeconds     uint64            `json:"cpu_seconds"`
}

// hostConfig is the host configuration the job describes.
func (j compileJob) hostConfig() host.Config {
	return host.Config{CacheDir: j.CacheDir, MemoryLimit: j.MemoryLimit, MaxMemoryLimit: j.MaxMemoryLimit, ModuleLimits: j.Limits}
}

// childCompiler compiles modules in child processes of bin (Precompile is
// a host.Config.Precompile), each under the limits of cfg, and remembers in
// the cache directory the digests a child admitted (Admitted is a
// host.Config.Admitted).
type childCompiler struct {
	bin     string
	job     compileJob
	timeout time.Duration
	stop    context.Context // the daemon's life: its end kills every child
	slots   chan struct{}   // one per child that may run
	log     hclog.Logger

	fingerprint string // of the job's limits, naming the folder of markers
}

// newChildCompiler returns the compiler of a daemon whose host has cfg. Its
// children run bin (empty: this executable).
func newChildCompiler(stop context.Context, bin string, cfg host.Config, a Admission, log hclog.Logger) (*childCompiler, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the weft binary for the compile child: %w", err)
		}
		bin = exe
	}
	job := compileJob{
		CacheDir: cfg.CacheDir, MemoryLimit: cfg.MemoryLimit, MaxMemoryLimit: cfg.MaxMemoryLimit, Limits: cfg.ModuleLimits,
		MaxMemory: a.CompileMaxMemory, CPUSeconds: uint64((a.CompileTimeout + time.Second - 1) / time.Second),
	}
	// A child killed while it wrote the cache leaves a temporary file. The
	// cache may be shared (--cache) with daemons compiling right now, so
	// only files older than any compile may be are removed.
	if tmps, err := filepath.Glob(filepath.Join(cfg.CacheDir, "wazero-*", "*.tmp")); err == nil {
		for _, f := range tmps {
			if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > 2*a.CompileTimeout {
				_ = os.Remove(f)
			}
		}
	}
	limits := job
	limits.CacheDir = ""
	fp, err := json.Marshal(limits)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(fp)
	return &childCompiler{
		bin:         bin,
		job:         job,
		fingerprint: hex.EncodeToString(sum[:6]),
		timeout:     a.CompileTimeout,
		stop:        stop,
		slots:       make(chan struct{}, max(1, a.CompileWorkers)),
		log:         log,
	}, nil
}

// marker is the file that records digest as admitted by a child, in a
// folder per wazero version (a new wazero compiles anew) and per admission
// configuration (other limits admit anew).
func (c *childCompiler) marker(digest string) string {
	return filepath.Join(c.job.CacheDir, admittedDir, wazeroVersion(), c.fingerprint, strings.TrimPrefix(digest, "sha256:"))
}

// Admitted implements host.Config.Admitted: whether a child admitted
// digest under the same configuration before.
func (c *childCompiler) Admitted(digest string) bool {
	_, err := os.Stat(c.marker(digest))
	return err == nil
}

// Precompile implements host.Config.Precompile: it compiles wasm in a
// child process, which fills the compilation cache, and records the digest
// as admitted.
func (c *childCompiler) Precompile(ctx context.Context, digest string, wasm []byte) error {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return &host.Error{Code: abi.CodeCancelled, Message: "the deploy was abandoned while the module waited to compile", Err: ctx.Err()}
	case <-c.stop.Done():
		return &host.Error{Code: abi.CodeCancelled, Message: "the daemon is shutting down", Err: c.stop.Err()}
	}
	err := c.compile(ctx, digest, wasm)
	<-c.slots
	if err != nil {
		return err
	}
	marker := c.marker(digest)
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		c.log.Warn("record admitted module", "digest", digest, "error", err)
		return nil
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		c.log.Warn("record admitted module", "digest", digest, "error", err)
	}
	return nil
}

// compile runs one child and turns its end into the host's vocabulary.
func (c *childCompiler) compile(ctx context.Context, digest string, wasm []byte) error {
	job, err := json.Marshal(c.job)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	stopped := context.AfterFunc(c.stop, cancel)
	defer stopped()

	cmd := exec.CommandContext(ctx, c.bin, "internal", "compile", "--job", string(job))
	cmd.Stdin = bytes.NewReader(wasm)
	stderr := &capped{max: compileStderrMax}
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(), "GOTRACEBACK=none")
	configureChild(cmd)
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err == nil {
		c.log.Debug("compiled in a child", "digest", digest, "elapsed", elapsed)
		return nil
	}
	msg := strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	exited := errors.As(err, &ee)
	switch {
	case c.stop.Err() != nil:
		return &host.Error{Code: abi.CodeCancelled, Message: "the daemon is shutting down; the module's compile was stopped", Err: err}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &host.Error{
			Code: abi.CodeInvalidModule, Err: err,
			Message: fmt.Sprintf("compiling the module took longer than its time limit of %s (--compile-timeout)", c.timeout),
		}
	case ctx.Err() != nil:
		return &host.Error{Code: abi.CodeCancelled, Message: "the deploy was abandoned while the module compiled", Err: err}
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory"):
		c.log.Warn("compile child ran out of memory", "digest", digest, "elapsed", elapsed)
		return &host.Error{
			Code: abi.CodeInvalidModule, Err: err,
			Message: fmt.Sprintf("compiling the module needed more than its memory limit of %d bytes (--compile-max-memory)", c.job.MaxMemory),
		}
	case exited && ee.ExitCode() == exitRejected:
		return &host.Error{Code: abi.CodeInvalidModule, Message: msg}
	case exited && cpuLimited(ee, c.job.CPUSeconds):
		c.log.Warn("compile child ran out of CPU time", "digest", digest, "elapsed", elapsed)
		return &host.Error{
			Code: abi.CodeInvalidModule, Err: err,
			Message: fmt.Sprintf("compiling the module used more than its CPU time limit of %d s (--compile-timeout)", c.job.CPUSeconds),
		}
	default:
		c.log.Error("compile child failed", "digest", digest, "error", err, "stderr", msg)
		return &host.Error{
			Code: abi.CodeInvalidModule, Err: err,
			Message: fmt.Sprintf("the process compiling the module failed (%v): killed by a limit of the machine, or out of memory", err),
		}
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// wazeroVersion is the version of wazero built into this binary.
func wazeroVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				return d.Version
			}
		}
	}
	return "unknown"
}

// Errors of RunCompileChild.
var (
	// ErrBadJob: the job is not one the daemon writes.
	ErrBadJob = errors.New("bad compile job")
	// ErrModuleRejected: the module broke a rule of admission; the reason
	// is written to stderr. The process exits with ExitRejected.
	ErrModuleRejected = errors.New("module rejected")
)

// ExitRejected is the compile child's exit status for a module it rejects;
// its stderr holds the reason.
const ExitRejected = exitRejected

// RunCompileChild is the compile child's side (`weft internal compile --job
// JOB`): limit this process, read the module from stdin, check and compile
// it into the cache with the daemon's configuration that job (JSON) carries.
// The daemon runs it in a child process of Config.CompileBin, so that a
// compile bomb kills only the child.
func RunCompileChild(ctx context.Context, job string, stdin io.Reader, stderr io.Writer) error {
	var j compileJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("%w: --job: %w", ErrBadJob, err)
	}
	if j.MaxMemory > 0 {
		// A short-lived process with a hard ceiling: collect seldom, and
		// hard only near the ceiling.
		debug.SetMemoryLimit(j.MaxMemory)
		debug.SetGCPercent(400)
	}
	if err := limitSelf(uint64(j.MaxMemory), j.CPUSeconds); err != nil {
		return fmt.Errorf("limit the compile process: %w", err)
	}
	max := j.Limits.MaxModuleSize
	if max <= 0 {
		max = host.DefaultModuleLimits.MaxModuleSize
	}
	wasm, err := io.ReadAll(io.LimitReader(stdin, max+1))
	if err != nil {
		return fmt.Errorf("read the module: %w", err)
	}
	if err := host.PrecompileModule(ctx, j.hostConfig(), wasm); err != nil {
		var he *host.Error
		if errors.As(err, &he) && he.Code == abi.CodeInvalidModule {
			fmt.Fprint(stderr, he.Message)
			return ErrModuleRejected
		}
		return err
	}
	return nil
}

// CompileChildMain runs the compile child and exits the process when args
// (os.Args[1:]) are those the daemon starts it with (`internal compile
// --job JOB`); otherwise it returns at once. A test binary that runs
// daemons with Config.CompileBin set to itself (os.Executable) calls it
// first in its TestMain, and so is its daemons' compile child.
func CompileChildMain(args []string) {
	if len(args) != 4 || args[0] != "internal" || args[1] != "compile" || args[2] != "--job" {
		return
	}
	err := RunCompileChild(context.Background(), args[3], os.Stdin, os.Stderr)
	switch {
	case err == nil:
		os.Exit(0)
	case errors.Is(err, ErrModuleRejected):
		os.Exit(ExitRejected)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
