package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// echoValue returns a map Value whose frame is exactly 100 bytes.
func echoValue(tb testing.TB) []byte {
	tb.Helper()
	for pad := 0; pad < 100; pad++ {
		f := MustFrame(tb, obj("id", "task-0001", "name", "hello world", "count", 42,
			"tags", codec.List(codec.String("a"), codec.String("b")), "note", strings.Repeat("x", pad)))
		if len(f) == 100 {
			return f
		}
	}
	tb.Fatal("no 100-byte echo value")
	return nil
}

// BenchmarkEcho measures the per-call overhead of echo on a 100-byte Value
// with a warm instance: through Host.Call, and as a raw wazero call of the
// same guest function in a runtime of the same configuration. The
// comparison with Extism runs in its own module: make bench-compare
// (cmd/compare, BenchmarkEcho).
// Run them together: go test -run='^$' -bench=Echo ./host/
func BenchmarkEcho(b *testing.B) {
	in := echoValue(b)
	b.Run("Host", func(b *testing.B) {
		h := MustNewHost(b, host.Config{})
		digest := MustCompile(b, h, testkitPath)
		ctx := context.Background()
		req := &host.CallRequest{Digest: digest, Function: "echo", Input: in}
		res, err := h.Call(ctx, req)
		require.NoError(b, err)
		require.Equal(b, in, res.Output)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := h.Call(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawWazero", func(b *testing.B) {
		raw := newRawEcho(b, MustReadWasm(b, testkitPath))
		require.Equal(b, in, raw.call(b, "echo", in))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			raw.call(b, "echo", in)
		}
	})
	b.Run("HostVsRaw", func(b *testing.B) {
		// Host and raw calls alternate in blocks, so both see the same load
		// on a shared machine; the ratio is the one to read.
		h := MustNewHost(b, host.Config{})
		digest := MustCompile(b, h, testkitPath)
		raw := newRawEcho(b, MustReadWasm(b, testkitPath))
		ctx := context.Background()
		req := &host.CallRequest{Digest: digest, Function: "echo", Input: in}
		const block = 64
		var hostTime, rawTime time.Duration
		calls := 0
		for b.Loop() {
			start := time.Now()
			for range block {
				if _, err := h.Call(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			mid := time.Now()
			for range block {
				raw.call(b, "echo", in)
			}
			hostTime += mid.Sub(start)
			rawTime += time.Since(mid)
			calls += block
		}
		b.ReportMetric(float64(hostTime.Nanoseconds())/float64(calls), "host-ns/call")
		b.ReportMetric(float64(rawTime.Nanoseconds())/float64(calls), "raw-ns/call")
		b.ReportMetric(float64(hostTime)/float64(rawTime), "host/raw")
	})
}

// rawEcho calls weft_call of a module straight through wazero: the same
// runtime configuration as the host (compiler, close-on-context-done, WASI),
// a scratch buffer allocated once, and a set_output that copies into a
// reused buffer. It is the floor the host's overhead is measured against.
type rawEcho struct {
	mod     api.Module
	fn      api.Function
	scratch uint32
	stack   []uint64
	out     []byte
}

func newRawEcho(tb testing.TB, wasm []byte) *rawEcho { return newRaw(tb, wasm, true) }

// newRaw is newRawEcho with close-on-context-done on or off.
func newRaw(tb testing.TB, wasm []byte, closeOnDone bool) *rawEcho {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone).WithMemoryLimitPages(1<<16))
	tb.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	r := &rawEcho{stack: make([]uint64, 2)}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	noop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	env := rt.NewHostModuleBuilder(abi.ModuleEnv)
	env.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		ptr, n := abi.Unpack(s[0])
		b, _ := m.Memory().Read(ptr, n)
		r.out = append(r.out[:0], b...)
	}), []api.ValueType{i64}, nil).Export(abi.ImportSetOutput)
	env.NewFunctionBuilder().WithGoModuleFunction(noop, []api.ValueType{i32, i64}, nil).Export(abi.ImportLog)
	env.NewFunctionBuilder().WithGoModuleFunction(noop, []api.ValueType{i64}, nil).Export(abi.ImportSetError)
	env.NewFunctionBuilder().WithGoModuleFunction(noop, []api.ValueType{i64}, nil).Export(abi.ImportBlobRead)
	_, err := env.Instantiate(ctx)
	require.NoError(tb, err)
	act := rt.NewHostModuleBuilder(abi.ModuleActivity)
	act.NewFunctionBuilder().WithGoModuleFunction(noop, []api.ValueType{i64}, nil).Export(abi.ImportCheckpoint)
	act.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = api.EncodeI64(abi.NoBlob)
	}), nil, []api.ValueType{i64}).Export(abi.ImportLastCheckpoint)
	act.NewFunctionBuilder().WithGoModuleFunction(noop, nil, []api.ValueType{i32}).Export(abi.ImportCancelled)
	_, err = act.Instantiate(ctx)
	require.NoError(tb, err)
	cm, err := rt.CompileModule(ctx, wasm)
	require.NoError(tb, err)
	r.mod, err = rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize))
	require.NoError(tb, err)
	r.fn = r.mod.ExportedFunction(abi.ExportCall)
	res, err := r.mod.ExportedFunction(abi.ExportAlloc).Call(ctx, 1024)
	require.NoError(tb, err)
	r.scratch = uint32(res[0])
	return r
}

