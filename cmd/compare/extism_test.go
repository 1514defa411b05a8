package compare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
)

// extismEchoWasm is an Extism plugin with one export, echo, that copies
// its input to its output the way Extism's PDKs do (input_length, alloc,
// input_load_u64 into store_u64, output_set). It is assembled by
// host/extism_plugin_test.go against Extism's kernel imports
// (extism:host/env), which checks that this file is what it assembles.
var extismEchoWasm = filepath.Join("testdata", "extism-echo.wasm")

// echoValue returns the frame of a map Value of exactly 100 bytes, the
// input of every echo.
func echoValue(tb testing.TB) []byte {
	tb.Helper()
	for pad := range 100 {
		f, err := codec.EncodeFrame(codec.Map(
			codec.Entry{Key: "id", Value: codec.String("task-0001")},
			codec.Entry{Key: "name", Value: codec.String("hello world")},
			codec.Entry{Key: "count", Value: codec.Long(42)},
			codec.Entry{Key: "tags", Value: codec.List(codec.String("a"), codec.String("b"))},
			codec.Entry{Key: "note", Value: codec.String(strings.Repeat("x", pad))},
		))
		require.NoError(tb, err)
		if len(f) == 100 {
			return f
		}
	}
	tb.Fatal("no 100-byte echo value")
	return nil
}

// newHostEcho returns a function that calls testkit's echo through a warm
// weft host, as the daemon calls an activity.
func newHostEcho(tb testing.TB) func([]byte) ([]byte, error) {
	tb.Helper()
	ctx := context.Background()
	h, err := host.New(host.Config{CacheDir: tb.TempDir()})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = h.Close(ctx) })
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(tb, err)
	info, err := h.Compile(ctx, wasm)
	require.NoError(tb, err)
	req := &host.CallRequest{Digest: info.Digest, Function: "echo"}
	return func(in []byte) ([]byte, error) {
		req.Input = in
		res, err := h.Call(ctx, req)
		if err != nil {
			return nil, err
		}
		return res.Output, nil
	}
}

// newExtismEcho returns a function that calls the echo plugin through a
// warm Extism plugin, with wazero's close-on-context-done on (as in weft's
// host) or with Extism's default runtime configuration.
func newExtismEcho(tb testing.TB, closeOnDone bool) func([]byte) ([]byte, error) {
	tb.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(extismEchoWasm)
	require.NoError(tb, err)
	cfg := extism.PluginConfig{EnableWasi: true}
	if closeOnDone {
		cfg.RuntimeConfig = wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	}
	p, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, cfg, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = p.Close(ctx) })
	return func(in []byte) ([]byte, error) {
		_, out, err := p.Call("echo", in)
		return out, err
	}
}

// TestEcho checks that both sides of BenchmarkEcho echo the input.
func TestEcho(t *testing.T) {
	in := echoValue(t)
	for name, call := range map[string]func([]byte) ([]byte, error){
		"weft": newHostEcho(t), "extism": newExtismEcho(t, true), "extism_default": newExtismEcho(t, false),
	} {
		out, err := call(in)
		require.NoError(t, err, name)
		require.Equal(t, in, out, name)
	}
}

// BenchmarkEcho measures the per-call cost of an echo of a 100-byte Value
// with a warm instance through weft's host (Host) and through Extism with
// close-on-context-done on as in the host (Extism) or Extism's default
// runtime configuration, which leaves it off and so cannot stop a busy
// loop (ExtismDefault). HostVsExtism alternates weft and Extism calls in
// blocks, so that both see the same load on a shared machine; its ratio is
// the one to read.
func BenchmarkEcho(b *testing.B) {
	in := echoValue(b)
	loop := func(b *testing.B, call func([]byte) ([]byte, error)) {
		out, err := call(in)
		require.NoError(b, err)
		require.Equal(b, in, out)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := call(in); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Host", func(b *testing.B) { loop(b, newHostEcho(b)) })
	b.Run("Extism", func(b *testing.B) { loop(b, newExtismEcho(b, true)) })
	b.Run("ExtismDefault", func(b *testing.B) { loop(b, newExtismEcho(b, false)) })
	b.Run("HostVsExtism", func(b *testing.B) {
		weft, ext := newHostEcho(b), newExtismEcho(b, true)
		const block = 64
		var weftTime, extTime time.Duration
		calls := 0
		for b.Loop() {
			start := time.Now()
			for range block {
				if _, err := weft(in); err != nil {
					b.Fatal(err)
				}
			}
			mid := time.Now()
			for range block {
				if _, err := ext(in); err != nil {
					b.Fatal(err)
				}
			}
			weftTime += mid.Sub(start)
			extTime += time.Since(mid)
			calls += block
		}
		b.ReportMetric(float64(weftTime.Nanoseconds())/float64(calls), "weft-ns/call")
		b.ReportMetric(float64(extTime.Nanoseconds())/float64(calls), "extism-ns/call")
		b.ReportMetric(float64(weftTime)/float64(extTime), "weft/extism")
	})
}
