package host_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/host/internal/wasmcheck"
	"github.com/weft-run/weft/host/internal/wasmgen"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// committedGuests are every guest in the repository: Go, C, examples and
// test data.
var committedGuests = []string{
	testkitPath, hostilePath, wfkitPath, testkitCPath,
	"../examples/hello-go/hello.wasm",
	"../examples/hello-c/hello.wasm",
	"../examples/deploy-pipeline/go/pipeline.wasm",
	"../examples/deploy-pipeline/c/pipeline.wasm",
	"../cmd/weft/testdata/wfbench.wasm",
	"../cmd/weft/testdata/wfbench-c.wasm",
}

// TestAdmissionCommittedGuestsHaveMargin measures every committed guest and
// requires each value to stay a tenth or less of its default limit, so
// the defaults admit plugins ten times larger than ours.
func TestAdmissionCommittedGuestsHaveMargin(t *testing.T) {
	t.Parallel()
	defaults := limitsOf(host.Config{})
	for _, path := range committedGuests {
		wasm := MustReadWasm(t, path)
		seen, err := wasmcheck.Measure(wasm)
		require.NoError(t, err, path)
		require.NoError(t, host.CheckModule(host.Config{}, wasm), path)
		sv, dv := reflect.ValueOf(seen), reflect.ValueOf(defaults)
		for i := range sv.NumField() {
			name := sv.Type().Field(i).Name
			require.LessOrEqual(t, 10*sv.Field(i).Uint(), dv.Field(i).Uint(), "%s: %s is %d of %d", path, name, sv.Field(i).Uint(), dv.Field(i).Uint())
		}
	}
}

// limitsOf returns the limits a Host of cfg checks, with cfg's zero fields
// at their defaults: the initial memory from the memory limit, the rest
// from DefaultModuleLimits.
func limitsOf(cfg host.Config) wasmcheck.Limits {
	d := host.DefaultModuleLimits
	u := func(v int64) uint64 { return uint64(v) }
	mem := cfg.MemoryLimit
	if mem == 0 {
		mem = 64 << 20
	}
	return wasmcheck.Limits{
		MaxModuleSize: u(d.MaxModuleSize), MaxFunctions: u(d.MaxFunctions), MaxLocals: u(d.MaxLocals),
		MaxTotalLocals: u(d.MaxTotalLocals), MaxBodySize: u(d.MaxBodySize), MaxParams: u(d.MaxParams),
		MaxResults: u(d.MaxResults), MaxTypes: u(d.MaxTypes), MaxBrTableTargets: u(d.MaxBrTableTargets),
		MaxNesting: u(d.MaxNesting), MaxDataSegments: u(d.MaxDataSegments), MaxDataSize: u(d.MaxDataSize),
		MaxElemSegments: u(d.MaxElemSegments), MaxElemSize: u(d.MaxElemSize), MaxTableSize: u(d.MaxTableSize),
		MaxTables: u(d.MaxTables), MaxMemoryPages: u(mem / pageSize), MaxImports: u(d.MaxImports),
		MaxExports: u(d.MaxExports), MaxGlobals: u(d.MaxGlobals),
	}
}

// Module assembly for the limits wasmgen does not reach.

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sec(id byte, parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}

