package host_test

import (
	"context"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/weft-run/weft/host/internal/wasmgen"
)

// This file is the only user of github.com/extism/go-sdk: a test-only
// dependency for the comparison in BenchmarkEcho.

// extismEchoPlugin returns an Extism plugin with one export, echo, that
// copies its input to its output the way Extism's PDKs do: input_length,
// alloc, input_load_u64 (input_load_u8 for the tail) into store_u64
// (store_u8), then output_set. The Go PDK is not on the module proxy and
// the go-sdk module ships no echo plugin, so it is assembled here against
// Extism's kernel imports (extism:host/env).
func extismEchoPlugin() []byte {
	const env = "extism:host/env"
	i32, i64 := wasmgen.I32, wasmgen.I64
	var m wasmgen.Module
	inputLength := m.Import(env, "input_length", nil, []byte{i64})
	alloc := m.Import(env, "alloc", []byte{i64}, []byte{i64})
	loadU64 := m.Import(env, "input_load_u64", []byte{i64}, []byte{i64})
	loadU8 := m.Import(env, "input_load_u8", []byte{i64}, []byte{i32})
	storeU64 := m.Import(env, "store_u64", []byte{i64, i64}, nil)
	storeU8 := m.Import(env, "store_u8", []byte{i64, i32}, nil)
	outputSet := m.Import(env, "output_set", []byte{i64, i64}, nil)
	const n, off, i = 0, 1, 2 // locals
	echo := m.Func(nil, []byte{i32}, []byte{i64, i64, i64},
		wasmgen.Call(inputLength), wasmgen.LocalSet(n),
		wasmgen.LocalGet(n), wasmgen.Call(alloc), wasmgen.LocalSet(off),
		wasmgen.I64Const(0), wasmgen.LocalSet(i),
		wasmgen.Block, wasmgen.Loop,
		wasmgen.LocalGet(i), wasmgen.LocalGet(n), wasmgen.I64GeU, wasmgen.BrIf(1),
		wasmgen.LocalGet(n), wasmgen.LocalGet(i), wasmgen.I64Sub, wasmgen.I64Const(8), wasmgen.I64GeU,
		wasmgen.If,
		wasmgen.LocalGet(off), wasmgen.LocalGet(i), wasmgen.I64Add,
		wasmgen.LocalGet(i), wasmgen.Call(loadU64), wasmgen.Call(storeU64),
		wasmgen.LocalGet(i), wasmgen.I64Const(8), wasmgen.I64Add, wasmgen.LocalSet(i),
		wasmgen.Else,
		wasmgen.LocalGet(off), wasmgen.LocalGet(i), wasmgen.I64Add,
		wasmgen.LocalGet(i), wasmgen.Call(loadU8), wasmgen.Call(storeU8),
		wasmgen.LocalGet(i), wasmgen.I64Const(1), wasmgen.I64Add, wasmgen.LocalSet(i),
		wasmgen.End,
		wasmgen.Br(0),
		wasmgen.End, wasmgen.End,
		wasmgen.LocalGet(off), wasmgen.LocalGet(n), wasmgen.Call(outputSet),
		wasmgen.I32Const(0),
	)
	m.Memory(1, 0)
	m.ExportMemory("memory")
	m.Export("echo", echo)
	return m.Bytes()
}

// newExtismEcho returns a function that calls the echo plugin through a
// warm Extism plugin, with wazero's close-on-context-done on (as in the
// host) or with Extism's default runtime configuration.
func newExtismEcho(tb testing.TB, closeOnDone bool) func([]byte) ([]byte, error) {
	ctx := context.Background()
	cfg := extism.PluginConfig{EnableWasi: true}
	if closeOnDone {
		cfg.RuntimeConfig = wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	}
	p, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: extismEchoPlugin()}}}, cfg, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = p.Close(ctx) })
	return func(in []byte) ([]byte, error) {
		_, out, err := p.Call("echo", in)
		return out, err
	}
}
