//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/runtime/modules"
)

// The deploy-pipeline example, in both SDK languages.
var pipelineModules = []struct {
	lang string
	path string
}{
	{lang: "Go", path: filepath.Join("..", "..", "examples", "deploy-pipeline", "go", "pipeline.wasm")},
	{lang: "C", path: filepath.Join("..", "..", "examples", "deploy-pipeline", "c", "pipeline.wasm")},
}

// MustDeployPipeline deploys a deploy-pipeline module under name with the
// CLI.
func (d *Daemon) MustDeployPipeline(name, path string) {
	d.tb.Helper()
	out := d.MustCLI("deploy", path, "--name", name)
	require.Contains(d.tb, out, "workflow  deploy")
}

// MustStartPipeline starts the workflow with the CLI (--background) and
// returns its task id.
func (d *Daemon) MustStartPipeline(module, input string, extra ...string) string {
	d.tb.Helper()
	args := append([]string{"run", module, "deploy", "--input", input, "--background"}, extra...)
	id := strings.TrimSpace(d.MustCLI(args...))
	require.Regexp(d.tb, taskIDPattern, id)
	return id
}

// MustWaitEvent polls the log of task id until it holds n events of type
// typ.
func (d *Daemon) MustWaitEvent(id, typ string, n int, timeout time.Duration) {
	d.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := 0
		for _, ev := range d.MustEvents(id) {
			if ev.Type == typ {
				c++
			}
		}
		if c >= n {
			return
		}
		if time.Now().After(deadline) {
			d.tb.Fatalf("task %s has %d %s events after %s, want %d", id, c, typ, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// children returns the child activity tasks of workflow id by function.
func (d *Daemon) children(id string) map[string][]client.Task {
	d.tb.Helper()
	out := map[string][]client.Task{}
	for _, ev := range d.MustEvents(id) {
		if ev.Type != "activity.scheduled" {
			continue
		}
		var p struct {
			TaskID   string `json:"task_id"`
			Function string `json:"function"`
		}
		require.NoError(d.tb, json.Unmarshal(ev.Data, &p))
		out[p.Function] = append(out[p.Function], d.MustTask(p.TaskID))
	}
	return out
}

// TestE2EDeployPipeline runs the deploy-pipeline example end to end through
// the CLI, in Go and in C: approved, timed out, rejected, rolled back.
func TestE2EDeployPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	d := MustRunMain(t)
	for _, m := range pipelineModules {
		name := "pipeline-" + strings.ToLower(m.lang)
		d.MustDeployPipeline(name, m.path)

		t.Run(m.lang+"/Approved", func(t *testing.T) {
			id := d.MustStartPipeline(name, `{"service":"web","version":"1.4.0"}`)
			d.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)
			require.Equal(t, "running", d.MustTask(id).Status, "a waiting workflow is running")
			out := d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":true,"by":"alice"}`)
			require.Equal(t, "signal approve sent to "+id+"\n", out)
			watch := d.MustCLI("tasks", "watch", id)
			for _, typ := range []string{"activity.scheduled", "activity.completed", "signal.waiting", "signal.received", "response.completed"} {
				require.Contains(t, watch, typ)
			}
			require.Contains(t, watch, "task "+id+" completed")
			task := d.MustTask(id)
			var got map[string]any
			require.NoError(t, json.Unmarshal(task.Output, &got))
			require.Equal(t, "alice", got["approved_by"])
			require.Equal(t, "web-1.4.0.tar.gz", got["artifact"])
			ch := d.children(id)
			for _, fn := range []string{"build", "test", "ship"} {
				require.Len(t, ch[fn], 1, fn)
				require.Equal(t, "completed", ch[fn][0].Status, fn)
				require.Equal(t, 1, ch[fn][0].Attempt, fn)
			}
			require.Empty(t, ch["rollback"])

			res := d.CLI("tasks", "signal", id, "approve")
			require.Equal(t, 1, res.Code)
			require.Contains(t, res.Stderr, "signal_target_finished", "a finished workflow gets a clear error")
		})

		t.Run(m.lang+"/ApprovalTimeout", func(t *testing.T) {
			id := d.MustStartPipeline(name, `{"service":"web","version":"1.4.1","approval_timeout_ms":200}`)
			res := d.CLI("tasks", "watch", id)
			require.Equal(t, 1, res.Code)
			require.Contains(t, res.Stdout, "signal.timed_out")
			task := d.MustTask(id)
			require.Equal(t, "failed", task.Status)
			require.Equal(t, "approval_timeout", task.Error.Type)
			require.Empty(t, d.children(id)["ship"], "nothing ships without approval")
		})

		t.Run(m.lang+"/Rejected", func(t *testing.T) {
			id := d.MustStartPipeline(name, `{"service":"web","version":"1.4.2"}`)
			// The signal may arrive before the workflow waits for it.
			d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":false,"by":"bob","comment":"not on a Friday"}`)
			res := d.CLI("tasks", "watch", id)
			require.Equal(t, 1, res.Code)
			task := d.MustTask(id)
			require.Equal(t, "rejected", task.Error.Type)
			require.Contains(t, task.Error.Message, "not on a Friday")
		})

		t.Run(m.lang+"/RolledBack", func(t *testing.T) {
			id := d.MustStartPipeline(name, `{"service":"web","version":"1.5.0","previous":"1.4.0","fail_deploy":true}`)
			d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":true,"by":"alice"}`)
			res := d.CLI("tasks", "watch", id)
			require.Equal(t, 1, res.Code)
			task := d.MustTask(id)
			require.Equal(t, "deploy_failed", task.Error.Type)
			require.Contains(t, task.Error.Message, "rolled back to 1.4.0")
			ch := d.children(id)
			require.Len(t, ch["ship"], 1)
			require.Equal(t, "failed", ch["ship"][0].Status)
			require.Equal(t, 5, ch["ship"][0].Attempt, "the deploy was tried five times")
			require.Len(t, ch["rollback"], 1)
			require.Equal(t, "completed", ch["rollback"][0].Status)
		})

		if m.lang == "Go" {
			t.Run(m.lang+"/CancelledWhileDeploying", func(t *testing.T) {
				id := d.MustStartPipeline(name, `{"service":"web","version":"1.6.0","previous":"1.5.0","fail_deploy":true}`)
				d.MustCLI("tasks", "signal", id, "approve", "--input", `{"approved":true,"by":"alice"}`)
				require.Eventually(t, func() bool {
					ship := d.children(id)["ship"]
					return len(ship) == 1 && ship[0].Attempt >= 2
				}, 30*time.Second, 10*time.Millisecond, "the deploy is retried")
				d.MustCLI("tasks", "cancel", id)
				task := d.MustWaitStatus(id, 30*time.Second, "cancelled", "failed", "completed")
				require.Equal(t, "cancelled", task.Status, "%+v", task.Error)
				ch := d.children(id)
				require.Equal(t, "cancelled", ch["ship"][0].Status, "the deploy got the cancel")
				require.Less(t, ch["ship"][0].Attempt, 5, "and was not retried to the end")
				require.Len(t, ch["rollback"], 1, "the saga rolled back once")
				require.Equal(t, "completed", ch["rollback"][0].Status)
			})
		}
	}

	t.Run("CheckReplay", func(t *testing.T) {
		id := d.MustStartPipeline("pipeline-c", `{"service":"api","version":"3.0.0"}`)
		d.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)
		// The Go version passes the build activity another input: it
		// would not replay the C workflow's journal.
		res := d.CLI("deploy", pipelineModules[0].path, "--name", "pipeline-c", "--check-replay")
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "replay_divergence")
		require.Contains(t, res.Stderr, id)
		require.Contains(t, res.Stderr, "step 1")
		var m client.Module
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("modules", "get", "pipeline-c", "--json")), &m))
		wasm, err := os.ReadFile(pipelineModules[1].path)
		require.NoError(t, err)
		require.Equal(t, modules.Digest(wasm), m.Digest, "nothing was deployed")
		// The same code replays its own journal.
		d.MustCLI("deploy", pipelineModules[1].path, "--name", "pipeline-c", "--check-replay")
		d.MustCLI("tasks", "cancel", id)
		require.Equal(t, "cancelled", d.MustTask(id).Status)
	})
}

