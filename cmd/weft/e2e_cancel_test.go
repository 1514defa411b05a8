//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// sagaHold is how long the testkit saga's sleep would run uncancelled: far
// beyond any wait of the tests, so an early end is the cancel's.
const sagaHold = 120_000

// startSaga starts the testkit's saga in module with three steps, a long
// sleep and a child tally, and waits until the sleep runs and the child
// waits for its signal.
func (d *Daemon) startSaga(module string) (parent string, sleep, child client.Task) {
	d.tb.Helper()
	in := `{"steps":3,"hold_ms":` + jsonInt(sagaHold) + `,"child":true}`
	parent = strings.TrimSpace(d.MustCLI("run", module, "saga", "--input", in, "--background"))
	require.Regexp(d.tb, taskIDPattern, parent)
	require.Eventually(d.tb, func() bool {
		kids := d.children(parent)
		if len(kids["sleep"]) != 1 || len(kids["tally"]) != 1 {
			return false
		}
		sleep, child = kids["sleep"][0], kids["tally"][0]
		evs := d.MustEvents(child.ID)
		return sleep.Status == "running" && len(evs) > 0 && evs[len(evs)-1].Type == "signal.waiting"
	}, 30*time.Second, 20*time.Millisecond, "the saga %s never held", parent)
	return parent, sleep, child
}

// jsonInt renders n for a JSON input.
func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// undone returns the steps the echo activities of the saga parent undid,
// in the order the workflow scheduled them, each checked completed.
func (d *Daemon) undone(parent string) []int {
	d.tb.Helper()
	var steps []int
	for _, echo := range d.children(parent)["echo"] {
		var in struct {
			Undo int `json:"undo"`
		}
		require.NoError(d.tb, json.Unmarshal(echo.Input, &in), "%s", echo.Input)
		if in.Undo > 0 {
			require.Equal(d.tb, "completed", echo.Status, "compensation %d", in.Undo)
			steps = append(steps, in.Undo)
		}
	}
	return steps
}

// kitModules are the names mustRunKits deploys the Go and the C testkit
// under.
var kitModules = []string{"kitgo", "kitc"}

// mustRunKits starts a daemon with the Go testkit deployed as kitgo and
// the C testkit as kitc.
func mustRunKits(tb testing.TB) *Daemon {
	tb.Helper()
	d := MustRunMain(tb)
	d.MustCLI("deploy", testkitWasm, "--name", kitModules[0])
	d.MustCLI("deploy", testkitCWasm, "--name", kitModules[1])
	return d
}

// TestE2EWorkflowCancel cancels the testkit's saga, in Go and in C, while
// its sleep activity runs and its child workflow waits: the workflow sees
// the request, the activity is stopped early, the child is cancelled, the
// three steps are compensated once each, newest first, and the workflow
// ends cancelled; a second request changes nothing. A SIGKILL right after
// the request loses and doubles nothing. Terminate ends a saga without
// compensation.
func TestE2EWorkflowCancel(t *testing.T) {
	t.Parallel()
	d := mustRunKits(t)
	for _, module := range kitModules {
		t.Run(module, func(t *testing.T) {
			parent, sleep, child := d.startSaga(module)
			out := d.MustCLI("tasks", "cancel", parent)
			require.Contains(t, out, parent)
			asked := d.MustTask(parent)
			require.NotNil(t, asked.CancelRequestedAt, "the task shows the request")

			done := d.MustWaitStatus(parent, 30*time.Second, "cancelled", "completed", "failed")
			require.Equal(t, "cancelled", done.Status, "%+v", done.Error)
			require.Equal(t, "cancelled", done.Error.Type)
			require.Equal(t, []int{3, 2, 1}, d.undone(parent), "each step undone once, newest first")
			require.Equal(t, 1, d.countEvents(parent, "workflow.cancel_requested"))

			s := d.MustTask(sleep.ID)
			require.Equal(t, "cancelled", s.Status, "the running activity got the cancel")
			require.Less(t, s.FinishedAt.Sub(*s.StartedAt), time.Duration(sagaHold)*time.Millisecond/4)
			c := d.MustTask(child.ID)
			require.Equal(t, "cancelled", c.Status, "the cancel reached the child workflow")

			// Asked again, a finished workflow stays as it is.
			again := d.MustTask(parent)
			d.MustCLI("tasks", "cancel", parent)
			require.Equal(t, again.LastSequenceNumber, d.MustTask(parent).LastSequenceNumber)
		})
	}

	t.Run("AskedTwiceWhileOpen", func(t *testing.T) {
		parent, _, _ := d.startSaga("kitgo")
		for range 5 {
			d.MustCLI("tasks", "cancel", parent)
		}
		require.Equal(t, "cancelled", d.MustWaitStatus(parent, 30*time.Second, "cancelled", "completed", "failed").Status)
		require.Equal(t, 1, d.countEvents(parent, "workflow.cancel_requested"), "one request recorded")
		require.Equal(t, []int{3, 2, 1}, d.undone(parent))
	})

	t.Run("SIGKILL", func(t *testing.T) {
		parent, _, child := d.startSaga("kitgo")
		d.MustCLI("tasks", "cancel", parent)
		d.Kill()
		d.Restart()
		done := d.MustWaitStatus(parent, 30*time.Second, "cancelled", "completed", "failed")
		require.Equal(t, "cancelled", done.Status, "%+v", done.Error)
		require.Equal(t, []int{3, 2, 1}, d.undone(parent), "compensated once across the crash")
		require.Equal(t, "cancelled", d.MustWaitStatus(child.ID, 30*time.Second, "cancelled", "completed", "failed").Status)
	})

	t.Run("Terminate", func(t *testing.T) {
		parent, sleep, child := d.startSaga("kitgo")
		d.MustCLI("tasks", "terminate", parent)
		done := d.MustWaitStatus(parent, 30*time.Second, "cancelled", "completed", "failed")
		require.Equal(t, "cancelled", done.Status)
		require.Nil(t, done.CancelRequestedAt, "no request: the workflow had no say")
		require.Empty(t, d.undone(parent), "terminated, nothing compensates")
		require.Equal(t, "cancelled", d.MustWaitStatus(sleep.ID, 30*time.Second, "cancelled", "completed", "failed").Status)
		require.Equal(t, "cancelled", d.MustWaitStatus(child.ID, 30*time.Second, "cancelled", "completed", "failed").Status)
	})
}
