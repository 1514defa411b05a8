package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"

	"github.com/weft-run/weft/host/internal/wasmcheck"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// ModuleLimits bounds the structure of a module. Compile checks them in one
// cheap pass over the binary before wazero decodes or compiles anything, so
// that a small module declaring huge counts cannot make the host allocate
// or compile without bound (docs/operations.md, "Module admission"). A
// field at zero takes its value from DefaultModuleLimits; each names the
// `weft serve` flag that sets it. The initial memory of a module is bounded
// by Config.MemoryLimit.
type ModuleLimits struct {
	// MaxModuleSize bounds the module's size in bytes
	// (--module-max-size).
	MaxModuleSize int64
	// MaxFunctions bounds the functions, imported and defined
	// (--module-max-functions).
	MaxFunctions int64
	// MaxLocals bounds the locals one function declares
	// (--module-max-locals).
	MaxLocals int64
	// MaxTotalLocals bounds the locals of all functions together
	// (--module-max-total-locals).
	MaxTotalLocals int64
	// MaxBodySize bounds the bytes of one function body
	// (--module-max-body-size).
	MaxBodySize int64
	// MaxParams bounds the parameters of one function type
	// (--module-max-params).
	MaxParams int64
	// MaxResults bounds the results of one function type
	// (--module-max-results).
	MaxResults int64
	// MaxTypes bounds the function types (--module-max-types).
	MaxTypes int64
	// MaxBrTableTargets bounds the targets of one br_table
	// (--module-max-br-table-targets).
	MaxBrTableTargets int64
	// MaxNesting bounds how deep blocks nest in one function
	// (--module-max-nesting).
	MaxNesting int64
	// MaxDataSegments bounds the data segments
	// (--module-max-data-segments).
	MaxDataSegments int64
	// MaxDataSize bounds the bytes of all data segments
	// (--module-max-data-size).
	MaxDataSize int64
	// MaxElemSegments bounds the element segments
	// (--module-max-elem-segments).
	MaxElemSegments int64
	// MaxElemSize bounds the elements of all element segments
	// (--module-max-elem-size).
	MaxElemSize int64
	// MaxTableSize bounds the initial and maximum size of a table, in
	// elements (--module-max-table-size).
	MaxTableSize int64
	// MaxTables bounds the tables (--module-max-tables).
	MaxTables int64
	// MaxImports bounds the imports (--module-max-imports).
	MaxImports int64
	// MaxExports bounds the exports (--module-max-exports).
	MaxExports int64
	// MaxGlobals bounds the globals (--module-max-globals).
	MaxGlobals int64
}

// DefaultModuleLimits are the limits of a Config that sets none. They leave
// room of at least ten times what the Go (standard and TinyGo), Rust, C and
// AssemblyScript plugins seen so far use, and keep the cost of compiling
// any module within them to seconds and a few hundred MiB.
var DefaultModuleLimits = ModuleLimits{
	MaxModuleSize:     64 << 20,
	MaxFunctions:      100_000,
	MaxLocals:         50_000,
	MaxTotalLocals:    2_000_000,
	MaxBodySize:       8 << 20,
	MaxParams:         1_000,
	MaxResults:        1_000,
	MaxTypes:          50_000,
	MaxBrTableTargets: 50_000,
	MaxNesting:        10_000,
	MaxDataSegments:   500_000,
	MaxDataSize:       32 << 20,
	MaxElemSegments:   10_000,
	MaxElemSize:       1_000_000,
	MaxTableSize:      1_000_000,
	MaxTables:         100,
	MaxImports:        1_000,
	MaxExports:        10_000,
	MaxGlobals:        100_000,
}

