package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestE2ECLIRun checks the foreground weft run against the real daemon: the
// exit status of a failed task with --json, durations without a unit, the
// plugin's error type in the message, the task id on stderr at once, and
// what Ctrl-C says.
func TestE2ECLIRun(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	failInput := `{"type":"invalid_name","message":"name is empty","non_retryable":true}`

	t.Run("JSONFailedTaskExits1", func(t *testing.T) {
		res := d.CLI("run", "testkit", "fail", "--input", failInput, "--json")
		require.Equal(t, 1, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
		var resp struct {
			Status string `json:"status"`
			Error  struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &resp), res.Stdout)
		require.Equal(t, "failed", resp.Status)
		require.Equal(t, "invalid_name", resp.Error.Type)
	})

	t.Run("ErrorTypeInMessage", func(t *testing.T) {
		res := d.CLI("run", "testkit", "fail", "--input", failInput)
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "failed: invalid_name: name is empty")
		require.NotContains(t, res.Stderr, "application_error")
	})

	t.Run("DurationNeedsUnit", func(t *testing.T) {
		before := len(d.MustListTasks(""))
		for _, bad := range []string{"5", "1.5", "-3s", "0s", "soon"} {
			res := d.CLI("run", "testkit", "echo", "--timeout", bad)
			require.Equal(t, 2, res.Code, "--timeout %s: stderr %q", bad, res.Stderr)
			require.Contains(t, res.Stderr, "duration")
		}
		res := d.CLI("run", "testkit", "echo", "--timeout", "5")
		require.Contains(t, res.Stderr, "needs a unit")
		require.Len(t, d.MustListTasks(""), before, "a usage error must create no task")
		require.JSONEq(t, `1`, d.MustCLI("run", "testkit", "echo", "--input", "1", "--timeout", "30s"))
	})

	t.Run("TaskIDOnStderr", func(t *testing.T) {
		res := d.CLI("run", "testkit", "echo", "--input", "2")
		require.Equal(t, 0, res.Code)
		line, _, _ := strings.Cut(res.Stderr, "\n")
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "stderr %q", res.Stderr)
		require.Equal(t, "task", fields[0])
		require.Equal(t, "completed", d.MustTask(fields[1]).Status)
	})

	t.Run("InterruptDetaches", func(t *testing.T) {
		cmd := exec.Command(d.Bin, "run", "testkit", "sleep", "--input", `{"ms":60000}`)
		cmd.Env = append(os.Environ(), "WEFT_ADDR="+d.Addr, "WEFT_DATA="+d.DataDir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		var id string
		require.Eventually(t, func() bool {
			for _, task := range d.MustListTasks("") {
				if task.Function == "sleep" && task.Status == "running" {
					id = task.ID
					return true
				}
			}
			return false
		}, 30*time.Second, 20*time.Millisecond)
		// The id is on stderr before the task ends.
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), id) }, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 130, ee.ExitCode())
		require.Contains(t, stderr.String(), "detached from task "+id)
		require.Contains(t, stderr.String(), "weft tasks watch "+id)
		require.Contains(t, stderr.String(), "weft tasks cancel "+id)
		require.Equal(t, "running", d.MustTask(id).Status, "Ctrl-C must not touch the task")
		d.MustCLI("tasks", "cancel", id)
	})
}
