package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// TestE2EShutdownGrace stops the real daemon with SIGTERM under a grace
// period: a call that ends within it completes, a task created meanwhile is
// accepted and waits, a call that outlasts it is interrupted, named in the
// log and recovered by its policy at the next start.
func TestE2EShutdownGrace(t *testing.T) {
	d := MustRunMain(t, "--shutdown-grace", "2s")
	d.MustDeployTestkit()
	short := d.MustSubmit("sleep", `{"ms":600}`, "fail")
	long := d.MustSubmit("sleep", `{"ms":60000}`, "fail")
	d.MustWaitStatus(short.ID, 30*time.Second, "running")
	d.MustWaitStatus(long.ID, 30*time.Second, "running")

	stopped := make(chan time.Duration, 1)
	go func() {
		took, err := d.Stop()
		if err != nil {
			t.Errorf("weft serve exits with status 0 on SIGTERM: %v", err)
		}
		stopped <- took
	}()
	// The API still answers during the grace; a new task waits.
	logPath := filepath.Join(d.logDir, "daemon-1.log")
	require.Eventually(t, func() bool {
		log, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(log), "shutting down")
	}, 10*time.Second, 10*time.Millisecond)
	var late client.Task
	require.Eventually(t, func() bool {
		code, err := d.Do(t.Context(), http.MethodPost, "/v1/tasks", taskRequest(t, "echo", `"late"`, "retry"), &late)
		return err == nil && code == http.StatusAccepted
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "queued", late.Status)
	took := <-stopped
	require.GreaterOrEqual(t, took, 2*time.Second, "the long call kept the daemon for the grace period")
	require.Less(t, took, 12*time.Second, "then it stops within 10 s")

	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "shutdown interrupts running plugin calls")
	require.Contains(t, string(log), long.ID)
	require.NotContains(t, interruptedLine(string(log)), short.ID)

	atStop := MustReadStore(t, d.DataDir)
	require.Equal(t, "completed", string(atStop[short.ID].Status), "the short call finished within the grace")
	require.Equal(t, "running", string(atStop[long.ID].Status), "the long call was left to recovery")
	require.Equal(t, "queued", string(atStop[late.ID].Status))

	d.Restart()
	require.Equal(t, "failed", d.MustWaitStatus(long.ID, 30*time.Second, "failed").Status)
	require.Equal(t, "server_restarted", d.MustTask(long.ID).Error.Code)
	require.Equal(t, "completed", d.MustWaitStatus(late.ID, 30*time.Second, "completed").Status)
}

// interruptedLine returns the log line that names the interrupted tasks.
func interruptedLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "shutdown interrupts running plugin calls") {
			return line
		}
	}
	return ""
}
