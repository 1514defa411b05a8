//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// wftimeoutsWasm is the workflow guest of the timeout tests
// (testdata/wftimeouts), which runs testkit's activities.
var wftimeoutsWasm = filepath.Join("testdata", "wftimeouts.wasm")

// mustDeployTimeouts deploys testkit and the wftimeouts workflows.
func (d *Daemon) mustDeployTimeouts() {
	d.tb.Helper()
	d.MustDeployTestkit()
	wasm, err := os.ReadFile(wftimeoutsWasm)
	require.NoError(d.tb, err)
	require.Equal(d.tb, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/wftimeouts", wasm, nil))
}

// mustStart posts a task of module's function with input (a JSON
// projection) and the extra request fields, and returns the 202 task.
func (d *Daemon) mustStart(module, function, input string, extra map[string]any) client.Task {
	d.tb.Helper()
	req := taskRequest(d.tb, function, input, "")
	req["module"] = module
	for k, v := range extra {
		req[k] = v
	}
	var t client.Task
	require.Equal(d.tb, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", req, &t))
	return t
}

// attemptErrors returns the error codes of the task.attempt_failed events
// of task id, in order.
func (d *Daemon) attemptErrors(id string) []string {
	d.tb.Helper()
	var codes []string
	for _, ev := range d.MustEvents(id) {
		if ev.Type != "task.attempt_failed" {
			continue
		}
		var p struct {
			Error client.TaskError `json:"error"`
		}
		require.NoError(d.tb, json.Unmarshal(ev.Data, &p))
		codes = append(codes, p.Error.Code)
	}
	return codes
}

// TestE2EExecutionTimeout: a workflow whose execution timeout passes while
// it waits (for a signal; for a timer, started with the CLI flag) ends
// failed with execution_timeout, and the activity it left running is
// cancelled.
func TestE2EExecutionTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t)
	d.mustDeployTimeouts()

	signal := d.mustStart("wftimeouts", "wait_with_activity", `{"sleep_ms":600000}`, map[string]any{"execution_timeout_ms": 1500})
	require.NotNil(t, signal.Deadline, "the task shows its absolute deadline")
	require.WithinDuration(t, signal.CreatedAt.Add(1500*time.Millisecond), *signal.Deadline, time.Second)
	id := strings.TrimSpace(d.MustCLI("run", "wftimeouts", "wait_with_activity", "--input", `{"sleep_ms":600000,"timer_ms":600000}`,
		"--execution-timeout", "1500ms", "--background"))
	require.Regexp(t, taskIDPattern, id)

	for _, id := range []string{signal.ID, id} {
		task := d.MustWaitStatus(id, 60*time.Second, "failed", "completed", "cancelled")
		require.Equal(t, "failed", task.Status)
		require.NotNil(t, task.Error)
		require.Equal(t, "execution_timeout", task.Error.Code)
		require.True(t, task.Error.NonRetryable)
		require.Equal(t, 1, task.Attempt, "an execution timeout is never retried")
		require.GreaterOrEqual(t, task.FinishedAt.Sub(task.CreatedAt), 1500*time.Millisecond)
		sleeps := d.children(id)["sleep"]
		require.Len(t, sleeps, 1)
		sleep := d.MustWaitStatus(sleeps[0].ID, 30*time.Second, "cancelled", "failed", "completed")
		require.Equal(t, "cancelled", sleep.Status, "the workflow's unfinished activity is cancelled")
	}
}

// TestE2ERunTimeout: a workflow's run timeout, waits included, ends the
// attempt with run_timeout; the retry policy retries it, and a later
// attempt that finishes in time completes. Without attempts left it fails.
func TestE2ERunTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t)
	d.mustDeployTimeouts()

	// Attempts that start before until_ms wait for a 60 s timer; the retry
	// waits at least 2.4 s (3 s less jitter), past until_ms.
	until := time.Now().Add(2 * time.Second).UnixMilli()
	ok := d.mustStart("wftimeouts", "slow_until", `{"timer_ms":60000,"until_ms":`+strconv.FormatInt(until, 10)+`}`, map[string]any{
		"run_timeout_ms": 1000, "retry": map[string]any{"maximum_attempts": 3, "initial_interval_ms": 3000},
	})
	require.Equal(t, int64(1000), ok.RunTimeoutMS)
	never := d.mustStart("wftimeouts", "slow_until", `{"timer_ms":60000,"until_ms":`+strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)+`}`, map[string]any{
		"run_timeout_ms": 800, "retry": map[string]any{"maximum_attempts": 2, "initial_interval_ms": 200},
	})

	task := d.MustWaitStatus(ok.ID, 60*time.Second, "completed", "failed")
	require.Equal(t, "completed", task.Status, "error: %+v", task.Error)
	require.Equal(t, 2, task.Attempt)
	require.Equal(t, []string{"run_timeout"}, d.attemptErrors(ok.ID), "the first attempt timed out, waiting, and was retried")

	task = d.MustWaitStatus(never.ID, 60*time.Second, "completed", "failed")
	require.Equal(t, "failed", task.Status)
	require.Equal(t, "run_timeout", task.Error.Code)
	require.Equal(t, 2, task.Attempt, "retried once, as the policy allows, then failed")
	require.Equal(t, []string{"run_timeout"}, d.attemptErrors(never.ID))
}

