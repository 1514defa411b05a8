//go:build unix

package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/loadbench"
)

// loadTestWasm is the testkit module, from this package's directory.
var loadTestWasm = filepath.Join("..", "..", loadbench.DefaultWasm)

// TestBenchLoad runs the load command against a real daemon (--addr): the
// in-process daemon would compile the plugin under the race detector for
// every run; BenchmarkLoadEcho measures that mode.
func TestBenchLoad(t *testing.T) {
	tasks := 200
	if testing.Short() {
		tasks = 50
	}
	d := MustRunMain(t)
	code, stdout, stderr := MustRunBench(t, "bench", "load", "--addr", d.Addr, "--data", d.DataDir,
		"--tasks", strconv.Itoa(tasks), "--clients", "8", "--wasm", loadTestWasm)
	require.Equal(t, 0, code, stderr)

	var rep loadbench.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Equal(t, "load", rep.Benchmark)
	require.Equal(t, "weft", rep.Implementation)
	require.Equal(t, d.Addr, rep.Daemon)
	require.Equal(t, tasks, rep.Tasks)
	require.Equal(t, 8, rep.Clients)
	require.Equal(t, tasks, rep.Completed, "every task completed")
	require.Zero(t, rep.Lost)
	require.Zero(t, rep.Failed)
	require.Zero(t, rep.Unfinished)
	require.Zero(t, rep.Submit.Errors)
	require.Positive(t, rep.TasksPerSecond)
	require.Positive(t, rep.ElapsedSeconds)
	require.Positive(t, rep.Submit.LatencyMS.P50)
	require.GreaterOrEqual(t, rep.Submit.LatencyMS.P99, rep.Submit.LatencyMS.P50)
	require.GreaterOrEqual(t, rep.Submit.LatencyMS.Max, rep.Submit.LatencyMS.P99)
	// Each task is at least two durable writes (its insert and its end),
	// grouped into fewer commits.
	require.GreaterOrEqual(t, rep.Store.Writes, int64(2*tasks))
	require.Positive(t, rep.Store.Commits)
	require.Less(t, rep.Store.Commits, rep.Store.Writes)
	require.Positive(t, rep.Store.WriterBusy)
	// The verdict follows from the figures the report shows, whatever
	// the rate of this run.
	require.Positive(t, rep.Target.TasksPerSecond)
	require.Equal(t, rep.TasksPerSecond >= rep.Target.TasksPerSecond && rep.Lost == 0 && rep.Failed == 0 && rep.Unfinished == 0,
		rep.Target.Passed, "passed is the target met with nothing lost, failed or unfinished")

	// The daemon agrees: exactly these tasks, all completed echoes.
	all := d.MustListTasks("")
	require.Len(t, all, tasks)
	for _, tk := range all {
		require.Equal(t, "completed", tk.Status)
		require.Equal(t, "echo", tk.Function)
		require.JSONEq(t, `{"hello":"world"}`, string(tk.Output))
	}
}

func TestBenchLoadUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{name: "zero tasks", args: []string{"bench", "load", "--tasks", "0"}, code: 2},
		{name: "zero clients", args: []string{"bench", "load", "--clients", "0"}, code: 2},
		{name: "negative workers", args: []string{"bench", "load", "--workers", "-1"}, code: 2},
		{name: "bad synchronous", args: []string{"bench", "load", "--synchronous", "OFF"}, code: 2},
		{name: "extra argument", args: []string{"bench", "load", "now"}, code: 2},
		{name: "missing module", args: []string{"bench", "load", "--tasks", "1", "--wasm", filepath.Join(t.TempDir(), "none.wasm")}, code: 1},
		{name: "help", args: []string{"bench", "load", "--help"}, code: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := MustRunBench(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
		})
	}
}

// BenchmarkLoadVersusRiver measures weft and River on the same work in the
// same run, alternating which goes first: weft's tasks/s (as
// BenchmarkLoadEcho) and River's jobs/s for 10,000 no-op jobs inserted one
// by one from 32 goroutines into SQLite with WAL and synchronous=FULL, in
// two configurations: River's defaults with 100 workers, and tuned for
// throughput (1,000 workers, 2 ms fetch cooldown). It reports both ratios.
func BenchmarkLoadVersusRiver(b *testing.B) {
	cfg := benchLoadConfig(b)
	rivers := []struct {
		name string
		cfg  riverLoadConfig
		jobs float64
		secs float64
	}{
		{name: "river", cfg: riverLoadConfig{Jobs: cfg.Tasks, Clients: cfg.Clients, Workers: 100}},
		{name: "river_tuned", cfg: riverLoadConfig{Jobs: cfg.Tasks, Clients: cfg.Clients, Workers: 1000, FetchCooldown: 2 * time.Millisecond}},
	}
	var weftTasks, weftSeconds float64
	round := 0
	for b.Loop() {
		runWeft := func() {
			rep := mustRunLoad(b, cfg)
			weftTasks += float64(rep.Completed)
			weftSeconds += rep.ElapsedSeconds
			b.Logf("round %d: weft %.0f tasks/s, submit p50 %.1f ms p99 %.1f ms, %.1f writes per commit, writer busy %.2f",
				round, rep.TasksPerSecond, rep.Submit.LatencyMS.P50, rep.Submit.LatencyMS.P99, rep.Store.WritesPerCommit, rep.Store.WriterBusy)
		}
		runRivers := func() {
			for i := range rivers {
				r := &rivers[i]
				res, err := runRiverLoad(b.Context(), b.TempDir(), r.cfg)
				if err != nil {
					b.Fatal(err)
				}
				r.jobs += float64(r.cfg.Jobs)
				r.secs += res.Elapsed.Seconds()
				b.Logf("round %d: %s %.0f jobs/s, insert p50 %.1f ms p99 %.1f ms",
					round, r.name, res.JobsPerSecond, res.InsertLatency.P50, res.InsertLatency.P99)
			}
		}
		if round%2 == 0 {
			runWeft()
			runRivers()
		} else {
			runRivers()
			runWeft()
		}
		round++
	}
	weft := weftTasks / weftSeconds
	b.ReportMetric(weft, "weft_tasks/s")
	for _, r := range rivers {
		b.ReportMetric(r.jobs/r.secs, r.name+"_jobs/s")
		b.ReportMetric(weft/(r.jobs/r.secs), "ratio_"+r.name)
	}
	b.ReportMetric(0, "ns/op")
}

// benchLoadConfig is the load of the benchmarks (a tenth under -short).
func benchLoadConfig(tb testing.TB) loadbench.Config {
	// A test binary cannot be the compile child: the real weft binary is.
	cfg := loadbench.Config{Wasm: loadTestWasm, CompileBin: MustBuildWeft(tb)}
	if testing.Short() {
		cfg.Tasks = loadbench.DefaultTasks / 10
	}
	return cfg
}

func mustRunLoad(tb testing.TB, cfg loadbench.Config) *loadbench.Report {
	tb.Helper()
	rep, err := loadbench.Run(tb.Context(), cfg, io.Discard)
	if err != nil {
		tb.Fatal(err)
	}
	if !rep.OK() || rep.Completed != rep.Tasks {
		tb.Fatalf("load run: %d completed of %d, %d lost, %d failed, %d unfinished, %d submit errors",
			rep.Completed, rep.Tasks, rep.Lost, rep.Failed, rep.Unfinished, rep.Submit.Errors)
	}
	return rep
}
