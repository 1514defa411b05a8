package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
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
		var resp client.Response
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
		var stdout, stderr syncBuffer
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

// TestE2ECLIFlagsAndHelp checks weft run's retry and memory flags, version,
// "did you mean", the missing-token message and shell completion of task
// ids, module names and functions, against the real daemon.
func TestE2ECLIFlagsAndHelp(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()

	t.Run("RetryFlags", func(t *testing.T) {
		res := d.CLI("run", "testkit", "fail", "--input", `{"type":"flaky","message":"again"}`,
			"--retry-attempts", "3", "--retry-initial-interval", "10ms", "--retry-backoff", "1", "--json")
		require.Equal(t, 1, res.Code, res.Stderr)
		var resp client.Response
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &resp))
		require.Equal(t, 3, d.MustTask(resp.TaskID).Attempt)

		res = d.CLI("run", "testkit", "fail", "--input", `{"type":"fatal","message":"no"}`,
			"--retry-attempts", "3", "--retry-initial-interval", "10ms", "--retry-non-retryable", "fatal", "--json")
		require.Equal(t, 1, res.Code, res.Stderr)
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &resp))
		require.Equal(t, 1, d.MustTask(resp.TaskID).Attempt)

		for _, bad := range [][]string{{"--retry-attempts", "0"}, {"--retry-backoff", "0.5"}, {"--retry-initial-interval", "10"}} {
			res := d.CLI(append([]string{"run", "testkit", "echo"}, bad...)...)
			require.Equal(t, 2, res.Code, "%v: %s", bad, res.Stderr)
		}
	})

	t.Run("MemoryLimit", func(t *testing.T) {
		res := d.CLI("run", "testkit", "grow", "--memory-limit", "16MiB", "--json")
		require.Equal(t, 1, res.Code, res.Stderr)
		var resp struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &resp))
		require.Equal(t, "memory_limit", resp.Error.Code)
		for _, bad := range []string{"lots", "-1MiB", "0", "1.5GiB"} {
			res := d.CLI("run", "testkit", "echo", "--memory-limit", bad)
			require.Equal(t, 2, res.Code, "--memory-limit %s: %s", bad, res.Stderr)
			require.Contains(t, res.Stderr, "invalid size")
		}
	})

	t.Run("Version", func(t *testing.T) {
		out := d.MustCLI("version")
		require.Contains(t, out, "wazero   v")
		require.Contains(t, out, "sqlite   3.")
		require.Contains(t, out, "go       go1.")
		var v versionInfo
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("version", "--json")), &v))
		require.NotEmpty(t, v.Wazero)
		require.True(t, strings.HasPrefix(d.MustCLI("--version"), "weft "))
	})

	t.Run("DidYouMean", func(t *testing.T) {
		res := d.CLI("tsks", "list")
		require.Equal(t, 2, res.Code)
		require.Contains(t, res.Stderr, `did you mean "tasks"?`)
		res = d.CLI("clients", "pari")
		require.Equal(t, 2, res.Code)
		require.Contains(t, res.Stderr, `did you mean "pair"?`)
	})

	t.Run("NoToken", func(t *testing.T) {
		empty := t.TempDir()
		res := d.CLI("tasks", "list", "--data", empty)
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, empty+"/admin.token not found")
		require.Contains(t, res.Stderr, "--token or WEFT_TOKEN")
		require.NotContains(t, res.Stderr, "missing_credential")
	})

	t.Run("Completion", func(t *testing.T) {
		id := strings.TrimSpace(d.MustCLI("run", "testkit", "echo", "--input", "1", "--background"))
		out := d.MustCLI("__complete", "tasks", "get", "")
		require.Contains(t, out, id+"\ttestkit.echo ")
		out = d.MustCLI("__complete", "tasks", "get", id[:len(id)-3])
		require.Contains(t, out, id)
		out = d.MustCLI("__complete", "run", "")
		require.Contains(t, out, "testkit\tsha256:")
		out = d.MustCLI("__complete", "run", "testkit", "ec")
		require.Contains(t, out, "echo\tactivity")
		require.NotContains(t, out, "sleep")
		out = d.MustCLI("__complete", "modules", "rm", "")
		require.Contains(t, out, "testkit")
		// Nothing to reach: no completions, no error.
		res := d.CLI("__complete", "tasks", "get", "", "--addr", "127.0.0.1:1")
		require.Equal(t, 0, res.Code)
		require.NotContains(t, res.Stdout, "task_")
	})
}

