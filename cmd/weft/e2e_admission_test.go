//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/host"
)

// Modules that are small to send and expensive to decode or compile: one
// function (of params, with body: its local declarations, instructions and
// end) exported as "f", and a memory of pages exported as "memory".
func bombModule(params []byte, body []byte, pages uint32) []byte {
	uv := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	out := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, b []byte) { out = append(uv(append(out, id), uint64(len(b))), b...) }
	typ := append(uv([]byte{1, 0x60}, uint64(len(params))), params...)
	section(1, append(typ, 0))
	section(3, []byte{1, 0})
	section(5, uv([]byte{1, 0}, uint64(pages)))
	section(7, []byte{2, 1, 'f', 0, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0})
	section(10, append(uv([]byte{1}, uint64(len(body))), body...))
	return out
}

func bombLocals(n uint32) []byte {
	return bombModule(nil, append(binary.AppendUvarint([]byte{1}, uint64(n)), 0x7e, 0x0b), 1)
}

func bombNested(n int) []byte {
	body := append(bytes.Repeat([]byte{0x02, 0x40}, n), bytes.Repeat([]byte{0x0b}, n)...)
	return bombModule(nil, append(append([]byte{0}, body...), 0x0b), 1)
}

func bombBrTable(n int) []byte {
	body := binary.AppendUvarint([]byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}, uint64(n))
	body = append(body, make([]byte, n+1)...)
	return bombModule(nil, append(body, 0x0b, 0x0b), 1)
}

func bombParams(n int) []byte {
	return bombModule(bytes.Repeat([]byte{0x7f}, n), []byte{0, 0x0b}, 1)
}

func bombLargeFunction(size int) []byte {
	body := append([]byte{0}, bytes.Repeat([]byte{0x41, 0x00, 0x1a}, size/3)...)
	return bombModule(nil, append(body, 0x0b), 1)
}