// TestE2EWorkflowCrash kills the daemon with SIGKILL while deploy-pipeline
// workflows (on_restart=resume) are in flight, with approvals sent before
// and after the crash: every workflow completes, each activity ran to
// completion exactly once, and each workflow received its signal once.
func TestE2EWorkflowCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	d := MustRunMain(t)
	d.MustDeployPipeline("pipeline", pipelineModules[0].path)
	const n = 40
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var task client.Task
			code, err := d.Do(t.Context(), http.MethodPost, "/v1/tasks", map[string]any{
				"module": "pipeline", "function": "deploy", "on_restart": "resume",
				"input": mustEnvelopeJSON(t, fmt.Sprintf(`{"service":"svc%d","version":"1.0.%d"}`, i, i)),
			}, &task)
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, code)
			ids[i] = task.ID
		})
	}
	wg.Wait()
	approve := func(id string) {
		d.MustDo(http.MethodPost, "/v1/tasks/"+id+"/signals/approve", map[string]any{
			"input": mustEnvelopeJSON(t, `{"approved":true,"by":"ops"}`),
		}, nil)
	}
	// Half are approved before the crash, some of them before they even
	// wait for it.
	for _, id := range ids[:n/2] {
		approve(id)
	}
	d.Kill()
	d.Restart()
	for _, id := range ids[n/2:] {
		approve(id)
	}
	for _, id := range ids {
		task := d.MustWaitStatus(id, 60*time.Second, "completed", "failed")
		require.Equal(t, "completed", task.Status, "task %s: %+v", id, task.Error)
		received := 0
		for _, ev := range d.MustEvents(id) {
			if ev.Type == "signal.received" {
				received++
			}
		}
		require.Equal(t, 1, received, "task %s received its signal once", id)
		ch := d.children(id)
		require.Len(t, ch, 3, "task %s: build, test and ship", id)
		for fn, tasks := range ch {
			require.Len(t, tasks, 1, "task %s scheduled %s once", id, fn)
			require.Equal(t, "completed", tasks[0].Status)
			completions := 0
			for _, ev := range d.MustEvents(tasks[0].ID) {
				if ev.Type == "response.completed" {
					completions++
				}
			}
			require.Equal(t, 1, completions, "activity %s of %s ran to completion once", fn, id)
		}
	}
}

