package enginetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// countInput is a count that checkpoints every 5 steps: each checkpoint is
// a commit, so the count runs for a while, and a restart finds it running
// past a checkpoint.
const countInput = `{"to":3000,"checkpoint_every":5}`

// checkpointAt is the checkpoint a count must have reached before the
// suite stops its engine.
const checkpointAt = 25

// startCount creates a count under policy and waits until it has saved a
// checkpoint of at least checkpointAt, which it returns.
func (v *env) startCount(policy store.OnRestart) (*store.Task, int64) {
	v.tb.Helper()
	task := v.create(modActivities, "count", countInput, func(p *runtimeParams) { p.OnRestart = policy })
	var at int64
	v.waitFor(task.ID, "past a checkpoint", func(t *store.Task) bool {
		require.Equal(v.tb, store.StatusRunning, t.Status, "the count is still running")
		if len(t.Checkpoint.Data) == 0 {
			return false
		}
		val, err := codec.DecodeFrame(t.Checkpoint.Data)
		require.NoError(v.tb, err)
		n, ok := val.AsLong()
		require.True(v.tb, ok, "count checkpoints a long, not %v", val.Kind())
		at = n
		return n >= checkpointAt
	})
	return task, at
}

// countOutput is the output of the kit's count.
type countOutput struct {
	Count       int64 `json:"count"`
	ResumedFrom int64 `json:"resumed_from"`
}

// recovered checks the log of a task that start-up recovery handled and
// returns its event types: the log is whole, and it holds one
// task.recovered event for a task kept running (resume), none otherwise;
// on a shared store, where recovery is a takeover of the leases the
// stopped engine held, every task handled holds one (reason
// lease_expired, BRIEF §3.2).
func (v *env) recovered(done *store.Task, kept bool) []string {
	v.tb.Helper()
	types := v.checkLog(done)
	want := 0
	if kept || v.db.Shared() {
		want = 1
	}
	require.Equal(v.tb, want, count(types, store.EventRecovered), "%v", types)
	return types
}

// testRecoverFail: a task with on_restart fail that was running when the
// engine stopped fails at the next start with server_restarted.
func testRecoverFail(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task, _ := v.startCount(store.OnRestartFail)
	v.restart()
	done := v.wait(task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.NotNil(t, done.Error)
	require.Equal(t, "server_restarted", done.Error.Code)
	v.recovered(done, false)
}

// testRecoverRetry: a task with on_restart retry that was running when the
// engine stopped runs again from the start (its checkpoint cleared) at the
// next start, and completes.
func testRecoverRetry(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task, _ := v.startCount(store.OnRestartRetry)
	v.restart()
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	var out countOutput
	require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
	require.Equal(t, countOutput{Count: 3000, ResumedFrom: 0}, out, "a retry starts over")
	require.Equal(t, 2, done.Attempt, "the restart's retry is the second attempt")
	types := v.recovered(done, false)
	require.Equal(t, 2, count(types, store.EventResponseInProgress), "%v", types)
}

// testRecoverResume: a task with on_restart resume that was running when
// the engine stopped continues from its last checkpoint at the next start,
// and completes.
func testRecoverResume(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task, at := v.startCount(store.OnRestartResume)
	v.restart()
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	var out countOutput
	require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
	require.Equal(t, int64(3000), out.Count)
	require.GreaterOrEqual(t, out.ResumedFrom, at, "resumed from the checkpoint seen before the stop, or a later one")
	require.Zero(t, out.ResumedFrom%5, "resumed from a checkpoint")
	require.Equal(t, 1, done.Attempt, "resume continues the attempt")
	v.recovered(done, true)
}

// testRecoverWorkflow: a workflow stopped in the middle of its steps (its
// activity done, its timer pending) continues from its journal at the next
// start (on_restart resume, the default): the activity does not run again,
// and the timer and the signal complete it.
func testRecoverWorkflow(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task := v.create(modWorkflows, "greet", `"lin"`, nil)
	require.Equal(t, store.OnRestartResume, task.OnRestart, "a workflow resumes by default")
	v.waitEvent(task.ID, evActivityCompleted)
	v.restart()
	require.NoError(t, v.e.TaskSignal(t.Context(), admin, task.ID, "approve", envelope(t, `"sam"`)))
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	var out struct {
		Greeting string `json:"greeting"`
		Approval string `json:"approval"`
	}
	require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
	require.Equal(t, "LIN!", out.Greeting)
	require.Equal(t, "approved by sam", out.Approval)
	types := v.checkLog(done)
	require.Equal(t, 1, count(types, evActivityScheduled), "the activity ran once: %v", types)
	require.Len(t, v.children(task.ID), 1)
}