// withDefaults fills in the zero fields of l and rejects negative ones.
func (l ModuleLimits) withDefaults() (ModuleLimits, error) {
	d := DefaultModuleLimits
	for _, f := range []struct {
		name string
		v    *int64
		def  int64
	}{
		{"MaxModuleSize", &l.MaxModuleSize, d.MaxModuleSize},
		{"MaxFunctions", &l.MaxFunctions, d.MaxFunctions},
		{"MaxLocals", &l.MaxLocals, d.MaxLocals},
		{"MaxTotalLocals", &l.MaxTotalLocals, d.MaxTotalLocals},
		{"MaxBodySize", &l.MaxBodySize, d.MaxBodySize},
		{"MaxParams", &l.MaxParams, d.MaxParams},
		{"MaxResults", &l.MaxResults, d.MaxResults},
		{"MaxTypes", &l.MaxTypes, d.MaxTypes},
		{"MaxBrTableTargets", &l.MaxBrTableTargets, d.MaxBrTableTargets},
		{"MaxNesting", &l.MaxNesting, d.MaxNesting},
		{"MaxDataSegments", &l.MaxDataSegments, d.MaxDataSegments},
		{"MaxDataSize", &l.MaxDataSize, d.MaxDataSize},
		{"MaxElemSegments", &l.MaxElemSegments, d.MaxElemSegments},
		{"MaxElemSize", &l.MaxElemSize, d.MaxElemSize},
		{"MaxTableSize", &l.MaxTableSize, d.MaxTableSize},
		{"MaxTables", &l.MaxTables, d.MaxTables},
		{"MaxImports", &l.MaxImports, d.MaxImports},
		{"MaxExports", &l.MaxExports, d.MaxExports},
		{"MaxGlobals", &l.MaxGlobals, d.MaxGlobals},
	} {
		switch {
		case *f.v < 0:
			return l, fmt.Errorf("host config: negative ModuleLimits.%s %d", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return l, nil
}

// check converts l for wasmcheck, with the initial memory bounded by
// memoryPages.
func (l ModuleLimits) check(memoryPages uint32) wasmcheck.Limits {
	u := func(v int64) uint64 { return uint64(v) }
	return wasmcheck.Limits{
		MaxModuleSize:     u(l.MaxModuleSize),
		MaxFunctions:      u(l.MaxFunctions),
		MaxLocals:         u(l.MaxLocals),
		MaxTotalLocals:    u(l.MaxTotalLocals),
		MaxBodySize:       u(l.MaxBodySize),
		MaxParams:         u(l.MaxParams),
		MaxResults:        u(l.MaxResults),
		MaxTypes:          u(l.MaxTypes),
		MaxBrTableTargets: u(l.MaxBrTableTargets),
		MaxNesting:        u(l.MaxNesting),
		MaxDataSegments:   u(l.MaxDataSegments),
		MaxDataSize:       u(l.MaxDataSize),
		MaxElemSegments:   u(l.MaxElemSegments),
		MaxElemSize:       u(l.MaxElemSize),
		MaxTableSize:      u(l.MaxTableSize),
		MaxTables:         u(l.MaxTables),
		MaxMemoryPages:    uint64(memoryPages),
		MaxImports:        u(l.MaxImports),
		MaxExports:        u(l.MaxExports),
		MaxGlobals:        u(l.MaxGlobals),
	}
}

// admit runs the structural pass of cfg (filled in) over wasm: nil, or an
// invalid_module *Error naming the limit a module exceeds.
func (c Config) admit(wasm []byte) error {
	if err := wasmcheck.Check(wasm, c.ModuleLimits.check(c.pagesFor(0))); err != nil {
		var we *wasmcheck.Error
		if errors.As(err, &we) {
			return &Error{Code: abi.CodeInvalidModule, Message: we.Message}
		}
		return wrapf(abi.CodeInvalidModule, err, "check module")
	}
	return nil
}

// CheckModule runs the structural pass of cfg over wasm without compiling
// it: nil when the module is within cfg.ModuleLimits and its initial memory
// within cfg.MemoryLimit, else an invalid_module *Error whose message names
// the value and the limit, e.g. "function 0 declares 4294967295 locals;
// the limit is 50000 (--module-max-locals)".
func CheckModule(cfg Config, wasm []byte) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	return cfg.admit(wasm)
}

// PrecompileModule checks wasm as Compile does (the structural pass), then
// compiles it with the runtime configuration New uses for cfg and with
// cfg.CacheDir as the compilation cache, so that the compiled form lands
// in the cache, keyed exactly as a Host of the same cfg looks it up. It
// neither instantiates the module nor checks its imports or exports. It is
// the work of a compile in a process of its own, under OS limits, ahead of
// the host's Compile (Config.Precompile). It fails with invalid_module.
func PrecompileModule(ctx context.Context, cfg Config, wasm []byte) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if err := cfg.admit(wasm); err != nil {
		return err
	}
	rc, cache, err := cfg.runtimeConfig()
	if err != nil {
		return err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	defer func() {
		_ = rt.Close(context.Background())
		if cache != nil {
			_ = cache.Close(context.Background())
		}
	}()
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		if ctx.Err() != nil {
			return wrapf(abi.CodeCancelled, ctx.Err(), "compile")
		}
		return wrapf(abi.CodeInvalidModule, err, "not a valid WebAssembly module")
	}
	return cm.Close(ctx)
}

// runtimeConfig is the wazero configuration of a Host of c (filled in),
// with its compilation cache when c.CacheDir is set. Everything that enters
// wazero's cache key (the module's bytes, close-on-context-done, function
// listeners: none) is the same for every caller, so a module compiled by
// PrecompileModule is found by New's runtime.
func (c Config) runtimeConfig() (wazero.RuntimeConfig, wazero.CompilationCache, error) {
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(c.MaxMemoryLimit / pageSize))
	if c.CacheDir == "" {
		return rc, nil, nil
	}
	cache, err := wazero.NewCompilationCacheWithDir(c.CacheDir)
	if err != nil {
		return nil, nil, fmt.Errorf("open compilation cache: %w", err)
	}
	return rc.WithCompilationCache(cache), cache, nil
}
