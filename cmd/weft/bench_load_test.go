//go:build unix

package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

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
