package enginetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// testHeartbeatTimeout: an attempt that stops heartbeating is stopped
// with heartbeat_timeout and retried; the next attempt, which heartbeats,
// completes.
func testHeartbeatTimeout(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	until := time.Now().Add(time.Second).UnixMilli()
	task := v.create(modActivities, "heartbeat_spin", `{"beats":2,"interval_ms":20,"until_ms":`+strconv.FormatInt(until, 10)+`}`,
		func(p *runtimeParams) {
			p.HeartbeatTimeoutMS = 300
			p.Retry = &store.RetryPolicy{MaximumAttempts: 3, InitialInterval: 1500 * time.Millisecond, MaximumInterval: 1500 * time.Millisecond}
		})
	require.Equal(t, 300*time.Millisecond, task.HeartbeatTimeout)
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.Equal(t, 2, done.Attempt)
	types := v.checkLog(done)
	require.Equal(t, 1, count(types, "task.attempt_failed"), "%v", types)
}

// testScheduleToStart: with the only worker busy, a queued activity past
// its schedule-to-start timeout fails with that code, never retried, and
// a queued workflow past its execution deadline with execution_timeout.
func testScheduleToStart(t *testing.T, h *Harness) {
	v := newEnv(t, h, func(c *runtime.Config) { c.Workers = 1 })
	busy := v.create(modActivities, "sleep", `{"ms":3000}`, nil)
	v.waitFor(busy.ID, "running", func(t *store.Task) bool { return t.Status == store.StatusRunning })
	late := v.create(modActivities, "echo", `1`, func(p *runtimeParams) {
		p.ScheduleToStartTimeoutMS = 200
		p.Retry = fastRetry(3)
	})
	wf := v.create(modWorkflows, "greet", `"x"`, func(p *runtimeParams) { p.ExecutionTimeoutMS = 300 })
	require.False(t, wf.Deadline.IsZero())
	for _, c := range []struct {
		id   string
		code fault.Code
	}{{late.ID, fault.ScheduleToStartTimeout}, {wf.ID, fault.ExecutionTimeout}} {
		done := v.wait(c.id)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(c.code), done.Error.Code)
		require.True(t, done.Error.NonRetryable)
		require.Equal(t, 0, done.Attempt, "no worker took it")
		v.checkLog(done)
	}
	cur, err := v.db.TaskGet(t.Context(), busy.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusRunning, cur.Status, "they failed while the only worker was busy")
	require.Equal(t, store.StatusCompleted, v.wait(busy.ID).Status)
}

// testTimeoutParams: the timeouts refuse negative and oversized values
// and the kind they do not apply to, naming the field.
func testTimeoutParams(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	tests := []struct {
		name, module, function, param string
		edit                          func(*runtimeParams)
	}{
		{"NegativeExecution", modWorkflows, "greet", "execution_timeout_ms", func(p *runtimeParams) { p.ExecutionTimeoutMS = -1 }},
		{"HugeRun", modWorkflows, "greet", "run_timeout_ms", func(p *runtimeParams) { p.RunTimeoutMS = runtime.MaxTimeoutMS + 1 }},
		{"HugeAttempt", modActivities, "echo", "timeout_ms", func(p *runtimeParams) { p.TimeoutMS = 1 << 60 }},
		{"NegativeHeartbeat", modActivities, "echo", "heartbeat_timeout_ms", func(p *runtimeParams) { p.HeartbeatTimeoutMS = -1 }},
		{"ExecutionOnActivity", modActivities, "echo", "execution_timeout_ms", func(p *runtimeParams) { p.ExecutionTimeoutMS = 1 }},
		{"RunOnActivity", modActivities, "echo", "run_timeout_ms", func(p *runtimeParams) { p.RunTimeoutMS = 1 }},
		{"ScheduleToStartOnWorkflow", modWorkflows, "greet", "schedule_to_start_timeout_ms", func(p *runtimeParams) { p.ScheduleToStartTimeoutMS = 1 }},
		{"HeartbeatOnWorkflow", modWorkflows, "greet", "heartbeat_timeout_ms", func(p *runtimeParams) { p.HeartbeatTimeoutMS = 1 }},
	}
	for _, tc := range tests {
		p := &runtime.TaskCreateParams{ClientID: admin.ClientID, Admin: true, Module: tc.module, Function: tc.function, Input: envelope(t, `1`)}
		tc.edit(p)
		_, err := v.e.TaskCreate(t.Context(), p)
		require.Equal(t, fault.Invalid, fault.CodeOf(err), tc.name)
		require.Equal(t, tc.param, fault.Param(err), tc.name)
	}
	// The largest values are accepted, and a workflow under them runs to
	// its end: its timer and its signal still wake it, with the deadlines
	// in its wake time.
	wf := v.create(modWorkflows, "greet", `"x"`, func(p *runtimeParams) {
		p.ExecutionTimeoutMS, p.RunTimeoutMS = runtime.MaxTimeoutMS, runtime.MaxTimeoutMS
	})
	require.WithinDuration(t, time.Now().Add(runtime.MaxTimeoutMS*time.Millisecond), wf.Deadline, time.Minute)
	v.waitEvent(wf.ID, evActivityCompleted)
	require.NoError(t, v.e.TaskSignal(t.Context(), admin, wf.ID, "approve", envelope(t, `"bob"`)))
	done := v.wait(wf.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.False(t, done.RunDeadline.IsZero(), "the attempt had a run deadline")
}