func mod(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

func repeat(n int, b []byte) []byte {
	var out []byte
	for range n {
		out = append(out, b...)
	}
	return out
}

var i32Zero = []byte{0x41, 0x00, 0x0b} // i32.const 0, end

// TestAdmissionLimits builds, for every limit, a module just over it and
// requires an invalid_module error whose message names the value, the
// limit and its flag.
func TestAdmissionLimits(t *testing.T) {
	t.Parallel()
	manyFuncs := func(n int, locals uint32) []byte {
		var m wasmgen.Module
		for range n {
			m.RawFunc(nil, nil, append(append([]byte{0x01}, uleb(uint64(locals))...), wasmgen.I32, 0x0b))
		}
		return m.Bytes()
	}
	twoTypes := func() []byte {
		var m wasmgen.Module
		m.Func(nil, nil, nil)
		m.Func([]byte{wasmgen.I32}, nil, nil)
		return m.Bytes()
	}
	cases := []struct {
		name string
		cfg  host.Config
		wasm []byte
		want string
	}{
		{
			"locals 2^32-1",
			host.Config{},
			wasmgen.ManyLocals(math.MaxUint32, wasmgen.I64),
			"function 0 declares 4294967295 locals; the limit is 50000 (--module-max-locals)",
		},
		{
			"locals 2^28",
			host.Config{},
			wasmgen.ManyLocals(1<<28, wasmgen.I64),
			"function 0 declares 268435456 locals; the limit is 50000 (--module-max-locals)",
		},
		{
			"locals in two declarations",
			host.Config{},
			mod(
				sec(1, uleb(1), []byte{0x60, 0, 0}), sec(3, uleb(1), uleb(0)),
				sec(10, uleb(1), uleb(12), uleb(2), []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x7e}, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x7e}, []byte{0x0b})),
			"function 0 declares 4294967295 locals; the limit is 50000 (--module-max-locals)",
		},
		{
			"total locals",
			host.Config{},
			manyFuncs(41, 49_999),
			"the limit is 2000000 (--module-max-total-locals)",
		},
		{
			"nesting",
			host.Config{},
			wasmgen.NestedBlocks(1 << 20),
			"function 0 nests blocks 10001 deep; the limit is 10000 (--module-max-nesting)",
		},
		{
			"br_table",
			host.Config{},
			wasmgen.BrTable(50_001),
			"function 0 has a br_table with 50001 targets; the limit is 50000 (--module-max-br-table-targets)",
		},
		{
			"br_table of 20M",
			host.Config{},
			wasmgen.BrTable(20_000_000),
			"function 0 has a body of 20000013 bytes; the limit is 8388608 (--module-max-body-size)",
		},
		{
			"params",
			host.Config{},
			wasmgen.ManyParams(1 << 20),
			"type 0 declares 1048576 parameters; the limit is 1000 (--module-max-params)",
		},
		{
			"results",
			host.Config{},
			mod(sec(1, uleb(1), []byte{0x60, 0}, uleb(1001), repeat(1001, []byte{0x7f}))),
			"type 0 declares 1001 results; the limit is 1000 (--module-max-results)",
		},
		{
			"body size",
			host.Config{},
			wasmgen.LargeFunction(60 << 20),
			"; the limit is 8388608 (--module-max-body-size)",
		},
		{
			"initial memory",
			host.Config{},
			wasmgen.LargeMemory(2000),
			"memory 0 needs 2000 pages (131072000 bytes) at start; the memory limit is 1024 pages (67108864 bytes, --memory-limit)",
		},
		{
			"module size",
			host.Config{ModuleLimits: host.ModuleLimits{MaxModuleSize: 100}},
			MustReadWasm(t, testkitCPath),
			"; the limit is 100 (--module-max-size)",
		},
		{
			"functions",
			host.Config{ModuleLimits: host.ModuleLimits{MaxFunctions: 3}},
			manyFuncs(4, 1),
			"the function section declares 4 entries; the limit is 3 (--module-max-functions)",
		},
		{"functions with imports", host.Config{ModuleLimits: host.ModuleLimits{MaxFunctions: 3}}, func() []byte {
			var m wasmgen.Module
			m.Import("a", "b", nil, nil)
			m.Import("a", "c", nil, nil)
			m.Func(nil, nil, nil)
			m.Func(nil, nil, nil)
			return m.Bytes()
		}(), "the module has 4 functions; the limit is 3 (--module-max-functions)"},
		{
			"types",
			host.Config{ModuleLimits: host.ModuleLimits{MaxTypes: 1}},
			twoTypes(),
			"the type section declares 2 entries; the limit is 1 (--module-max-types)",
		},
		{"imports", host.Config{ModuleLimits: host.ModuleLimits{MaxImports: 1}}, func() []byte {
			var m wasmgen.Module
			m.Import("a", "b", nil, nil)
			m.Import("a", "c", nil, nil)
			return m.Bytes()
		}(), "the import section declares 2 entries; the limit is 1 (--module-max-imports)"},
		{"exports", host.Config{ModuleLimits: host.ModuleLimits{MaxExports: 1}}, func() []byte {
			var m wasmgen.Module
			f := m.Func(nil, nil, nil)
			m.Export("a", f)
			m.Export("b", f)
			return m.Bytes()
		}(), "the export section declares 2 entries; the limit is 1 (--module-max-exports)"},
		{
			"globals",
			host.Config{ModuleLimits: host.ModuleLimits{MaxGlobals: 2}},
			mod(sec(6, uleb(3), repeat(3, append([]byte{0x7f, 0x00}, i32Zero...)))),
			"the global section declares 3 entries; the limit is 2 (--module-max-globals)",
		},
		{"data segments", host.Config{ModuleLimits: host.ModuleLimits{MaxDataSegments: 1}}, func() []byte {
			var m wasmgen.Module
			m.Memory(1, 0)
			m.Data(0, []byte("a"))
			m.Data(8, []byte("b"))
			return m.Bytes()
		}(), "the data section declares 2 entries; the limit is 1 (--module-max-data-segments)"},
		{
			"data count",
			host.Config{ModuleLimits: host.ModuleLimits{MaxDataSegments: 1}},
			mod(sec(12, uleb(5))),
			"the module declares 5 data segments; the limit is 1 (--module-max-data-segments)",
		},
		{"data size", host.Config{ModuleLimits: host.ModuleLimits{MaxDataSize: 10}}, func() []byte {
			var m wasmgen.Module
			m.Memory(1, 0)
			m.Data(0, []byte("0123456"))
			m.Data(8, []byte("0123"))
			return m.Bytes()
		}(), "the data segments hold 11 bytes; the limit is 10 (--module-max-data-size)"},
		{
			"table size",
			host.Config{},
			mod(sec(4, uleb(1), []byte{0x70, 0x00}, uleb(1_000_001))),
			"table 0 has an initial size of 1000001 elements; the limit is 1000000 (--module-max-table-size)",
		},
		{
			"table max",
			host.Config{},
			mod(sec(4, uleb(1), []byte{0x70, 0x01}, uleb(1), uleb(math.MaxUint32))),
			"table 0 has a maximum size of 4294967295 elements; the limit is 1000000 (--module-max-table-size)",
		},
		{
			"imported table",
			host.Config{},
			mod(sec(2, uleb(1), uleb(1), []byte("a"), uleb(1), []byte("b"), []byte{0x01, 0x70, 0x00}, uleb(math.MaxUint32))),
			"table 0 has an initial size of 4294967295 elements; the limit is 1000000 (--module-max-table-size)",
		},
		{
			"tables",
			host.Config{ModuleLimits: host.ModuleLimits{MaxTables: 1}},
			mod(sec(4, uleb(2), repeat(2, []byte{0x70, 0x00, 0x01}))),
			"the table section declares 2 entries; the limit is 1 (--module-max-tables)",
		},
		{
			"element segments",
			host.Config{ModuleLimits: host.ModuleLimits{MaxElemSegments: 1}},
			mod(sec(9, uleb(2), repeat(2, append(append([]byte{0x00}, i32Zero...), 0x00)))),
			"the element section declares 2 entries; the limit is 1 (--module-max-elem-segments)",
		},
		{
			"element size",
			host.Config{ModuleLimits: host.ModuleLimits{MaxElemSize: 3}},
			mod(sec(9, uleb(2),
				[]byte{0x00}, i32Zero, uleb(2), []byte{0, 0}, []byte{0x01, 0x00}, uleb(2), []byte{0, 0})),
			"the element segments hold 4 elements; the limit is 3 (--module-max-elem-size)",
		},
		{
			"function names",
			host.Config{},
			mod(sec(0, uleb(4), []byte("name"), []byte{1}, uleb(5), uleb(math.MaxUint32))),
			"the function names declares 4294967295 entries; the limit is 100000 (--module-max-functions)",
		},
		{
			"local names",
			host.Config{},
			mod(sec(0, uleb(4), []byte("name"), []byte{2}, uleb(7), uleb(1), uleb(0), uleb(math.MaxUint32))),
			"the local names of a function declares 4294967295 entries; the limit is 50000 (--module-max-locals)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := host.CheckModule(c.cfg, c.wasm)
			require.Error(t, err)
			require.Equal(t, abi.CodeInvalidModule, host.ErrorCode(err), err.Error())
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// TestAdmissionBeforeDecode compiles the bombs with a Host: each fails with
// invalid_module before wazero sees it, so the Host's own heap stays small
// though the modules declare gigabytes.
func TestAdmissionBeforeDecode(t *testing.T) {
	t.Parallel()
	var called int
	h := MustNewHost(t, host.Config{CacheDir: filepath.Join(t.TempDir(), "cache"), Precompile: func(context.Context, string, []byte) error {
		called++
		return nil
	}})
	for _, wasm := range [][]byte{
		wasmgen.ManyLocals(math.MaxUint32, wasmgen.I64),
		wasmgen.ManyLocals(1<<28, wasmgen.I64),
		wasmgen.ManyParams(1 << 20),
		wasmgen.LargeMemory(1 << 16),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := h.Compile(t.Context(), wasm)
		runtime.ReadMemStats(&after)
		requireCode(t, err, abi.CodeInvalidModule)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "allocated by a rejected compile")
	}
	require.Zero(t, called, "Precompile runs only for admitted modules")
}

// TestAdmissionPrecompileHook checks the hook's contract: it gets the
// digest and the bytes of an admitted module, its *Error keeps its code and
// any other error becomes invalid_module, and a rejected module is not
// compiled.
func TestAdmissionPrecompileHook(t *testing.T) {
	t.Parallel()
	wasm := MustReadWasm(t, testkitCPath)
	var gotDigest string
	var gotLen int
	fail := error(nil)
	h := MustNewHost(t, host.Config{Precompile: func(_ context.Context, digest string, b []byte) error {
		gotDigest, gotLen = digest, len(b)
		return fail
	}})

	fail = errors.New("the compiler ran out of time")
	_, err := h.Compile(t.Context(), wasm)
	requireCode(t, err, abi.CodeInvalidModule)
	require.ErrorContains(t, err, "the compiler ran out of time")
	require.Equal(t, host.Digest(wasm), gotDigest)
	require.Equal(t, len(wasm), gotLen)

	fail = &host.Error{Code: abi.CodeCancelled, Message: "the client went away"}
	_, err = h.Compile(t.Context(), wasm)
	requireCode(t, err, abi.CodeCancelled)
	_, ok := h.Module(host.Digest(wasm))
	require.False(t, ok, "a module the hook rejects is not compiled")

	fail = nil
	info, err := h.Compile(t.Context(), wasm)
	require.NoError(t, err)
	require.NotEmpty(t, info.Functions)
}

// TestAdmissionPrecompileFillsCache compiles a guest with
// PrecompileModule into an empty cache, then with a Host of the same
// configuration: the Host finds the compiled form (the cache holds one
// file, not two), so both use one cache key.
func TestAdmissionPrecompileFillsCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	cfg := host.Config{CacheDir: dir}
	wasm := MustReadWasm(t, testkitCPath)
	require.NoError(t, host.PrecompileModule(t.Context(), cfg, wasm))
	files := func() []string {
		f, err := filepath.Glob(filepath.Join(dir, "*", "*"))
		require.NoError(t, err)
		return f
	}
	after := files()
	require.Len(t, after, 1, "PrecompileModule writes the compiled module")

	h := MustNewHost(t, cfg)
	_, err := h.Compile(t.Context(), wasm)
	require.NoError(t, err)
	require.Equal(t, after, files(), "the Host hits the cache entry PrecompileModule wrote")

	err = host.PrecompileModule(t.Context(), cfg, wasmgen.NestedBlocks(1<<20))
	requireCode(t, err, abi.CodeInvalidModule)
	require.ErrorContains(t, err, "--module-max-nesting")
	err = host.PrecompileModule(t.Context(), cfg, []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x05"))
	requireCode(t, err, abi.CodeInvalidModule)
}

// TestAdmissionMalformed feeds truncated, corrupted and hand-broken
// binaries to the pass: each is rejected with a message, none panics.
func TestAdmissionMalformed(t *testing.T) {
	t.Parallel()
	cfg := host.Config{}
	good := MustReadWasm(t, testkitCPath)
	require.NoError(t, host.CheckModule(cfg, good))
	boundaries := map[int]bool{8: true}
	for at := 8; at < len(good); {
		size, n := binary.Uvarint(good[at+1:])
		at += 1 + n + int(size)
		boundaries[at] = true
	}
	for n := 0; n < len(good); n += 1 + n/64 {
		if boundaries[n] {
			continue // a shorter module, well-formed
		}
		err := host.CheckModule(cfg, good[:n])
		require.Error(t, err, "truncated to %d bytes", n)
		require.Equal(t, abi.CodeInvalidModule, host.ErrorCode(err))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	bad := make([]byte, len(good))
	for range 2000 {
		copy(bad, good)
		for range 1 + rng.IntN(8) {
			bad[8+rng.IntN(len(bad)-8)] = byte(rng.Uint32())
		}
		_ = host.CheckModule(cfg, bad) // must not panic
	}
	for name, c := range map[string]struct {
		wasm []byte
		want string
	}{
		"empty":              {nil, "not a valid WebAssembly module"},
		"not wasm":           {[]byte("#!/bin/sh\necho hi\n"), "not a valid WebAssembly module"},
		"version 2":          {[]byte("\x00asm\x02\x00\x00\x00"), "binary format version 2"},
		"section past end":   {mod([]byte{1}, uleb(100), []byte{0}), "declares 100 bytes; only 1 remain"},
		"leb too long":       {mod([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), "overflows 32 bits"},
		"leb overflow":       {mod([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x1f}), "overflows 32 bits"},
		"leb cut off":        {mod([]byte{1, 0x80}), "unexpected end"},
		"count over bytes":   {mod(sec(3, uleb(1000))), "declares 1000 entries in 0 bytes"},
		"unknown section":    {mod(sec(99)), "unknown section id 99"},
		"section tail":       {mod(sec(8, uleb(0), []byte{0})), "section 8 ends 1 bytes before"},
		"unknown opcode":     {mod(sec(1, uleb(1), []byte{0x60, 0, 0}), sec(3, uleb(1), uleb(0)), sec(10, uleb(1), uleb(3), []byte{0, 0x06, 0x0b})), "opcode 0x6"},
		"body without end":   {mod(sec(1, uleb(1), []byte{0x60, 0, 0}), sec(3, uleb(1), uleb(0)), sec(10, uleb(1), uleb(3), []byte{0, 0x02, 0x40})), "function 0 does not end"},
		"bytes after end":    {mod(sec(1, uleb(1), []byte{0x60, 0, 0}), sec(3, uleb(1), uleb(0)), sec(10, uleb(1), uleb(3), []byte{0, 0x0b, 0x01})), "1 bytes follow the end"},
		"br_table over body": {mod(sec(1, uleb(1), []byte{0x60, 0, 0}), sec(3, uleb(1), uleb(0)), sec(10, uleb(1), uleb(5), []byte{0, 0x0e, 0x80, 0x08, 0x0b})), "declares 1024 targets in 1 bytes"},
		"bad utf-8 name":     {mod(sec(7, uleb(1), uleb(1), []byte{0xff, 0x00}, uleb(0))), "not UTF-8"},
		"table64":            {mod(sec(4, uleb(1), []byte{0x70, 0x04}, uleb(1))), "only 32-bit limits"},
	} {
		err := host.CheckModule(cfg, c.wasm)
		require.Error(t, err, name)
		require.Equal(t, abi.CodeInvalidModule, host.ErrorCode(err), name)
		require.Contains(t, err.Error(), c.want, name)
	}
}

// TestAdmissionAllocations bounds what the pass allocates: nothing that
// grows with the module or with what it declares.
func TestAdmissionAllocations(t *testing.T) {
	lim := limitsOf(host.Config{})
	for _, wasm := range [][]byte{MustReadWasm(t, testkitPath), MustReadWasm(t, testkitCPath)} {
		require.LessOrEqual(t, testing.AllocsPerRun(5, func() { _ = wasmcheck.Check(wasm, lim) }), float64(2))
	}
	for _, wasm := range [][]byte{wasmgen.ManyLocals(math.MaxUint32, wasmgen.I64), wasmgen.BrTable(20_000_000)} {
		require.LessOrEqual(t, testing.AllocsPerRun(5, func() { _ = wasmcheck.Check(wasm, lim) }), float64(16), "allocations of a rejection")
	}
}

// FuzzAdmission runs the pass over arbitrary bytes: it must never panic,
// must accept or reject with a message, and must not allocate more than a
// small constant whatever the input declares.
func FuzzAdmission(f *testing.F) {
	for _, p := range []string{testkitCPath, "../examples/hello-c/hello.wasm"} {
		f.Add(MustReadWasm(f, p))
	}
	f.Add(wasmgen.ManyLocals(math.MaxUint32, wasmgen.I64))
	f.Add(wasmgen.NestedBlocks(100))
	f.Add(wasmgen.BrTable(100))
	f.Add(wasmgen.ManyParams(100))
	f.Add(wasmgen.LargeMemory(1 << 16))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	lim := limitsOf(host.Config{})
	f.Fuzz(func(t *testing.T, wasm []byte) {
		var err error
		if allocs := testing.AllocsPerRun(1, func() { err = wasmcheck.Check(wasm, lim) }); allocs > 16 {
			t.Fatalf("the pass allocated %v times for a %d-byte input", allocs, len(wasm))
		}
		if err != nil && err.Error() == "" {
			t.Fatal("a rejection without a message")
		}
	})
}

// BenchmarkAdmissionPass measures the structural pass over the committed
// Go testkit (3.4 MB) and C testkit.
func BenchmarkAdmissionPass(b *testing.B) {
	lim := limitsOf(host.Config{})
	for _, p := range []string{testkitPath, testkitCPath} {
		wasm := MustReadWasm(b, p)
		b.Run(filepath.Base(p), func(b *testing.B) {
			b.SetBytes(int64(len(wasm)))
			for b.Loop() {
				if err := wasmcheck.Check(wasm, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdmissionAdmitted checks that a digest the embedder reports as
// admitted skips Precompile, and any other goes through it.
func TestAdmissionAdmitted(t *testing.T) {
	t.Parallel()
	wasm := MustReadWasm(t, testkitCPath)
	admitted := map[string]bool{}
	var precompiled []string
	h := MustNewHost(t, host.Config{
		Admitted: func(digest string) bool { return admitted[digest] },
		Precompile: func(_ context.Context, digest string, _ []byte) error {
			precompiled = append(precompiled, digest)
			admitted[digest] = true
			return nil
		},
	})
	_, err := h.Compile(t.Context(), wasm)
	require.NoError(t, err)
	require.NoError(t, h.Unload(t.Context(), host.Digest(wasm)))
	_, err = h.Compile(t.Context(), wasm)
	require.NoError(t, err)
	require.Equal(t, []string{host.Digest(wasm)}, precompiled, "the second compile of an admitted digest skips Precompile")
}
