package host_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/host/internal/wasmgen"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// progressGuest returns a module whose function "run" (of kind) calls
// progress(done, total, msg) once, with msg at a fixed place or, with
// packed set, the packed pointer itself, and returns the import's result as
// its output: the long 0 (taken) or 1 (refused).
func progressGuest(tb testing.TB, kind string, done, total int64, msg []byte, packed *uint64) []byte {
	tb.Helper()
	const (
		manifestAt = 1024
		okAt       = 2048
		refusedAt  = 2304
		msgAt      = 4096
	)
	var m wasmgen.Module
	i64, i32 := wasmgen.I64, wasmgen.I32
	setOutput := m.Import(abi.ModuleEnv, abi.ImportSetOutput, []byte{i64}, nil)
	progress := m.Import(abi.ModuleActivity, abi.ImportProgress, []byte{i64, i64, i64}, []byte{i32})
	m.Memory(1, 0)
	m.ExportMemory(abi.ExportMemory)
	manifest := tinyManifest(tb, "run", kind)
	okFrame, refusedFrame := MustFrame(tb, codec.Long(0)), MustFrame(tb, codec.Long(1))
	m.Data(manifestAt, manifest)
	m.Data(okAt, okFrame)
	m.Data(refusedAt, refusedFrame)
	if len(msg) > 0 {
		m.Data(msgAt, msg)
	}
	p := abi.Pack(msgAt, uint32(len(msg)))
	if packed != nil {
		p = *packed
	}
	body := cat(
		wasmgen.I64Const(done), wasmgen.I64Const(total), wasmgen.I64Const(int64(p)), wasmgen.Call(progress),
		wasmgen.If,
		wasmgen.I64Const(int64(abi.Pack(refusedAt, uint32(len(refusedFrame))))), wasmgen.Call(setOutput),
		wasmgen.Else,
		wasmgen.I64Const(int64(abi.Pack(okAt, uint32(len(okFrame))))), wasmgen.Call(setOutput),
		wasmgen.End,
		wasmgen.I32Const(0),
	)
	exports := []struct {
		name string
		idx  uint32
	}{
		{abi.ExportABIVersion, m.Func(nil, []byte{i32}, nil, wasmgen.I32Const(abi.Version))},
		{abi.ExportAlloc, m.Func([]byte{i32}, []byte{i32}, nil, wasmgen.I32Const(8192))},
		{abi.ExportFree, m.Func([]byte{i32, i32}, nil, nil)},
		{abi.ExportManifest, m.Func(nil, []byte{i64}, nil, wasmgen.I64Const(int64(abi.Pack(manifestAt, uint32(len(manifest))))))},
		{abi.ExportCall, m.Func([]byte{i64, i64}, []byte{i32}, nil, body)},
	}
	for _, e := range exports {
		m.Export(e.name, e.idx)
	}
	return m.Bytes()
}

// TestProgressImport calls the progress import with good and hostile
// reports: the hook sees exactly the reports the host took, a refused
// report leaves the call running, and a bad pointer or a workflow caller
// fails the call.
func TestProgressImport(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	oob := abi.Pack(0xfff00000, 16)
	overflow := abi.Pack(0xffffff00, 0x200)
	long := strings.Repeat("a", 300)
	straddling := strings.Repeat("a", abi.MaxProgressMessageLen-1) + "é" // é takes bytes 256 and 257
	type report struct {
		done, total int64
		msg         string
	}
	tests := []struct {
		name        string
		kind        string
		done, total int64
		msg         string
		packed      *uint64
		noHook      bool
		refused     bool
		want        *report // the report the hook gets
		code        abi.Code
		contains    string
	}{
		{name: "Taken", done: 3, total: 10, msg: "copying", want: &report{3, 10, "copying"}},
		{name: "EmptyMessage", done: 0, total: 10, want: &report{0, 10, ""}},
		{name: "UnknownTotal", done: 1 << 40, total: 0, msg: "files", want: &report{1 << 40, 0, "files"}},
		{name: "DoneIsTotal", done: 10, total: 10, want: &report{10, 10, ""}},
		{name: "Unicode", done: 1, total: 2, msg: "größer ✓", want: &report{1, 2, "größer ✓"}},
		{name: "LongMessageCut", done: 1, total: 2, msg: long, want: &report{1, 2, long[:abi.MaxProgressMessageLen]}},
		{name: "CutAtARuneBoundary", done: 1, total: 2, msg: straddling, want: &report{1, 2, straddling[:abi.MaxProgressMessageLen-1]}},
		{name: "WithoutHook", done: 1, total: 2, noHook: true},
		{name: "NegativeDone", done: -1, total: 10, refused: true},
		{name: "NegativeTotal", done: 1, total: -10, refused: true},
		{name: "DoneAboveTotal", done: 11, total: 10, refused: true},
		{name: "InvalidUTF8", done: 1, total: 2, msg: "ok\xff", refused: true},
		{name: "MessageOutOfBounds", done: 1, total: 2, packed: &oob, code: abi.CodeBadPointer, contains: "progress message"},
		{name: "MessageOverflows", done: 1, total: 2, packed: &overflow, code: abi.CodeBadPointer, contains: "outside"},
		{name: "WorkflowRefused", kind: "workflow", done: 1, total: 2, code: abi.CodeImportNotAllowed, contains: "weft:activity/v1.progress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kind := tc.kind
			if kind == "" {
				kind = "activity"
			}
			info, err := h.Compile(t.Context(), progressGuest(t, kind, tc.done, tc.total, []byte(tc.msg), tc.packed))
			require.NoError(t, err)
			digest := info.Digest
			var got []report
			req := &host.CallRequest{Digest: digest, Function: "run"}
			if !tc.noHook {
				req.Progress = func(done, total int64, msg string) { got = append(got, report{done, total, msg}) }
			}
			if kind == "workflow" {
				req.Workflow = newJournal().replay()
			}
			res, err := h.Call(t.Context(), req)
			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.ErrorContains(t, err, tc.contains)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			n, ok := MustDecode(t, res.Output).AsLong()
			require.True(t, ok)
			if tc.refused {
				require.Equal(t, int64(abi.ProgressRefused), n, "the host refuses the report")
				require.Empty(t, got, "a refused report never reaches the hook")
				return
			}
			require.Equal(t, int64(abi.ProgressOK), n)
			if tc.want != nil {
				require.Equal(t, []report{*tc.want}, got)
			}
		})
	}
}
