//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime/httpapi/client"
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
	addrFileBefore, err := os.ReadFile(filepath.Join(d.DataDir, daemon.AddrFile))
	require.NoError(t, err)

	want := fmt.Sprintf("weft: data directory %s is in use by weft pid %d (http://%s), started ", d.DataDir, d.cmd.Process.Pid, d.Addr)
	for _, addr := range []string{"127.0.0.1:0", d.Addr} {
		res := serveOnce(t, d, addr)
		require.Equal(t, 1, res.Code, "second weft serve at %s: stderr %q", addr, res.Stderr)
		require.Contains(t, res.Stderr, want, "second weft serve at %s", addr)
		require.NotContains(t, res.Stdout, "listening", "second weft serve at %s", addr)

		requireUntouched(t, d, failTask.ID)
		requireUntouched(t, d, retryTask.ID)
		addrFileNow, err := os.ReadFile(filepath.Join(d.DataDir, daemon.AddrFile))
		require.NoError(t, err)
		require.Equal(t, string(addrFileBefore), string(addrFileNow), "weft.addr after a second serve at %s", addr)
	}

	var lock daemon.LockHolder
	data, err := os.ReadFile(filepath.Join(d.DataDir, daemon.LockFile))
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
	_, err = os.Stat(filepath.Join(d.DataDir, daemon.LockFile))
	require.NoError(t, err, "the lock file stays after SIGKILL")
	d.Restart()
	require.Equal(t, "failed", d.MustWaitStatus(failTask.ID, 30*time.Second, "failed").Status)
	data, err = os.ReadFile(filepath.Join(d.DataDir, daemon.LockFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &lock))
	require.Equal(t, d.cmd.Process.Pid, lock.PID, "the restarted daemon holds the lock")
}

// logFloodWasm is the hand-assembled log flood guest of the host's tests:
// its _initialize and its activity "flood" each log 5,000 lines of 8 KiB.
var logFloodWasm = filepath.Join("..", "..", "host", "testdata", "logflood.wasm")

// floodDropRe matches a drop report of the daemon's log.
var floodDropRe = regexp.MustCompile(`plugin log lines dropped:.* dropped_lines=(\d+) dropped_bytes=(\d+)`)

// floodCount counts, in a daemon log, the flood lines that logger name
// wrote and the lines its drop reports counted.
func floodCount(log, name string) (written, dropped int) {
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, " "+name+": ") {
			continue
		}
		if m := floodDropRe.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			dropped += n
		} else if strings.Contains(line, "xxxx") {
			written++
		}
	}
	return written, dropped
}