// TestE2EScheduleToStartTimeout: with the only worker busy, a queued
// activity past its schedule-to-start timeout fails with
// schedule_to_start_timeout, not retried, both a top-level one and one a
// workflow started; the workflow's future resolves with that error type.
func TestE2EScheduleToStartTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t, "--workers", "1")
	d.mustDeployTimeouts()

	busy := d.mustStart("testkit", "sleep", `{"ms":4000}`, nil)
	d.MustWaitStatus(busy.ID, 30*time.Second, "running")
	late := d.mustStart("testkit", "echo", `"late"`, map[string]any{
		"schedule_to_start_timeout_ms": 300, "retry": map[string]any{"maximum_attempts": 3},
	})
	require.Equal(t, "queued", late.Status)
	task := d.MustWaitStatus(late.ID, 30*time.Second, "failed", "completed")
	require.Equal(t, "schedule_to_start_timeout", task.Error.Code)
	require.Equal(t, 0, task.Attempt, "no worker ever took it, and it is not retried")
	require.Equal(t, "running", d.MustTask(busy.ID).Status, "it failed while the only worker was still busy")
	d.MustWaitStatus(busy.ID, 30*time.Second, "completed")

	wf := d.mustStart("wftimeouts", "start_late", `{"busy_ms":8000,"schedule_to_start_ms":300}`, nil)
	var echo client.Task
	require.Eventually(t, func() bool {
		echoes := d.children(wf.ID)["echo"]
		if len(echoes) == 0 {
			return false
		}
		echo = echoes[0]
		return echo.Status == "failed"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "schedule_to_start_timeout", echo.Error.Code)
	require.Equal(t, "running", d.children(wf.ID)["sleep"][0].Status, "the workflow's other activity holds the only worker")
	task = d.MustWaitStatus(wf.ID, 30*time.Second, "completed", "failed")
	require.Equal(t, "completed", task.Status, "error: %+v", task.Error)
	require.JSONEq(t, `{"error_type":"schedule_to_start_timeout"}`, string(task.Output))
}

// TestE2EHeartbeatTimeout: an activity that stops heartbeating has its
// attempt stopped with heartbeat_timeout and retried; the attempt that
// heartbeats properly completes. The C testkit behaves the same.
func TestE2EHeartbeatTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "plugins", "testkit-c", "testkit-c.wasm"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/testkit-c", wasm, nil))

	var ids []string
	for _, module := range []string{"testkit", "testkit-c"} {
		until := time.Now().Add(2 * time.Second).UnixMilli()
		task := d.mustStart(module, "heartbeat_spin", `{"beats":3,"interval_ms":50,"until_ms":`+strconv.FormatInt(until, 10)+`}`, map[string]any{
			"heartbeat_timeout_ms": 400, "retry": map[string]any{"maximum_attempts": 3, "initial_interval_ms": 3000},
		})
		require.Equal(t, int64(400), task.HeartbeatTimeoutMS)
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		task := d.MustWaitStatus(id, 60*time.Second, "completed", "failed")
		require.Equal(t, "completed", task.Status, "error: %+v", task.Error)
		require.Equal(t, 2, task.Attempt)
		require.JSONEq(t, `"done"`, string(task.Output))
		require.Equal(t, []string{"heartbeat_timeout"}, d.attemptErrors(id))
	}
}

// TestE2ETimeoutAfterKill: a workflow's execution deadline that passes
// while the daemon is down (SIGKILL) still fires after the restart.
func TestE2ETimeoutAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t)
	d.mustDeployTimeouts()
	wf := d.mustStart("wftimeouts", "wait_with_activity", `{"sleep_ms":600000}`, map[string]any{"execution_timeout_ms": 2500})
	d.MustWaitEvent(wf.ID, "signal.waiting", 1, 30*time.Second)
	d.Kill()
	time.Sleep(time.Until(wf.Deadline.Add(500 * time.Millisecond)))
	d.Restart()
	task := d.MustWaitStatus(wf.ID, 60*time.Second, "failed", "completed")
	require.Equal(t, "execution_timeout", task.Error.Code)
	sleep := d.MustWaitStatus(d.children(wf.ID)["sleep"][0].ID, 30*time.Second, "cancelled", "failed", "completed")
	require.Equal(t, "cancelled", sleep.Status)
}

