//go:build unix

package loadbench

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/daemon"
)

// testWasm is the testkit module, from this package's directory.
var testWasm = filepath.Join("..", "..", "..", DefaultWasm)

// TestMain makes the test binary the compile child of the in-process
// daemons.
func TestMain(m *testing.M) {
	daemon.CompileChildMain(os.Args[1:])
	os.Exit(m.Run())
}

func testBin(tb testing.TB) string {
	tb.Helper()
	bin, err := os.Executable()
	require.NoError(tb, err)
	return bin
}

// TestRun runs a small load on an in-process daemon, with a CPU profile
// and a trace, and checks that the report adds up.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Tasks: 100, Clients: 4, Wasm: testWasm, CompileBin: testBin(t), Synchronous: "NORMAL",
		CPUProfile: filepath.Join(dir, "cpu.pprof"), Trace: filepath.Join(dir, "trace.out"),
	}
	rep, err := Run(t.Context(), cfg, io.Discard)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, "in-process", rep.Daemon)
	require.Equal(t, 100, rep.Tasks)
	require.Equal(t, 100, rep.Completed)
	require.Equal(t, "NORMAL", rep.Synchronous)
	require.False(t, *rep.DurableCommits)
	require.Equal(t, 128, rep.Workers, "the daemon's default")
	require.Positive(t, rep.TasksPerSecond)
	require.Positive(t, rep.ElapsedSeconds)
	require.GreaterOrEqual(t, rep.Submit.LatencyMS.P99, rep.Submit.LatencyMS.P50)
	require.GreaterOrEqual(t, rep.Store.Writes, int64(200), "each task is at least its insert and its end")
	require.Positive(t, rep.Store.Commits)
	require.NotNil(t, rep.Disk, "the in-process daemon's disk is probed")
	require.Positive(t, rep.Disk.FsyncMSBefore)
	require.Equal(t, float64(TargetPerSecond), rep.Target.TasksPerSecond)
	for _, f := range []string{cfg.CPUProfile, cfg.Trace} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Positive(t, fi.Size(), f)
	}
}

// A module file that is missing fails the run when the daemon lacks the
// module.
func TestRunMissingModule(t *testing.T) {
	_, err := Run(t.Context(), Config{Tasks: 1, Wasm: filepath.Join(t.TempDir(), "none.wasm"), CompileBin: testBin(t)}, io.Discard)
	require.ErrorContains(t, err, "read module")
}

func TestSummarize(t *testing.T) {
	require.Equal(t, LatencySummary{}, Summarize(nil))
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	ds = append(ds, 0) // a submit that never ran
	require.Equal(t, LatencySummary{P50: 50, P99: 99, Max: 100}, Summarize(ds))
}

// BenchmarkLoadEcho runs `weft bench load`'s measurement: 10,000 background
// echo tasks from 32 HTTP clients against an in-process daemon with durable
// commits, first submit to last completion.
func BenchmarkLoadEcho(b *testing.B) {
	cfg := benchConfig(b)
	var tasks, seconds float64
	var last *Report
	for b.Loop() {
		rep := MustRun(b, cfg)
		tasks += float64(rep.Completed)
		seconds += rep.ElapsedSeconds
		last = rep
	}
	b.ReportMetric(tasks/seconds, "tasks/s")
	b.ReportMetric(last.Submit.LatencyMS.P50, "submit_p50_ms")
	b.ReportMetric(last.Submit.LatencyMS.P99, "submit_p99_ms")
	b.ReportMetric(0, "ns/op")
}

// benchConfig is the load of the benchmarks (a tenth under -short).
func benchConfig(tb testing.TB) Config {
	cfg := Config{Wasm: testWasm, CompileBin: testBin(tb)}
	if testing.Short() {
		cfg.Tasks = DefaultTasks / 10
	}
	return cfg
}

// MustRun is Run that fails tb unless every task completed.
func MustRun(tb testing.TB, cfg Config) *Report {
	tb.Helper()
	rep, err := Run(tb.Context(), cfg, io.Discard)
	require.NoError(tb, err)
	require.True(tb, rep.OK() && rep.Completed == rep.Tasks, "load run: %d completed of %d, %d lost, %d failed, %d unfinished, %d submit errors",
		rep.Completed, rep.Tasks, rep.Lost, rep.Failed, rep.Unfinished, rep.Submit.Errors)
	return rep
}

// TestRunWorkflows runs the workflows workload small on an in-process
// daemon: every workflow answers completed, and the ten-activity runs
// give latencies.
func TestRunWorkflows(t *testing.T) {
	cfg := Config{
		Workload: WorkloadWorkflows, Tasks: 40, Clients: 4, CompileBin: testBin(t),
		Wasm: filepath.Join("..", "..", "..", DefaultWorkflowWasm),
	}
	rep, err := Run(t.Context(), cfg, io.Discard)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep.Workflows)
	require.Equal(t, "load-workflows", rep.Benchmark)
	require.Equal(t, 40, rep.Workflows.Workflows)
	require.Positive(t, rep.Workflows.PerSecond)
	require.GreaterOrEqual(t, rep.Workflows.LatencyMS.P99, rep.Workflows.LatencyMS.P50)
	require.Positive(t, rep.Workflows.TenActivitiesMS.P50)
	require.Equal(t, "sqlite", rep.Backend)
	require.Equal(t, 1, rep.Hosts)
}

// Several hosts need a shared store, and the workload is one of two.
func TestRunRefusesBadConfig(t *testing.T) {
	_, err := Run(t.Context(), Config{Hosts: 2, CompileBin: testBin(t)}, io.Discard)
	require.ErrorContains(t, err, "several hosts need a PostgreSQL store")
	_, err = Run(t.Context(), Config{Workload: "jobs", CompileBin: testBin(t)}, io.Discard)
	require.ErrorContains(t, err, `workload "jobs"`)
}