// syncBuffer is a bytes.Buffer safe for a writer process and a reading test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freeAddr returns a loopback address with a port free at the time of the
// call, for a daemon that must come back on the same address.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	addr := ln.Addr().String()
	require.NoError(tb, ln.Close())
	return addr
}

// TestE2ECLIWatchAndGet checks the readable views of a workflow against the
// real daemon: weft tasks watch says what the workflow is at and survives a
// daemon restart (SIGKILL) without losing or repeating an event; weft tasks
// get summarizes the task; weft tasks logs prints its log lines.
func TestE2ECLIWatchAndGet(t *testing.T) {
	d := MustRunMain(t, "--addr", freeAddr(t))
	d.MustDeployPipeline("pipeline", pipelineModules[0].path)
	id := d.MustStartPipeline("pipeline", `{"service":"web","version":"2.1.0"}`, "--on-restart", "resume")

	watch := exec.Command(d.Bin, "tasks", "watch", id)
	watch.Env = append(os.Environ(), "WEFT_ADDR="+d.Addr, "WEFT_DATA="+d.DataDir)
	var stdout, stderr syncBuffer
	watch.Stdout, watch.Stderr = &stdout, &stderr
	require.NoError(t, watch.Start())
	t.Cleanup(func() { _ = watch.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), `waiting for signal "approve"`) },
		30*time.Second, 20*time.Millisecond, "stdout %q", stdout.String())

	d.Kill()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "lost the event stream of "+id) },
		30*time.Second, 20*time.Millisecond, "stderr %q", stderr.String())
	d.Restart()
	d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":true,"by":"carol"}`)
	require.NoError(t, watch.Wait(), "stderr %q", stderr.String())
	require.Contains(t, stderr.String(), "reconnected to the event stream of "+id)

	out := stdout.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Equal(t, "task "+id+" completed", lines[len(lines)-1])
	for i, line := range lines[:len(lines)-1] {
		require.Regexp(t, fmt.Sprintf(`^\s*%d\s+[a-z_.]+\s+\d\d:\d\d:\d\d\.\d{3}  \S`, i), line, "every event once, in order:\n%s", out)
	}
	for _, want := range []string{
		"activity pipeline.build scheduled as task_",
		"activity pipeline.build (task_",
		`signal "approve" received`,
		"log info  approved by=carol",
	} {
		require.Contains(t, out, want)
	}
	events := d.MustEvents(id)
	require.Len(t, lines, len(events)+1)

	// get: a summary for a person; --json: the document.
	sum := d.MustCLI("tasks", "get", id)
	for _, want := range []string{
		"task       " + id,
		"runs       pipeline.deploy (workflow), module sha256:",
		"status     completed",
		"attempt    1   on restart: resume",
		`input      {"service":"web","version":"2.1.0"}`,
		`"approved_by":"carol"`,
		fmt.Sprintf("events     %d, the last 10:", len(events)),
		"response.completed",
		"log        the last ",
		"info  approved by=carol",
	} {
		require.Contains(t, sum, want)
	}
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(d.MustCLI("tasks", "get", id, "--json")), &doc))
	require.Equal(t, id, doc["id"])

	// logs: every task.log line, plain and as JSON, and --follow to the end.
	logs := d.MustCLI("tasks", "logs", id)
	require.Regexp(t, `(?m)^\d\d:\d\d:\d\d\.\d{3}  info  waiting for approval artifact=web-2\.1\.0\.tar\.gz$`, logs)
	require.Contains(t, logs, "approved by=carol")
	var n int
	for _, line := range strings.Split(strings.TrimSpace(d.MustCLI("tasks", "logs", id, "--json")), "\n") {
		var e client.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		require.Equal(t, "task.log", e.Type)
		n++
	}
	require.Equal(t, strings.Count(logs, "\n"), n)

	id2 := d.MustStartPipeline("pipeline", `{"service":"web","version":"2.2.0","approval_timeout_ms":300}`)
	res := d.CLI("tasks", "logs", id2, "--follow")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "waiting for approval artifact=web-2.2.0.tar.gz")
	require.Equal(t, "failed", d.MustTask(id2).Status, "--follow returns once the task ended")
}