// TestE2EWorkflowTimerRestart stops the daemon while a workflow waits with
// a timeout and starts it again after the timeout passed: the timer fires
// at start.
func TestE2EWorkflowTimerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	d := MustRunMain(t)
	d.MustDeployPipeline("pipeline", pipelineModules[1].path)
	id := d.MustStartPipeline("pipeline", `{"service":"web","version":"9.9.9","approval_timeout_ms":1500}`, "--on-restart", "resume")
	d.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)
	d.Kill()
	time.Sleep(2 * time.Second)
	d.Restart()
	task := d.MustWaitStatus(id, 30*time.Second, "failed", "completed")
	require.Equal(t, "approval_timeout", task.Error.Type)
	var types []string
	for _, ev := range d.MustEvents(id) {
		types = append(types, ev.Type)
	}
	require.NotContains(t, types, "task.recovered", "a workflow that waited ran nothing when the daemon stopped")
	require.Contains(t, types, "signal.timed_out")
}

// mustEnvelopeJSON is the envelope of a JSON projection, as a map for a
// request body.
func mustEnvelopeJSON(tb testing.TB, projection string) map[string]any {
	tb.Helper()
	req := taskRequest(tb, "x", projection, "")
	env, err := json.Marshal(req["input"])
	require.NoError(tb, err)
	var m map[string]any
	require.NoError(tb, json.Unmarshal(env, &m))
	return m
}
