//go:build unix

package main

import (
	"bytes"
	"context"
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

// serveOnce runs a second `weft serve` on d's data directory at addr and
// returns its exit status and stderr; it must exit on its own.
func serveOnce(t *testing.T, d *Daemon, addr string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Bin, "serve", "--data", d.DataDir, "--addr", addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "the second weft serve did not exit: stderr %q", stderr.String())
	res := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return res
}

// requireUntouched checks that task id still runs its first attempt and
// that its log has no recovery and no second start.
func requireUntouched(t *testing.T, d *Daemon, id string) {
	t.Helper()
	task := d.MustTask(id)
	require.Equal(t, "running", task.Status, "task %s", id)
	require.Equal(t, 1, task.Attempt, "task %s", id)
	running := 0
	for _, ev := range d.MustEvents(id) {
		require.NotEqual(t, "task.recovered", ev.Type, "task %s was recovered by a second daemon", id)
		if strings.Contains(string(ev.Data), `"status":"running"`) {
			running++
		}
	}
	require.LessOrEqual(t, running, 1, "task %s started more than once", id)
}

// TestE2EDataDirLock runs a second `weft serve` on the data directory of a
// running daemon, once on a free port and once on the first daemon's own
// address: each exits 1 naming the holder before it reads or recovers
// anything, and the first daemon's fail and retry tasks, its weft.addr and
// its service go on untouched. After the first daemon is killed (its lock
// file stays), the next start takes the lock.
func TestE2EDataDirLock(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	failTask := d.MustSubmit("sleep", `{"ms":600000}`, "fail")
	retryTask := d.MustSubmit("sleep", `{"ms":600000}`, "retry")
	d.MustWaitStatus(failTask.ID, 30*time.Second, "running")
	d.MustWaitStatus(retryTask.ID, 30*time.Second, "running")
	addrFileBefore, err := os.ReadFile(filepath.Join(d.DataDir, addrFile))
	require.NoError(t, err)

	want := fmt.Sprintf("weft: data directory %s is in use by weft pid %d (http://%s), started ", d.DataDir, d.cmd.Process.Pid, d.Addr)
	for _, addr := range []string{"127.0.0.1:0", d.Addr} {
		res := serveOnce(t, d, addr)
		require.Equal(t, 1, res.Code, "second weft serve at %s: stderr %q", addr, res.Stderr)
		require.Contains(t, res.Stderr, want, "second weft serve at %s", addr)
		require.NotContains(t, res.Stdout, "listening", "second weft serve at %s", addr)

		requireUntouched(t, d, failTask.ID)
		requireUntouched(t, d, retryTask.ID)
		addrFileNow, err := os.ReadFile(filepath.Join(d.DataDir, addrFile))
		require.NoError(t, err)
		require.Equal(t, string(addrFileBefore), string(addrFileNow), "weft.addr after a second serve at %s", addr)
	}

	var lock lockHolder
	data, err := os.ReadFile(filepath.Join(d.DataDir, lockFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &lock), "lock file %q", data)
	require.Equal(t, d.cmd.Process.Pid, lock.PID)
	require.Equal(t, d.Addr, lock.Addr)
	require.False(t, lock.StartedAt.IsZero())

	// A read-only preflight runs beside the daemon: it takes no lock.
	pre := d.CLI("preflight", "--data", d.DataDir)
	require.Equal(t, 0, pre.Code, "preflight beside a running daemon: %s %s", pre.Stdout, pre.Stderr)

	// SIGKILL leaves the lock file behind; the kernel released the lock.
	d.Kill()
	_, err = os.Stat(filepath.Join(d.DataDir, lockFile))
	require.NoError(t, err, "the lock file stays after SIGKILL")
	d.Restart()
	require.Equal(t, "failed", d.MustWaitStatus(failTask.ID, 30*time.Second, "failed").Status)
	data, err = os.ReadFile(filepath.Join(d.DataDir, lockFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &lock))
	require.Equal(t, d.cmd.Process.Pid, lock.PID, "the restarted daemon holds the lock")
}
