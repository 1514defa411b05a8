package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireJSONLines requires every line of log to be a JSON object and
// returns them.
func requireJSONLines(tb testing.TB, log string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		var rec map[string]any
		require.NoError(tb, json.Unmarshal([]byte(line), &rec), "line %d is not JSON: %q", i+1, line)
		out = append(out, rec)
	}
	return out
}

// TestE2ELogFormatJSON checks that with --log-format json the real daemon
// writes nothing but JSON to standard error: at start, with plugin lines,
// a workflow's replays, a recovery, a graceful stop, and when it refuses
// to start on a data directory another daemon holds. Recovery says what it
// did in one line.
func TestE2ELogFormatJSON(t *testing.T) {
	d := MustRunMain(t, "--log-format", "json")
	d.MustDeployTestkit()
	d.MustDeployPipeline("pipeline", pipelineModules[0].path)
	d.MustCLI("run", "testkit", "echo", "--input", `"hi"`)
	require.Equal(t, 1, d.CLI("run", "testkit", "fail", "--input", `{"type":"x","message":"y","non_retryable":true}`, "--json").Code)
	id := d.MustStartPipeline("pipeline", `{"service":"web","version":"4.0.0"}`)
	d.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)
	sleeper := d.MustSubmit("sleep", `{"ms":60000}`, "retry")
	d.MustWaitStatus(sleeper.ID, 30*time.Second, "running")

	// A second daemon on the same directory refuses, in JSON.
	second := exec.Command(d.Bin, "serve", "--data", d.DataDir, "--addr", "127.0.0.1:0", "--log-format", "json")
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err := second.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	recs := requireJSONLines(t, stderr.String())
	require.Contains(t, recs[len(recs)-1]["error"], "is in use by weft pid")

	d.Kill()
	d.Restart()
	d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":true,"by":"json"}`)
	d.MustWaitStatus(id, 30*time.Second, "completed")
	_, err = d.Stop()
	require.NoError(t, err)

	plugin := map[string]int{} // plugin lines of the workflow, over both runs
	for start := 1; start <= 2; start++ {
		log, err := os.ReadFile(filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", start)))
		require.NoError(t, err)
		recs := requireJSONLines(t, string(log))
		recovered := 0
		for _, rec := range recs {
			if rec["task_id"] == id {
				msg, _ := rec["@message"].(string)
				plugin[msg]++
			}
			if rec["@message"] == "recovered tasks" {
				recovered++
				require.Equal(t, float64(1), rec["requeued"], "the sleep (retry) was requeued: %v", rec)
			}
		}
		if start == 2 {
			require.Equal(t, 1, recovered, "the recovery is logged once")
		}
	}
	// Each plugin line once: not under two loggers, and not again when
	// the workflow replays its journal after the restart and the signal.
	require.Equal(t, map[string]int{
		"waiting for approval artifact=web-4.0.0.tar.gz": 1,
		"approved by=json": 1,
	}, plugin)
}
