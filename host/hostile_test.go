package host_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/host/internal/wasmgen"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestHostile calls each misbehaving function of the hostile guest: each
// fails its own call with a clear code, and the host keeps serving.
func TestHostile(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	digest := MustCompile(t, h, hostilePath)
	echo := MustFrame(t, codec.String("still here"))
	tests := []struct {
		name     string
		function string
		input    []byte
		timeout  time.Duration
		workflow bool // the call gets a WorkflowHost with future 1 resolved
		code     abi.Code
		contains string
	}{
		{name: "Trap", function: "trap", code: abi.CodeTrap, contains: "unreachable"},
		{name: "PointerOverflow", function: "overflow_output", code: abi.CodeBadPointer, contains: "outside"},
		{name: "PointerOutOfBounds", function: "oob_output", code: abi.CodeBadPointer, contains: "0xf0000000"},
		{name: "LengthLargerThanMemory", function: "huge_output", code: abi.CodeBadPointer, contains: "4294967280 bytes"},
		{name: "LogOutOfBounds", function: "oob_log", code: abi.CodeBadPointer, contains: "log message"},
		{name: "Request4GiB", function: "alloc_4gib", code: abi.CodeTrap, contains: "its stderr began: runtime: out of memory: cannot allocate 4294967296-byte block"},
		{name: "EndlessLoop", function: "spin", timeout: 20 * time.Millisecond, code: abi.CodeTimeout},
		{name: "NestedAMillionDeep", function: "deep_output", code: abi.CodeBadBlob, contains: string(codec.CodePayloadLimit)},
		{name: "ActivityCallsWorkflowImport", function: "workflow_import", code: abi.CodeImportNotAllowed, contains: "weft:workflow/v1.now"},
		{name: "WorkflowCallsActivityImport", function: "wf_checkpoint", code: abi.CodeImportNotAllowed, contains: "weft:activity/v1.checkpoint"},
		{name: "WorkflowWithoutHost", function: "wf_no_host", code: abi.CodeHookFailed, contains: "no WorkflowHost"},
		{name: "FutureReadOutOfBounds", function: "wf_future_read_oob", workflow: true, code: abi.CodeBadPointer, contains: "future_read dst"},
		{name: "ProcExit", function: "exit", code: abi.CodeExited, contains: "proc_exit(3); its stderr began: giving up"},
		{name: "UnrecoveredPanic", function: "panic", code: abi.CodeTrap, contains: "its stderr began: panic: hostile panic"},
		{name: "UnknownStatus", function: "bad_status", code: abi.CodeABIViolation, contains: "unknown status 7"},
		{name: "OKWithoutOutput", function: "no_output", code: abi.CodeABIViolation, contains: "without calling set_output"},
		{name: "OutputNotAFrame", function: "not_a_frame", code: abi.CodeBadBlob, contains: string(codec.CodeInvalidPayloadFraming)},
		{name: "OutputTwice", function: "output_twice", code: abi.CodeABIViolation, contains: "after set_output"},
		{name: "ErrorWithoutType", function: "untyped_error", code: abi.CodeBadBlob, contains: `"type"`},
		{name: "BlobReadWithoutBlob", function: "blob_read_nothing", code: abi.CodeABIViolation, contains: "no pending blob"},
		{name: "ActivitySuspends", function: "suspend_activity", code: abi.CodeABIViolation, contains: "only workflows suspend"},
		{name: "AllocOutOfBounds", function: "echo", input: MustFrame(t, codec.Bytes(make([]byte, 2<<20))), code: abi.CodeBadPointer, contains: "weft_alloc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l logs
			req := &host.CallRequest{Digest: digest, Function: tc.function, Input: tc.input, Timeout: tc.timeout, Log: l.add}
			if tc.workflow {
				j := newJournal()
				j.resolve(1, host.FutureResult{Outcome: abi.OutcomeValue, Frame: echo})
				req.Workflow = j.replay()
			}
			_, err := h.Call(t.Context(), req)
			requireCode(t, err, tc.code)
			require.ErrorContains(t, err, tc.contains)
			res, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo", Input: echo})
			require.NoError(t, err, "the host keeps serving")
			require.Equal(t, echo, res.Output)
		})
	}
}

