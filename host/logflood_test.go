package host_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/host/internal/wasmgen"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

var updateTestdata = flag.Bool("update", false, "rewrite the hand-assembled guests in testdata")

// The log flood guest: its _initialize and its activity "flood" each log
// floodLines lines of floodLineLen bytes in a tight loop; "flood" then
// returns null.
const (
	floodWasm    = "testdata/logflood.wasm"
	floodLines   = 5000
	floodLineLen = 8 << 10
	floodMsgAt   = 16 << 10
	floodNullAt  = 4096
)

// logFloodGuest assembles the log flood guest.
func logFloodGuest(tb testing.TB) []byte {
	tb.Helper()
	i32, i64 := wasmgen.I32, wasmgen.I64
	var m wasmgen.Module
	logFn := m.Import(abi.ModuleEnv, abi.ImportLog, []byte{i32, i64}, nil)
	setOutput := m.Import(abi.ModuleEnv, abi.ImportSetOutput, []byte{i64}, nil)
	m.Memory(1, 0)
	m.ExportMemory(abi.ExportMemory)
	manifest := MustFrame(tb, obj("abi_version", abi.Version, "functions", codec.List(obj("name", "flood", "kind", "activity"))))
	m.Data(manifestAt, manifest)
	null := MustFrame(tb, codec.Null())
	m.Data(floodNullAt, null)
	m.Data(floodMsgAt, bytes.Repeat([]byte("x"), floodLineLen))
	// loop logs floodLines lines, counting in local i.
	loop := func(i uint32) []byte {
		return cat(
			wasmgen.I64Const(0), wasmgen.LocalSet(i),
			wasmgen.Block, wasmgen.Loop,
			wasmgen.LocalGet(i), wasmgen.I64Const(floodLines), wasmgen.I64GeU, wasmgen.BrIf(1),
			wasmgen.I32Const(int32(abi.LevelInfo)), wasmgen.I64Const(int64(abi.Pack(floodMsgAt, floodLineLen))), wasmgen.Call(logFn),
			wasmgen.LocalGet(i), wasmgen.I64Const(1), wasmgen.I64Add, wasmgen.LocalSet(i),
			wasmgen.Br(0),
			wasmgen.End, wasmgen.End,
		)
	}
	exports := []struct {
		name string
		idx  uint32
	}{
		{abi.ExportABIVersion, m.Func(nil, []byte{i32}, nil, wasmgen.I32Const(abi.Version))},
		{abi.ExportAlloc, m.Func([]byte{i32}, []byte{i32}, nil, wasmgen.I32Const(scratchAt))},
		{abi.ExportFree, m.Func([]byte{i32, i32}, nil, nil)},
		{abi.ExportManifest, m.Func(nil, []byte{i64}, nil, wasmgen.I64Const(int64(abi.Pack(manifestAt, uint32(len(manifest))))))},
		{abi.ExportCall, m.Func([]byte{i64, i64}, []byte{i32}, []byte{i64}, loop(2),
			wasmgen.I64Const(int64(abi.Pack(floodNullAt, uint32(len(null))))), wasmgen.Call(setOutput), wasmgen.I32Const(0))},
		{abi.ExportInitialize, m.Func(nil, nil, []byte{i64}, loop(0))},
	}
	for _, e := range exports {
		m.Export(e.name, e.idx)
	}
	return m.Bytes()
}

// TestLogFloodGuestIsUpToDate checks the committed log flood guest, which
// the daemon's end-to-end tests deploy, against its assembly here; -update
// rewrites it.
func TestLogFloodGuestIsUpToDate(t *testing.T) {
	want := logFloodGuest(t)
	if *updateTestdata {
		require.NoError(t, os.WriteFile(floodWasm, want, 0o644))
	}
	got, err := os.ReadFile(floodWasm)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "%s is stale: go test ./host -run TestLogFloodGuestIsUpToDate -update", floodWasm)
}

// syncBuffer is a bytes.Buffer for a logger shared by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var droppedRe = regexp.MustCompile(`plugin log lines dropped:.* dropped_lines=(\d+) dropped_bytes=(\d+)`)

// floodAccount counts, in a daemon log, the flood lines written by logger
// name and the lines its drop reports counted; it checks that no written
// line is longer than maxLine.
func floodAccount(tb testing.TB, log, name string, maxLine int) (written, dropped int) {
	tb.Helper()
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, " "+name+": ") {
			continue
		}
		if m := droppedRe.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			dropped += n
			continue
		}
		if i := strings.Index(line, "xxxx"); i >= 0 {
			written++
			msg := line[i:]
			msg = msg[:strings.IndexByte(msg, ' ')]
			require.LessOrEqual(tb, len(msg), maxLine, "a flood line of %d bytes", len(msg))
		}
	}
	return written, dropped
}

// TestLogFloodBudget runs the log flood guest: its _initialize at compile
// and its call each log 5,000 lines of 8 KiB (40 MiB). The daemon's log
// gets a bounded share of them, each cut to MaxLine, and drop reports
// that account for every other line; the call's Log hook still gets every
// line whole, and the call returns normally. Lines a call skips (LogSkip)
// reach the hook only.
func TestLogFloodBudget(t *testing.T) {
	var out syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Name: "weft", Output: &out, Level: hclog.Info})
	h := MustNewHost(t, host.Config{Logger: logger})
	info, err := h.Compile(context.Background(), logFloodGuest(t))
	require.NoError(t, err)
	initLog := out.String()
	written, dropped := floodAccount(t, initLog, "weft."+strings.TrimPrefix(info.Digest, "sha256:")[:12], host.DefaultLogMaxLine)
	require.Equal(t, floodLines, written+dropped, "every line of _initialize is written or counted")
	require.Positive(t, dropped)
	require.Less(t, len(initLog), 1<<20, "daemon log of _initialize")

	hooked := 0
	res, err := h.Call(context.Background(), &host.CallRequest{
		Digest: info.Digest, Plugin: "logflood", Function: "flood", LogFields: []any{"task_id", "t1"},
		Log: func(e host.LogEntry) {
			if len(e.Message) == floodLineLen {
				hooked++
			}
		},
	})
	require.NoError(t, err)
	require.Equal(t, abi.StatusOK, res.Status)
	require.Equal(t, floodLines, hooked, "the Log hook gets every line whole")
	callLog := strings.TrimPrefix(out.String(), initLog)
	written, dropped = floodAccount(t, callLog, "weft.logflood", host.DefaultLogMaxLine)
	require.Equal(t, floodLines, written+dropped, "every line of the call is written or counted")
	require.Positive(t, dropped)
	require.Less(t, len(callLog), 1<<20, "daemon log of the call")
	require.Contains(t, callLog, "function=flood task_id=t1")

	// A call whose first 4,900 lines the logger already has (a replay)
	// writes or counts only the other 100.
	before := out.String()
	hooked = 0
	_, err = h.Call(context.Background(), &host.CallRequest{
		Digest: info.Digest, Plugin: "replayed", Function: "flood", LogSkip: floodLines - 100,
		Log: func(host.LogEntry) { hooked++ },
	})
	require.NoError(t, err)
	require.Equal(t, floodLines, hooked)
	written, dropped = floodAccount(t, strings.TrimPrefix(out.String(), before), "weft.replayed", host.DefaultLogMaxLine)
	require.Equal(t, 100, written+dropped)
}
