package enginetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// The journal events of a workflow's log, by their wire names.
const (
	evActivityScheduled = "activity.scheduled"
	evActivityCompleted = "activity.completed"
	evTimerStarted      = "timer.started"
	evTimerFired        = "timer.fired"
	evSignalReceived    = "signal.received"
	evSignalWaiting     = "signal.waiting"
)

// testWorkflow: the kit's greet runs its activity, sleeps on a durable
// timer (1 s), waits for the signal "approve" and completes with what each
// step returned. The signal is sent before the workflow waits for it.
func testWorkflow(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task := v.create(modWorkflows, "greet", `"ada"`, nil)
	require.Equal(t, store.KindWorkflow, task.Kind)
	v.waitEvent(task.ID, evActivityCompleted)
	require.NoError(t, v.e.TaskSignal(t.Context(), admin, task.ID, "approve", envelope(t, `"bob"`)))

	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	var out struct {
		Greeting string `json:"greeting"`
		Approval string `json:"approval"`
	}
	require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
	require.Equal(t, "ADA!", out.Greeting)
	require.Equal(t, "approved by bob", out.Approval)

	types := v.checkLog(done)
	for _, typ := range []string{evActivityScheduled, evActivityCompleted, evTimerStarted, evTimerFired, evSignalReceived} {
		require.Equal(t, 1, count(types, typ), "one %s in %v", typ, types)
	}
	children := v.children(task.ID)
	require.Len(t, children, 1)
	require.Equal(t, "shout", children[0].Function)
	require.Equal(t, store.StatusCompleted, children[0].Status)
	require.JSONEq(t, `"ADA!"`, projection(t, children[0].Output))
	v.checkLog(children[0])
}

// testWorkflowFanout: the kit's fanout runs one activity per name at once
// and returns their results in order.
func testWorkflowFanout(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task := v.create(modWorkflows, "fanout", `["a","b","c","d"]`, nil)
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	var out []string
	require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
	require.Len(t, out, 5)
	require.Regexp(t, `^first=[0-3]$`, out[0])
	require.Equal(t, []string{"A!", "B!", "C!", "D!"}, out[1:])
	types := v.checkLog(done)
	require.Equal(t, 4, count(types, evActivityScheduled), "%v", types)
	require.Equal(t, 4, count(types, evActivityCompleted), "%v", types)
	children := v.children(task.ID)
	require.Len(t, children, 4)
	for _, c := range children {
		require.Equal(t, store.StatusCompleted, c.Status)
		v.checkLog(c)
	}

	// A failed activity fails the workflow with its error, not retried
	// (the name is empty: shout's non-retryable bad_name).
	task = v.create(modWorkflows, "fanout", `["e",""]`, nil)
	done = v.wait(task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.NotNil(t, done.Error)
	require.Contains(t, done.Error.Message, "empty name")
	v.checkLog(done)
}

// testWorkflowCancel: a workflow that waits (for its timer, then for a
// signal) is cancelled at once, and its log ends with the cancel.
func testWorkflowCancel(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	for _, waitFor := range []string{evTimerStarted, evSignalWaiting} {
		task := v.create(modWorkflows, "greet", `"grace"`, nil)
		v.waitEvent(task.ID, waitFor)
		_, err := v.e.TaskCancel(t.Context(), admin, task.ID)
		require.NoError(t, err)
		done := v.wait(task.ID)
		require.Equal(t, store.StatusCancelled, done.Status, "waiting for %s: %+v", waitFor, done.Error)
		v.checkLog(done)
		for _, c := range v.children(task.ID) {
			require.True(t, c.Status.IsTerminal(), "activity %s is %s", c.ID, c.Status)
		}
	}
}

// children returns the activity tasks of workflow id, oldest first.
func (v *env) children(id string) []*store.Task {
	v.tb.Helper()
	ts, err := v.db.TaskList(v.tb.Context(), &store.TaskListParams{ParentTaskID: id, Limit: 100})
	require.NoError(v.tb, err)
	return ts
}