func (r *rawEcho) call(tb testing.TB, name string, in []byte) []byte {
	view, _ := r.mod.Memory().Read(r.scratch, uint32(len(name)+len(in)))
	copy(view, name)
	copy(view[len(name):], in)
	r.stack[0] = abi.Pack(r.scratch, uint32(len(name)))
	r.stack[1] = abi.Pack(r.scratch+uint32(len(name)), uint32(len(in)))
	if err := r.fn.CallWithStack(context.Background(), r.stack); err != nil || uint32(r.stack[0]) != 0 {
		tb.Fatalf("raw call: %v, status %d", err, r.stack[0])
	}
	return r.out
}

// BenchmarkColdStart measures deploy to first call: a new Host compiles the
// testkit, creates its first instance, reads the manifest and runs echo;
// without a compilation cache, and with a cache a previous Host filled.
func BenchmarkColdStart(b *testing.B) {
	wasm := MustReadWasm(b, testkitPath)
	in := echoValue(b)
	run := func(b *testing.B, cacheDir string) {
		ctx := context.Background()
		h, err := host.New(host.Config{CacheDir: cacheDir})
		require.NoError(b, err)
		defer func() { _ = h.Close(ctx) }()
		info, err := h.Compile(ctx, wasm)
		require.NoError(b, err)
		_, err = h.Call(ctx, &host.CallRequest{Digest: info.Digest, Function: "echo", Input: in})
		require.NoError(b, err)
	}
	b.Run("NoCache", func(b *testing.B) {
		for b.Loop() {
			run(b, "")
		}
	})
	b.Run("Cache", func(b *testing.B) {
		dir := b.TempDir()
		run(b, dir) // fill the cache
		b.ResetTimer()
		for b.Loop() {
			run(b, dir)
		}
	})
}

// BenchmarkCancel measures how long a guest in a busy loop keeps running
// after its context is cancelled (reported as ns-to-stop), including the
// instance the next call has to create.
func BenchmarkCancel(b *testing.B) {
	h := MustNewHost(b, host.Config{})
	digest := MustCompile(b, h, testkitPath)
	var total time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var at time.Time
		time.AfterFunc(5*time.Millisecond, func() { at = time.Now(); cancel() })
		_, err := h.Call(ctx, &host.CallRequest{Digest: digest, Function: "spin"})
		total += time.Since(at)
		if host.ErrorCode(err) != abi.CodeCancelled {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns-to-stop")
}

// BenchmarkCloseOnContextDone shows what wazero's close-on-context-done
// costs a guest: a raw call of testkit's echo (no loop in the guest) and of
// its count to 1,000 (a loop), with the option off and on. With the option
// on, wazero leaves the guest's code for Go at every loop iteration to see
// whether the module was closed.
func BenchmarkCloseOnContextDone(b *testing.B) {
	echo := echoValue(b)
	count := MustFrame(b, obj("to", 1000, "checkpoint_every", 0))
	for _, on := range []bool{false, true} {
		raw := newRaw(b, MustReadWasm(b, testkitPath), on)
		name := map[bool]string{false: "Off", true: "On"}[on]
		b.Run("Echo/"+name, func(b *testing.B) {
			for b.Loop() {
				raw.call(b, "echo", echo)
			}
		})
		b.Run("Count1000/"+name, func(b *testing.B) {
			for b.Loop() {
				raw.call(b, "count", count)
			}
		})
	}
}
