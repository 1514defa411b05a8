package host_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/host/internal/wasmgen"
)

// The Extism side of the echo comparison (cmd/compare, BenchmarkEcho)
// runs this plugin; it is assembled here, where the wasm assembler lives,
// and committed beside the comparison, which is a module of its own and
// cannot import host/internal.
const extismEchoPath = "../cmd/compare/testdata/extism-echo.wasm"

// TestExtismEchoPlugin checks that the committed plugin is the one
// extismEchoPlugin assembles; -update rewrites it (with the other
// hand-assembled guests).
func TestExtismEchoPlugin(t *testing.T) {
	want := extismEchoPlugin()
	if *updateTestdata {
		require.NoError(t, os.WriteFile(extismEchoPath, want, 0o644))
	}
	got, err := os.ReadFile(extismEchoPath)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "%s is stale: go test ./host -run TestExtismEchoPlugin -update", extismEchoPath)
}

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