// TestE2ETaskListFilters checks GET /v1/tasks's module, function, status
// and parent filters through weft tasks list, over the real daemon.
func TestE2ETaskListFilters(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	d.MustDeployPipeline("pipeline", pipelineModules[0].path)
	echo := strings.TrimSpace(d.MustCLI("run", "testkit", "echo", "--input", "1", "--background"))
	fail := strings.TrimSpace(d.MustCLI("run", "testkit", "fail", "--input", `{"type":"x","message":"y","non_retryable":true}`, "--background"))
	flow := d.MustStartPipeline("pipeline", `{"service":"web","version":"3.0.0","approval_timeout_ms":100}`)
	d.MustWaitStatus(echo, 30*time.Second, "completed")
	d.MustWaitStatus(fail, 30*time.Second, "failed")
	d.MustWaitStatus(flow, 30*time.Second, "failed")

	ids := func(args ...string) []string {
		var page struct {
			Data []client.Task `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI(append([]string{"tasks", "list", "--json"}, args...)...)), &page))
		var out []string
		for _, task := range page.Data {
			out = append(out, task.ID)
		}
		return out
	}
	require.Equal(t, []string{fail, echo}, ids("--module", "testkit"))
	require.Equal(t, []string{echo}, ids("--module", "testkit", "--function", "echo"))
	require.Equal(t, []string{fail}, ids("--module", "testkit", "--status", "failed"))
	require.Equal(t, []string{flow}, ids("--function", "deploy"))
	children := ids("--parent", flow)
	require.Len(t, children, 2, "build and test ran before the approval timed out")
	for _, id := range children {
		require.NotEqual(t, flow, id)
	}
	require.Empty(t, ids("--module", "nosuch"))

	res := d.CLI("tasks", "list", "--parent", "not-a-task-id")
	require.Equal(t, 1, res.Code)
	require.Contains(t, res.Stderr, "parent_task_id")
	res = d.CLI("tasks", "list", "--module", strings.Repeat("m", 300))
	require.Equal(t, 1, res.Code)
	require.Contains(t, res.Stderr, "module")
}

// TestE2EModuleInventory checks what a deploy says over the real daemon:
// the digest, the version and the functions; the same bytes again answer
// 200 unchanged with the same version, other bytes a new version.
func TestE2EModuleInventory(t *testing.T) {
	d := MustRunMain(t)
	out := d.MustCLI("deploy", testkitWasm)
	require.Regexp(t, `^deployed testkit sha256:[0-9a-f]{64} \(\d+ bytes, version 1\)\n`, out)
	require.Contains(t, out, "  activity  echo\n")

	out = d.MustCLI("deploy", testkitWasm)
	require.Regexp(t, `^unchanged: testkit sha256:[0-9a-f]{64} \(\d+ bytes, version 1\)\n`, out)
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(t, err)
	var doc struct {
		Version   int  `json:"version"`
		Unchanged bool `json:"unchanged"`
	}
	require.Equal(t, http.StatusOK, d.MustDo(http.MethodPut, "/v1/modules/testkit", wasm, &doc))
	require.True(t, doc.Unchanged)
	require.Equal(t, 1, doc.Version)

	// Other bytes under the same name: a new version, 201.
	other, err := os.ReadFile(pipelineModules[0].path)
	require.NoError(t, err)
	doc.Unchanged = false
	require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/testkit", other, &doc))
	require.False(t, doc.Unchanged)
	require.Equal(t, 2, doc.Version)
	// Back to the first bytes: they are not the latest version, so a new one.
	require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/testkit", wasm, &doc))
	require.Equal(t, 3, doc.Version)

	list := d.MustCLI("modules", "list")
	require.Regexp(t, `(?m)^testkit\s+sha256:[0-9a-f]{64}\s+\d+\s+\S*echo,`, list)
}
