package enginetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// testContinueAsNew: the kit's chain continues as new through 20 runs,
// each a task of the first run's workflow id, ended completed, whose
// successor names it; the last run's result counts them, its journal holds
// its own steps only, and the workflow id reaches it; a restart of the
// engine during the chain neither loses nor doubles a run.
func testContinueAsNew(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	const runs = 60
	first := v.create(modActivities, "chain", `{"runs":60,"done":0}`, nil)
	require.Equal(t, first.ID, first.WorkflowID, "a workflow started without an id has its own")
	// Restart the engine once the chain is under way.
	v.waitFor(first.ID, "the chain under way", func(*store.Task) bool { return latestRun(v, first.ID).ContinuedFrom != "" })
	v.restart()
	var last *store.Task
	v.waitFor(first.ID, "the chain's end", func(*store.Task) bool {
		last = latestRun(v, first.ID)
		return last.Status == store.StatusCompleted && projection(t, last.Input) == `{"runs":60,"done":59}`
	})
	require.JSONEq(t, `{"runs":60,"history_length":2}`, projection(t, last.Output))

	chain, err := v.db.TaskList(context.Background(), &store.TaskListParams{WorkflowID: first.ID, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, chain, runs, "one task per run, none lost or doubled by the restart")
	for i, run := range chain {
		require.Equal(t, store.StatusCompleted, run.Status)
		require.Equal(t, first.ID, run.WorkflowID)
		types := v.checkLog(run)
		if i == len(chain)-1 {
			require.Zero(t, count(types, runtime.EventContinuedAsNew), "the last run returned")
		} else {
			require.Equal(t, 1, count(types, runtime.EventContinuedAsNew), "run %d: %v", i, types)
		}
		if i == 0 {
			require.Empty(t, run.ContinuedFrom)
			continue
		}
		require.Equal(t, chain[i-1].ID, run.ContinuedFrom)
	}
	got, err := v.e.WorkflowRun(t.Context(), runtime.Caller{ClientID: admin.ClientID}, first.ID)
	require.NoError(t, err)
	require.Equal(t, last.ID, got.ID, "the workflow id reaches the last run")
}

// latestRun is the newest run of workflow id wid.
func latestRun(v *env, wid string) *store.Task {
	v.tb.Helper()
	ts, err := v.db.TaskList(context.Background(), &store.TaskListParams{WorkflowID: wid, Newest: true, Limit: 1})
	require.NoError(v.tb, err)
	require.Len(v.tb, ts, 1)
	return ts[0]
}

// testWorkflowIDQuery: a caller-chosen workflow id holds one open run; the
// kit's tally answers queries by its task while it waits, without a
// change to its log; a second run of the id may start once it ended.
func testWorkflowIDQuery(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	withID := func(p *runtime.TaskCreateParams) { p.WorkflowID = "tally-1" }
	task := v.create(modActivities, "tally", `{"signals":2}`, withID)
	_, err := v.e.TaskCreate(t.Context(), &runtime.TaskCreateParams{
		ClientID: admin.ClientID, Admin: true, Module: modActivities, Function: "tally",
		Input: envelope(t, `{"signals":2}`), WorkflowID: "tally-1",
	})
	require.True(t, errors.Is(err, fault.WorkflowIDInUse), "%v", err)
	v.waitEvent(task.ID, evSignalWaiting)
	require.NoError(t, v.e.TaskSignal(t.Context(), admin, task.ID, "add", envelope(t, "5")))
	var answer *runtime.QueryAnswer
	v.waitFor(task.ID, "the signal consumed", func(*store.Task) bool {
		answer, err = v.e.TaskQuery(t.Context(), admin, task.ID, "state", codec.Envelope{})
		require.NoError(t, err)
		return projection(t, answer.Output) == `{"sum":5,"count":1}`
	})
	// The run that consumed the signal has committed its next wait: the
	// log stands still until the next signal.
	v.waitFor(task.ID, "the second wait", func(*store.Task) bool {
		n := 0
		for _, ev := range v.events(task.ID) {
			if ev.Type == evSignalWaiting {
				n++
			}
		}
		return n == 2
	})
	before, err := v.db.TaskGet(t.Context(), task.ID)
	require.NoError(t, err)
	_, err = v.e.TaskQuery(t.Context(), admin, task.ID, "nope", codec.Envelope{})
	require.True(t, errors.Is(err, fault.QueryNotFound), "%v", err)
	_, err = v.e.TaskQuery(t.Context(), admin, task.ID, "schedule", codec.Envelope{})
	require.True(t, errors.Is(err, fault.QueryCommand), "%v", err)
	after, err := v.db.TaskGet(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, before.LastSeq, after.LastSeq, "queries write nothing")

	require.NoError(t, v.e.TaskSignal(t.Context(), admin, task.ID, "add", envelope(t, "6")))
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.Equal(t, "11", projection(t, done.Output))
	again := v.create(modActivities, "tally", `{"signals":1}`, withID)
	require.Equal(t, "tally-1", again.WorkflowID)
}
