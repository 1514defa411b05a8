//go:build unix

package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// startParent starts the testkit's parent workflow in module, whose child
// tally waits for one signal, with the child's workflow id and parent
// close policy, and waits until the child waits.
func (d *Daemon) startParent(module, childID, policy string) string {
	d.tb.Helper()
	in := `{"workflow_id":"` + childID + `","policy":"` + policy + `","signals":1}`
	id := strings.TrimSpace(d.MustCLI("run", module, "parent", "--input", in, "--background"))
	require.Regexp(d.tb, taskIDPattern, id)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var child client.Task
		if code, err := d.Do(d.tb.Context(), http.MethodGet, "/v1/workflows/"+childID, nil, &child); err == nil && code == 200 {
			if evs := d.MustEvents(child.ID); len(evs) > 0 && evs[len(evs)-1].Type == "signal.waiting" {
				return id
			}
		}
		require.True(d.tb, time.Now().Before(deadline), "the child of %s never waited", id)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestE2EChildWorkflows runs the testkit's parent, in Go and in C, whose
// child workflow waits for a signal: the child is a task of its own under
// the parent; a SIGKILL of the daemon while the child waits loses and
// doubles nothing, and both complete once; cancelling a parent cancels a
// child it terminates on close and leaves one it abandons.
func TestE2EChildWorkflows(t *testing.T) {
	t.Parallel()
	d := mustRunKits(t)
	for _, module := range kitModules {
		t.Run(module, func(t *testing.T) {
			parent := d.startParent(module, module+"-kid", "")
			page, err := d.Client.TaskList(t.Context(), &client.TaskListParams{ParentTaskID: parent})
			require.NoError(t, err)
			require.Len(t, page.Data, 1, "one child task")
			child := page.Data[0]
			require.Equal(t, "workflow", child.Kind)
			require.Equal(t, "tally", child.Function)
			require.Equal(t, parent, child.ParentTaskID)
			require.Equal(t, module+"-kid", child.WorkflowID)
			require.Contains(t, d.MustCLI("tasks", "list", "--parent", parent), child.ID)

			d.Kill()
			d.Restart()
			d.MustCLI("workflows", "signal", module+"-kid", "add", "--input", "41")
			done := d.MustWaitStatus(parent, 20*time.Second, "completed", "failed")
			require.Equal(t, "completed", done.Status, "%+v", done.Error)
			require.JSONEq(t, "41", string(done.Output), "the child's result")
			require.Equal(t, "completed", d.MustTask(child.ID).Status)
			page, err = d.Client.TaskList(t.Context(), &client.TaskListParams{ParentTaskID: parent})
			require.NoError(t, err)
			require.Len(t, page.Data, 1, "the child ran once")
			completions := 0
			for _, ev := range d.MustEvents(parent) {
				if ev.Type == "activity.completed" {
					completions++
				}
			}
			require.Equal(t, 1, completions, "the parent's journal holds the child's end once")
		})
	}

	t.Run("ParentClosePolicies", func(t *testing.T) {
		terminated := d.startParent("kitgo", "kid-terminate", "terminate")
		abandoned := d.startParent("kitgo", "kid-abandon", "abandon")
		for _, id := range []string{terminated, abandoned} {
			d.MustCLI("tasks", "cancel", id)
			d.MustWaitStatus(id, 10*time.Second, "cancelled")
		}
		var kid client.Task
		require.Eventually(t, func() bool {
			d.MustDo(http.MethodGet, "/v1/workflows/kid-terminate", nil, &kid)
			return kid.Status == "cancelled"
		}, 10*time.Second, 20*time.Millisecond, "a terminated child is cancelled with its parent")
		d.MustDo(http.MethodGet, "/v1/workflows/kid-abandon", nil, &kid)
		require.Equal(t, "running", kid.Status, "an abandoned child runs on")
		d.MustCLI("workflows", "signal", "kid-abandon", "add", "--input", "1")
		d.MustWaitStatus(kid.ID, 10*time.Second, "completed")
		require.Equal(t, "cancelled", d.MustTask(abandoned).Status, "its end does not touch the ended parent")
	})

	t.Run("CheckReplay", func(t *testing.T) {
		// A version whose parent starts another child workflow would not
		// replay a waiting parent: --check-replay refuses it, names the
		// step, and deploys nothing.
		d.MustCLI("deploy", testkitCWasm, "--name", "kitr")
		parent := d.startParent("kitr", "kid-replay", "")
		v2 := filepath.Join("testdata", "testkit-c-v2.wasm")
		r := d.CLI("deploy", v2, "--name", "kitr", "--check-replay")
		require.NotZero(t, r.Code, "%s", r.Stdout)
		require.Contains(t, r.Stderr, "replay_divergence")
		require.Contains(t, r.Stderr, parent)
		require.Contains(t, r.Stderr, "step 1")
		require.Contains(t, r.Stderr, "chain")
		var m client.Module
		d.MustDo(http.MethodGet, "/v1/modules/kitr", nil, &m)
		require.Equal(t, 1, m.Version, "nothing deployed")
		d.MustCLI("workflows", "signal", "kid-replay", "add", "--input", "2")
		d.MustWaitStatus(parent, 10*time.Second, "completed")
	})

	t.Run("WorkflowIDInUse", func(t *testing.T) {
		// A child whose workflow id an open run holds fails its future,
		// and so the parent, without starting anything.
		id := strings.TrimSpace(d.MustCLI("run", "kitgo", "tally", "--input", `{"signals":1}`, "--workflow-id", "taken", "--background"))
		parent := strings.TrimSpace(d.MustCLI("run", "kitgo", "parent", "--input", `{"workflow_id":"taken","signals":1}`, "--background"))
		done := d.MustWaitStatus(parent, 10*time.Second, "failed")
		require.Equal(t, "workflow_id_in_use", done.Error.Type, "%+v", done.Error)
		page, err := d.Client.TaskList(t.Context(), &client.TaskListParams{ParentTaskID: parent})
		require.NoError(t, err)
		require.Empty(t, page.Data)
		d.MustCLI("tasks", "cancel", id)
	})
}