// TestMemoryGrowRefused has a guest grow its memory by 2 GiB in one
// memory.grow: the host refuses, the guest traps, and the call fails with
// memory_limit. (A grow past 4 GiB fails in wazero before the host is
// asked; the guest sees -1 all the same.)
func TestMemoryGrowRefused(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	grow4GiB := func(*gen) []byte {
		return cat(wasmgen.I32Const(1<<15), wasmgen.MemoryGrow, wasmgen.I32Const(-1), wasmgen.I32Eq,
			wasmgen.If, wasmgen.Unreachable, wasmgen.End, wasmgen.I32Const(0))
	}
	info, err := h.Compile(t.Context(), tiny{call: grow4GiB}.bytes(t))
	require.NoError(t, err)
	_, err = h.Call(t.Context(), &host.CallRequest{Digest: info.Digest, Function: "run", MemoryLimit: 1 << 20})
	requireCode(t, err, abi.CodeMemoryLimit)
	require.ErrorContains(t, err, "limit of 1 MiB")
}

// TestSandbox checks that a guest finds no filesystem, no environment and
// no arguments.
func TestSandbox(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	digest := MustCompile(t, h, hostilePath)
	res, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "sandbox"})
	require.NoError(t, err)
	out := MustDecode(t, res.Output)
	for _, k := range []string{"read_file", "read_dir"} {
		v, _ := out.Get(k)
		requireValue(t, codec.Bool(false), v, k)
	}
	for _, k := range []string{"env", "args"} {
		v, _ := out.Get(k)
		requireValue(t, codec.Long(0), v, k)
	}
}

// TestHostileStderr checks that a guest's stderr becomes log lines of its
// call.
func TestHostileStderr(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	digest := MustCompile(t, h, hostilePath)
	var l logs
	_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "exit", Log: l.add})
	requireCode(t, err, abi.CodeExited)
	require.Equal(t, []host.LogEntry{{Level: abi.LevelWarn, Source: host.SourceStderr, Message: "giving up"}}, l.all())
}