func bombMemory(pages uint32) []byte { return bombModule(nil, []byte{0, 0x0b}, pages) }

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// waitChild polls until the daemon has a child process and returns it.
func waitChild(tb testing.TB, d *Daemon, within time.Duration) int {
	tb.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c := childrenOf(d.cmd.Process.Pid); len(c) > 0 {
			return c[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("the daemon started no compile child within %s", within)
	return 0
}

// waitNoChild polls until the daemon has no child process left.
func waitNoChild(tb testing.TB, d *Daemon, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for len(childrenOf(d.cmd.Process.Pid)) > 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("compile children still running %s later: %v", within, childrenOf(d.cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deployRaw deploys wasm as name and returns the status and the body of an
// error answer.
func deployRaw(ctx context.Context, d *Daemon, name string, wasm []byte) (int, string) {
	code, err := d.Do(ctx, http.MethodPut, "/v1/modules/"+name, wasm, nil)
	if err != nil {
		return code, err.Error()
	}
	return code, ""
}

// TestE2EAdmissionBombs deploys every module that used to kill the daemon
// or keep it compiling for minutes, while another task runs: each is
// refused with 422 module_invalid naming the limit it exceeds, the daemon's
// peak RSS stays under 1 GiB, and the running task completes.
func TestE2EAdmissionBombs(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	sleeper := d.MustSubmit("sleep", `{"ms":3000}`, "")

	for _, b := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"locals-4g", bombLocals(math.MaxUint32), "function 0 declares 4294967295 locals; the limit is 50000 (--module-max-locals)"},
		{"locals-256m", bombLocals(1 << 28), "function 0 declares 268435456 locals; the limit is 50000 (--module-max-locals)"},
		{"nested-1m", bombNested(1 << 20), "nests blocks 10001 deep; the limit is 10000 (--module-max-nesting)"},
		{"br-table-20m", bombBrTable(20_000_000), "the limit is 8388608 (--module-max-body-size)"},
		{"br-table-1m", bombBrTable(1 << 20), "br_table with 1048576 targets; the limit is 50000 (--module-max-br-table-targets)"},
		{"params-1m", bombParams(1 << 20), "type 0 declares 1048576 parameters; the limit is 1000 (--module-max-params)"},
		{"function-60mib", bombLargeFunction(60 << 20), "the limit is 8388608 (--module-max-body-size)"},
		{"memory-2000-pages", bombMemory(2000), "memory 0 needs 2000 pages (131072000 bytes) at start; the memory limit is 1024 pages"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code, body := deployRaw(ctx, d, b.name, b.wasm)
		cancel()
		require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %s", b.name, body)
		require.Contains(t, body, `"code":"module_invalid"`, b.name)
		require.Contains(t, body, b.want, b.name)
	}
	hwm := procStatus(t, d.cmd.Process.Pid, "VmHWM:")
	t.Logf("daemon peak RSS after the bombs: %d MiB", hwm>>20)
	require.Less(t, hwm, int64(1<<30), "peak RSS of the daemon")

	done := d.MustWaitStatus(sleeper.ID, 60*time.Second, "completed", "failed")
	require.Equal(t, "completed", done.Status, "the other task completes: %+v", done.Error)
}

// TestE2EAdmissionChildLimits raises the structural limits so that bombs
// reach the compiler: the compile child is killed by its memory limit or
// its time limit, the deploy answers 422 naming it, and the daemon goes on
// serving with its RSS bounded.
func TestE2EAdmissionChildLimits(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t,
		"--module-max-body-size", strconv.Itoa(64<<20),
		"--module-max-nesting", "1000000",
		"--compile-max-memory", strconv.Itoa(256<<20),
		"--compile-timeout", "3s")
	d.MustDeployTestkit()

	code, body := deployRaw(t.Context(), d, "function-60mib", bombLargeFunction(60<<20))
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	require.Contains(t, body, "needed more than its memory limit of 268435456 bytes (--compile-max-memory)")

	code, body = deployRaw(t.Context(), d, "nested-50k", bombNested(50_000))
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	require.Contains(t, body, "(--compile-timeout)")

	waitNoChild(t, d, 10*time.Second)
	hwm := procStatus(t, d.cmd.Process.Pid, "VmHWM:")
	t.Logf("daemon peak RSS: %d MiB", hwm>>20)
	require.Less(t, hwm, int64(1<<30), "peak RSS of the daemon")
	echo := d.MustSubmit("echo", `{"after":"bombs"}`, "")
	require.JSONEq(t, `{"after":"bombs"}`, string(d.MustWaitStatus(echo.ID, 30*time.Second, "completed").Output))
}

// TestE2EAdmissionDisconnectKillsChild abandons a deploy whose module takes
// long to compile: the daemon kills the compile child, and no child process
// is left.
func TestE2EAdmissionDisconnectKillsChild(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--module-max-nesting", "1000000")
	ctx, cancel := context.WithCancel(t.Context())
	answered := make(chan int, 1)
	go func() {
		code, _ := deployRaw(ctx, d, "nested-100k", bombNested(100_000))
		answered <- code
	}()
	child := waitChild(t, d, 30*time.Second)
	cancel()
	<-answered
	waitNoChild(t, d, 10*time.Second)
	_, err := os.Stat(fmt.Sprintf("/proc/%d", child))
	require.True(t, os.IsNotExist(err), "compile child %d still exists", child)
	d.MustDeployTestkit()
}

// TestE2EAdmissionSIGTERMMidCompile stops the daemon while a compile child
// works on a module that takes minutes: the daemon exits within its
// documented 10 s and takes the child with it.
func TestE2EAdmissionSIGTERMMidCompile(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--module-max-nesting", "1000000")
	go func() { _, _ = deployRaw(context.Background(), d, "nested-100k", bombNested(100_000)) }()
	child := waitChild(t, d, 30*time.Second)
	took, err := d.Stop()
	require.NoError(t, err, "clean exit")
	require.Less(t, took, daemon.StopTimeout, "exit after SIGTERM")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", child)); os.IsNotExist(err) {
			break
		}
		require.True(t, time.Now().Before(deadline), "compile child %d outlived the daemon", child)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2EAdmissionCompiledOnce deploys testkit: a child compiles it and
// records it, and the daemon's own compile hits the child's cache entry
// (one file in the cache). After a restart the task's module load skips
// the child; with the record gone, or with other limits, the load compiles
// in a child again.
func TestE2EAdmissionCompiledOnce(t *testing.T) {
	t.Parallel()
	d := MustRunMainOwnCache(t, "--log-level", "debug")
	d.MustDeployTestkit()
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(t, err)
	markers, err := filepath.Glob(filepath.Join(d.DataDir, daemon.CacheDirName, daemon.AdmittedDir, "*", "*", strings.TrimPrefix(host.Digest(wasm), "sha256:")))
	require.NoError(t, err)
	require.Len(t, markers, 1, "the admitted digest is recorded")
	cached := func() []string {
		f, err := filepath.Glob(filepath.Join(d.DataDir, daemon.CacheDirName, "wazero-*", "*"))
		require.NoError(t, err)
		return f
	}
	require.Len(t, cached(), 1, "the child's cache entry is the daemon's: one compiled module")
	require.Equal(t, 1, strings.Count(d.logTail(1000), "compiled in a child"))

	run := func() {
		echo := d.MustSubmit("echo", `"x"`, "")
		require.JSONEq(t, `"x"`, string(d.MustWaitStatus(echo.ID, 30*time.Second, "completed").Output))
	}
	_, err = d.Stop()
	require.NoError(t, err)
	d.Restart()
	run()
	require.Zero(t, strings.Count(d.logTail(1000), "compiled in a child"), "a recorded digest skips the child")

	_, err = d.Stop()
	require.NoError(t, err)
	require.NoError(t, os.Remove(markers[0]))
	d.Restart()
	run()
	require.Equal(t, 1, strings.Count(d.logTail(1000), "compiled in a child"), "a task's module load goes through the child")
	require.Len(t, cached(), 1)

	// Other limits admit anew.
	_, err = d.Stop()
	require.NoError(t, err)
	d.Args = append(d.Args, "--module-max-locals", "40000")
	d.Restart()
	run()
	require.Equal(t, 1, strings.Count(d.logTail(1000), "compiled in a child"), "a digest admitted under other limits goes through the child")
}

// TestE2EAdmissionCompileWorkers starts three slow deploys against a
// daemon with --compile-workers 1: only one compile child runs at a time,
// and the waiting deploys end when their clients leave.
func TestE2EAdmissionCompileWorkers(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--module-max-nesting", "1000000", "--compile-workers", "1")
	ctx, cancel := context.WithCancel(t.Context())
	answered := make(chan int, 3)
	for i := range 3 {
		go func() {
			code, _ := deployRaw(ctx, d, fmt.Sprintf("nested-%d", i), bombNested(100_000+i))
			answered <- code
		}()
	}
	waitChild(t, d, 30*time.Second)
	for range 50 {
		require.LessOrEqual(t, len(childrenOf(d.cmd.Process.Pid)), 1, "compile children at once")
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	for range 3 {
		<-answered
	}
	waitNoChild(t, d, 10*time.Second)
}