// TestE2ETimeoutHostile: the timeout fields refuse wrong types, negative
// and oversized values, and the kind they do not apply to, with 400 and
// the field named.
func TestE2ETimeoutHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	d := MustRunMain(t)
	d.mustDeployTimeouts()
	tests := []struct {
		name, module, function, field string
		value                         any
	}{
		{"NegativeExecution", "wftimeouts", "slow_until", "execution_timeout_ms", -1},
		{"StringRun", "wftimeouts", "slow_until", "run_timeout_ms", "10"},
		{"FractionRun", "wftimeouts", "slow_until", "run_timeout_ms", 1.5},
		{"HugeExecution", "wftimeouts", "slow_until", "execution_timeout_ms", int64(1) << 62},
		{"TenYearsAndOneMS", "testkit", "echo", "heartbeat_timeout_ms", int64(10*365*24*3600*1000 + 1)},
		{"NegativeScheduleToStart", "testkit", "echo", "schedule_to_start_timeout_ms", -5},
		{"HugeTimeout", "testkit", "echo", "timeout_ms", int64(1) << 60},
		{"ExecutionOnActivity", "testkit", "echo", "execution_timeout_ms", 1000},
		{"RunOnActivity", "testkit", "echo", "run_timeout_ms", 1000},
		{"HeartbeatOnWorkflow", "wftimeouts", "slow_until", "heartbeat_timeout_ms", 1000},
		{"ScheduleToStartOnWorkflow", "wftimeouts", "slow_until", "schedule_to_start_timeout_ms", 1000},
	}
	for _, tc := range tests {
		req := taskRequest(t, tc.function, `{}`, "")
		req["module"] = tc.module
		req[tc.field] = tc.value
		code, err := d.Do(t.Context(), http.MethodPost, "/v1/tasks", req, nil)
		require.Equal(t, http.StatusBadRequest, code, tc.name)
		require.ErrorContains(t, err, `"code":"invalid_request"`, tc.name)
		require.ErrorContains(t, err, `"param":"`+tc.field+`"`, tc.name)
	}
	// The CLI refuses a bad duration before it sends anything.
	res := d.CLI("run", "testkit", "echo", "--heartbeat-timeout", "-1s")
	require.NotEqual(t, 0, res.Code)
	require.Contains(t, res.Stderr, "--heartbeat-timeout")
	require.Empty(t, d.MustListTasks(""), "no task was created")
}

// TestE2ETimeoutMultiHost: on PostgreSQL with two hosts, a workflow's
// execution deadline fires on the surviving host after the other was
// killed while the workflow waited, and its activity (taken over by the
// lease if the dead host ran it) is cancelled; a queued activity created
// through the dead host fails at its schedule-to-start deadline through
// the surviving host's sweep, while that host's only worker is busy.
func TestE2ETimeoutMultiHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	dsn := MustOwnedDatabase(t)
	hosts := MustRunHosts(t, 2, dsn, "--lease-ttl", multiHostTTL.String(), "--workers", "1")
	first, second := hosts[0], hosts[1]
	first.mustDeployTimeouts()

	wf := first.mustStart("wftimeouts", "wait_with_activity", `{"sleep_ms":600000}`, map[string]any{"execution_timeout_ms": 4000})
	first.MustWaitEvent(wf.ID, "signal.waiting", 1, 30*time.Second)
	// Keep the second host's only worker busy once the first is gone.
	first.mustStart("testkit", "sleep", `{"ms":20000}`, nil)
	late := first.mustStart("testkit", "echo", `"late"`, map[string]any{"schedule_to_start_timeout_ms": 1000})
	first.Kill()

	task := second.MustWaitStatus(wf.ID, 60*time.Second, "failed", "completed")
	require.Equal(t, "execution_timeout", task.Error.Code)
	sleep := second.MustWaitStatus(second.children(wf.ID)["sleep"][0].ID, 60*time.Second, "cancelled", "failed", "completed")
	require.Equal(t, "cancelled", sleep.Status)

	task = second.MustWaitStatus(late.ID, 60*time.Second, "failed", "completed")
	require.Equal(t, "schedule_to_start_timeout", task.Error.Code)
	require.Equal(t, 0, task.Attempt)
}