// TestE2EPluginLogFlood deploys a module whose _initialize logs 40 MiB in
// a tight loop and runs its activity that logs 40 MiB more. The daemon's
// log grows by less than 1 MiB and says how many lines it dropped (every
// line is written or counted); the deploy succeeds, the task completes,
// and its event log holds the first 1,000 lines and the count of the
// others.
func TestE2EPluginLogFlood(t *testing.T) {
	d := MustRunMain(t)
	logPath := filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", d.starts))
	readLog := func() string {
		data, err := os.ReadFile(logPath)
		require.NoError(t, err)
		return string(data)
	}
	before := readLog()

	wasm, err := os.ReadFile(logFloodWasm)
	require.NoError(t, err)
	var mod struct {
		Digest string `json:"digest"`
	}
	require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/logflood", wasm, &mod))
	req := taskRequest(t, "flood", `null`, "")
	req["module"] = "logflood"
	var task client.Task
	require.Equal(t, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", req, &task))
	d.MustWaitStatus(task.ID, 60*time.Second, "completed")

	logs, dropped := 0, 0
	for _, ev := range d.MustEvents(task.ID) {
		if ev.Type != "task.log" {
			continue
		}
		var p struct {
			Message string `json:"message"`
			Dropped int    `json:"dropped"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &p))
		if p.Dropped > 0 {
			dropped += p.Dropped
		} else {
			logs++
		}
	}
	require.Equal(t, 1000, logs, "task.log events")
	require.Equal(t, 4000, dropped, "lines counted as dropped in the task's log")

	grown := strings.TrimPrefix(readLog(), before)
	require.Less(t, len(grown), 1<<20, "the daemon's log grew by %d bytes", len(grown))
	written, counted := floodCount(grown, "weft.host.logflood")
	require.Equal(t, 5000, written+counted, "the call's lines: %d written, %d counted as dropped", written, counted)
	require.Positive(t, counted)
	initLogger := "weft.host." + strings.TrimPrefix(mod.Digest, "sha256:")[:12]
	written, counted = floodCount(grown, initLogger)
	require.Positive(t, counted, "_initialize's lines counted as dropped")
	require.Zero(t, (written+counted)%5000, "_initialize's lines: %d written, %d counted as dropped", written, counted)
	require.Contains(t, grown, "task_id="+task.ID)
}

// readyz returns the status code and body of GET /readyz.
func readyz(t *testing.T, d *Daemon) (int, string) {
	t.Helper()
	return getText(t, d, "/readyz")
}

// getText returns the status code and body of GET path, without a token.
func getText(t *testing.T, d *Daemon, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(d.URL(path))
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b.String()
}

// TestE2EHealAfterFullDisk fills the daemon's "disk" while a task runs:
// RLIMIT_FSIZE 0 on the daemon's process makes every file write fail
// with EFBIG, so the task's completion commit fails. The daemon survives,
// answers /readyz with 503 while the store refuses writes, and once the
// limit is lifted the task ends completed within seconds, without a
// restart, its log gapless with one terminal event.
func TestE2EHealAfterFullDisk(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	task := d.MustSubmit("sleep", `{"ms":1500}`, "")
	d.MustWaitStatus(task.ID, 30*time.Second, "running")
	code, _ := readyz(t, d)
	require.Equal(t, http.StatusOK, code)

	pid := d.cmd.Process.Pid
	var old unix.Rlimit
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old))
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: old.Max}, nil))
	lifted := false
	lift := func() {
		if !lifted {
			lifted = true
			_ = unix.Prlimit(pid, unix.RLIMIT_FSIZE, &old, nil)
		}
	}
	defer lift()

	// The sleep ends and its completion cannot be written.
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := readyz(t, d)
		if code == http.StatusServiceUnavailable {
			require.Contains(t, body, "the store refuses writes")
			break
		}
		require.Equal(t, http.StatusOK, code, body)
		require.True(t, time.Now().Before(deadline), "/readyz still 200 while the disk is full")
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, "running", d.MustTask(task.ID).Status, "nothing is written while the disk is full")
	_, metrics := getText(t, d, "/metrics")
	require.Contains(t, metrics, "\nweft_store_retry_tasks 1\n")

	lift()
	done := d.MustWaitStatus(task.ID, 15*time.Second, "completed")
	require.Equal(t, 1, done.Attempt)
	require.Eventually(t, func() bool {
		code, _ := readyz(t, d)
		return code == http.StatusOK
	}, 15*time.Second, 20*time.Millisecond, "/readyz once writes succeed again")
	require.True(t, d.running(), "the same daemon, no restart")
	_, metrics = getText(t, d, "/metrics")
	require.Contains(t, metrics, "\nweft_store_retry_tasks 0\n")
	require.Contains(t, metrics, "\nweft_store_retry_left_total 0\n")

	evs := d.MustEvents(task.ID)
	terminal := 0
	for i, ev := range evs {
		require.Equal(t, int64(i), ev.SequenceNumber, "gapless log")
		if ev.Type == "response.completed" || ev.Type == "response.failed" || ev.Type == "response.cancelled" {
			terminal++
		}
	}
	require.Equal(t, 1, terminal)
	require.Equal(t, "response.completed", evs[len(evs)-1].Type)
}