// TestCompileRejects deploys modules that break the ABI: each is refused
// with a code and a message its author can act on.
func TestCompileRejects(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{InitTimeout: 100 * time.Millisecond})
	oob := abi.Pack(0xffff0000, 10)
	tests := []struct {
		name     string
		wasm     []byte
		code     abi.Code
		contains string
	}{
		{name: "NotWasm", wasm: []byte("hello"), code: abi.CodeInvalidModule, contains: "not a valid WebAssembly module"},
		{name: "Command", wasm: tiny{start: true}.bytes(t), code: abi.CodeInvalidModule, contains: "-buildmode=c-shared"},
		{name: "NoMemory", wasm: tiny{omit: abi.ExportMemory}.bytes(t), code: abi.CodeMissingExport, contains: `its memory as "memory"`},
		{name: "NoABIVersion", wasm: tiny{omit: abi.ExportABIVersion}.bytes(t), code: abi.CodeMissingExport, contains: "not built with a weft SDK"},
		{name: "WrongABIVersion", wasm: tiny{abiVersion: 2}.bytes(t), code: abi.CodeABIMismatch, contains: "speaks weft ABI v2; this host speaks v1"},
		{name: "NoCall", wasm: tiny{omit: abi.ExportCall}.bytes(t), code: abi.CodeMissingExport, contains: "weft_call func(i64, i64) -> i32"},
		{name: "NoAlloc", wasm: tiny{omit: abi.ExportAlloc}.bytes(t), code: abi.CodeMissingExport, contains: "weft_alloc"},
		{name: "CallSignature", wasm: tiny{callSig: true}.bytes(t), code: abi.CodeMissingExport, contains: "exports weft_call as func(i32, i32) -> i32; weft ABI v1 wants func(i64, i64) -> i32"},
		{name: "ForeignImport", wasm: tiny{imports: [][3]string{{"env", "foo", "i32>"}}}.bytes(t), code: abi.CodeInvalidModule, contains: "imports env.foo"},
		{name: "FutureABIImport", wasm: tiny{imports: [][3]string{{"weft:env/v2", "log", "i64>"}}}.bytes(t), code: abi.CodeABIMismatch, contains: "weft:env/v2.log"},
		{name: "UnknownWeftImport", wasm: tiny{imports: [][3]string{{abi.ModuleEnv, "frob", "i64>"}}}.bytes(t), code: abi.CodeABIMismatch, contains: "needs a newer weft"},
		{name: "ImportSignature", wasm: tiny{imports: [][3]string{{abi.ModuleEnv, abi.ImportLog, "i32>"}}}.bytes(t), code: abi.CodeABIMismatch, contains: "log as func(i32)"},
		{name: "ManifestOutOfBounds", wasm: tiny{packed: &oob}.bytes(t), code: abi.CodeInvalidManifest, contains: "outside"},
		{name: "ManifestNotAFrame", wasm: tiny{manifest: []byte("{}")}.bytes(t), code: abi.CodeInvalidManifest, contains: "not a valid Value frame"},
		{name: "ManifestNotAMap", wasm: tiny{manifest: MustFrame(t, codec.List())}.bytes(t), code: abi.CodeInvalidManifest, contains: "is a list"},
		{name: "ManifestVersion", wasm: tiny{manifest: MustFrame(t, obj("abi_version", 2, "functions", codec.List()))}.bytes(t), code: abi.CodeABIMismatch, contains: "manifest says weft ABI v2"},
		{name: "ManifestNoFunctions", wasm: tiny{manifest: tinyManifest(t)}.bytes(t), code: abi.CodeInvalidManifest, contains: "lists no functions"},
		{name: "ManifestBadKind", wasm: tiny{manifest: tinyManifest(t, "run", "job")}.bytes(t), code: abi.CodeInvalidManifest, contains: `kind "job"`},
		{name: "ManifestDuplicate", wasm: tiny{manifest: tinyManifest(t, "run", "activity", "run", "workflow")}.bytes(t), code: abi.CodeInvalidManifest, contains: `"run" appears twice`},
		{name: "ManifestEmptyName", wasm: tiny{manifest: tinyManifest(t, "", "activity")}.bytes(t), code: abi.CodeInvalidManifest, contains: "1 to 256 bytes"},
		{name: "InitializeTraps", wasm: tiny{initialize: []byte{0x00}}.bytes(t), code: abi.CodeTrap, contains: "_initialize"},
		{name: "InitializeLoops", wasm: tiny{initialize: cat([]byte{0x03, 0x40}, []byte{0x0c, 0x00}, []byte{0x0b})}.bytes(t), code: abi.CodeTimeout, contains: "_initialize"},
		{name: "MemoryOverLimit", wasm: tiny{minPages: 2048}.bytes(t), code: abi.CodeInvalidModule, contains: "needs 2048 pages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Compile(t.Context(), tc.wasm)
			requireCode(t, err, tc.code)
			require.ErrorContains(t, err, tc.contains)
			// A call that brings the same bytes fails the same way.
			_, err = h.Call(t.Context(), &host.CallRequest{
				Digest: host.Digest(tc.wasm), Function: "run",
				Wasm: func(context.Context) ([]byte, error) { return tc.wasm, nil },
			})
			requireCode(t, err, tc.code)
		})
	}
	t.Run("Accepted", func(t *testing.T) {
		info, err := h.Compile(t.Context(), tiny{}.bytes(t))
		require.NoError(t, err)
		require.Equal(t, []host.Function{{Name: "run", Kind: abi.KindActivity}}, info.Functions)
	})
}

