package host_test

import (
	"testing"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host/internal/wasmgen"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// tiny describes a small hand-assembled module that speaks ABI v1 by
// default; each field bends one rule.
type tiny struct {
	abiVersion int32             // default abi.Version
	manifest   []byte            // default: one activity "run"
	packed     *uint64           // what weft_manifest returns; default the manifest's place
	omit       string            // an export to leave out
	callSig    bool              // export weft_call as func(i32, i32) -> i32
	imports    [][3]string       // extra imports: module, name, "sig" ("i32>" or "i64>")
	start      bool              // export _start and no _initialize
	initialize []byte            // body of an exported _initialize
	call       func(*gen) []byte // body of weft_call; default: status 0 without output
	minPages   uint32            // memory minimum; default 1
}

// gen gives a weft_call body access to the imported functions.
type gen struct {
	setOutput, now uint32
}

const (
	manifestAt = 1024
	scratchAt  = 8192
)

func tinyManifest(tb testing.TB, fns ...string) []byte {
	list := make([]codec.Value, 0, len(fns)/2)
	for i := 0; i < len(fns); i += 2 {
		list = append(list, obj("name", fns[i], "kind", fns[i+1]))
	}
	return MustFrame(tb, obj("abi_version", abi.Version, "functions", codec.List(list...)))
}

func (c tiny) bytes(tb testing.TB) []byte {
	tb.Helper()
	var m wasmgen.Module
	var g gen
	g.setOutput = m.Import(abi.ModuleEnv, abi.ImportSetOutput, []byte{wasmgen.I64}, nil)
	g.now = m.Import(abi.ModuleWorkflow, abi.ImportNow, nil, []byte{wasmgen.I64})
	for _, imp := range c.imports {
		switch imp[2] {
		case "i32>":
			m.Import(imp[0], imp[1], []byte{wasmgen.I32}, nil)
		default:
			m.Import(imp[0], imp[1], []byte{wasmgen.I64}, nil)
		}
	}
	pages := max(c.minPages, 1)
	m.Memory(pages, 0)
	if c.omit != abi.ExportMemory {
		m.ExportMemory(abi.ExportMemory)
	}
	if c.manifest == nil {
		c.manifest = tinyManifest(tb, "run", "activity")
	}
	m.Data(manifestAt, c.manifest)
	if c.abiVersion == 0 {
		c.abiVersion = abi.Version
	}
	packed := abi.Pack(manifestAt, uint32(len(c.manifest)))
	if c.packed != nil {
		packed = *c.packed
	}
	i32, i64 := wasmgen.I32, wasmgen.I64
	exports := map[string]uint32{
		abi.ExportABIVersion: m.Func(nil, []byte{i32}, nil, wasmgen.I32Const(c.abiVersion)),
		abi.ExportAlloc:      m.Func([]byte{i32}, []byte{i32}, nil, wasmgen.I32Const(scratchAt)),
		abi.ExportFree:       m.Func([]byte{i32, i32}, nil, nil),
		abi.ExportManifest:   m.Func(nil, []byte{i64}, nil, wasmgen.I64Const(int64(packed))),
	}
	body := wasmgen.I32Const(0)
	if c.call != nil {
		body = c.call(&g)
	}
	if c.callSig {
		exports[abi.ExportCall] = m.Func([]byte{i32, i32}, []byte{i32}, nil, body)
	} else {
		exports[abi.ExportCall] = m.Func([]byte{i64, i64}, []byte{i32}, nil, body)
	}
	if c.start {
		exports[abi.ExportStart] = m.Func(nil, nil, nil)
	}
	if c.initialize != nil {
		exports[abi.ExportInitialize] = m.Func(nil, nil, nil, c.initialize)
	}
	for _, name := range []string{abi.ExportABIVersion, abi.ExportAlloc, abi.ExportFree, abi.ExportManifest, abi.ExportCall, abi.ExportStart, abi.ExportInitialize} {
		if idx, ok := exports[name]; ok && name != c.omit {
			m.Export(name, idx)
		}
	}
	return m.Bytes()
}

// Bodies of weft_call for tiny modules.
var (
	callTrap   = func(*gen) []byte { return wasmgen.Unreachable }
	callStatus = func(s int32) func(*gen) []byte {
		return func(*gen) []byte { return wasmgen.I32Const(s) }
	}
	callBadOutput = func(g *gen) []byte {
		return cat(wasmgen.I64Const(int64(abi.Pack(0xffffff00, 0x200))), wasmgen.Call(g.setOutput), wasmgen.I32Const(0))
	}
	callNow = func(g *gen) []byte {
		return cat(wasmgen.Call(g.now), wasmgen.Drop, wasmgen.I32Const(0))
	}
	callSpin = func(*gen) []byte {
		return cat(wasmgen.Loop, wasmgen.Br(0), wasmgen.End, wasmgen.I32Const(0))
	}
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