// TestCallModuleLoading covers calls of modules the host has not compiled.
func TestCallModuleLoading(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	wasm := tiny{call: callBadOutput}.bytes(t)
	_, err := h.Call(t.Context(), &host.CallRequest{Digest: host.Digest(wasm), Function: "run"})
	requireCode(t, err, abi.CodeModuleNotFound)

	_, err = h.Call(t.Context(), &host.CallRequest{
		Digest: host.Digest([]byte("other")), Function: "run",
		Wasm: func(context.Context) ([]byte, error) { return wasm, nil },
	})
	requireCode(t, err, abi.CodeInvalidModule)
	require.ErrorContains(t, err, "not the requested")

	_, err = h.Call(t.Context(), &host.CallRequest{
		Digest: host.Digest(wasm), Function: "run",
		Wasm: func(context.Context) ([]byte, error) { return wasm, nil },
	})
	requireCode(t, err, abi.CodeBadPointer)
	_, ok := h.Module(host.Digest(wasm))
	require.True(t, ok, "the loaded module stays compiled")

	require.NoError(t, h.Unload(t.Context(), host.Digest(wasm)))
	_, ok = h.Module(host.Digest(wasm))
	require.False(t, ok)
	require.NoError(t, h.Unload(t.Context(), host.Digest(wasm)), "unloading twice is fine")
}

// TestFailingCallsStayFlat runs many failing calls of every kind and checks
// that goroutines and the heap do not grow with them.
func TestFailingCallsStayFlat(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	h := MustNewHost(t, host.Config{})
	ctx := t.Context()
	type failing struct {
		digest  string
		fn      string
		timeout time.Duration
		code    abi.Code
	}
	var cases []failing
	for _, c := range []struct {
		t    tiny
		code abi.Code
	}{
		{tiny{call: callTrap}, abi.CodeTrap},
		{tiny{call: callBadOutput}, abi.CodeBadPointer},
		{tiny{call: callStatus(9)}, abi.CodeABIViolation},
		{tiny{call: callNow}, abi.CodeImportNotAllowed},
	} {
		info, err := h.Compile(ctx, c.t.bytes(t))
		require.NoError(t, err)
		cases = append(cases, failing{digest: info.Digest, fn: "run", code: c.code})
	}
	spin, err := h.Compile(ctx, tiny{call: callSpin}.bytes(t))
	require.NoError(t, err)
	hostile := MustCompile(t, h, hostilePath)

	call := func(i int) {
		f := cases[i%len(cases)]
		switch {
		case i%100 == 50:
			f = failing{digest: spin.Digest, fn: "run", timeout: time.Millisecond, code: abi.CodeTimeout}
		case i%500 == 250:
			f = failing{digest: hostile, fn: "trap", code: abi.CodeTrap}
		}
		_, err := h.Call(ctx, &host.CallRequest{Digest: f.digest, Function: f.fn, Timeout: f.timeout})
		if host.ErrorCode(err) != f.code {
			require.Failf(t, "wrong failure", "call %d: want %s, got %v", i, f.code, err)
		}
	}
	// Warm up, then measure.
	for i := range 200 {
		call(i)
	}
	g0, heap0 := settle()
	for i := range n {
		call(i)
	}
	g1, heap1 := settle()
	t.Logf("%d failing calls: goroutines %d → %d, heap %s → %s", n, g0, g1, mb(heap0), mb(heap1))
	require.LessOrEqual(t, g1, g0+2, "goroutines stay flat")
	require.Less(t, int64(heap1)-int64(heap0), int64(16<<20), "the heap stays flat")
}

// settle lets finished goroutines exit and returns the goroutine count and
// the live heap after a full collection.
func settle() (int, uint64) {
	var ms runtime.MemStats
	for range 5 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

func mb(n uint64) string {
	return strings.TrimRight(strings.TrimRight(fmtFloat(float64(n)/(1<<20)), "0"), ".") + " MiB"
}

func fmtFloat(f float64) string {
	return strconvFormat(f)
}

func strconvFormat(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
