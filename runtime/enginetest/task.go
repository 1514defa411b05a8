package enginetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testComplete: a task completes with its output, and its log records the
// run from creation to the response.
func testComplete(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	input := `{"name":"ada","n":[1,2.5,true,null]}`
	task := v.create(modActivities, "echo", input, nil)
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.JSONEq(t, input, projection(t, done.Output))
	require.Nil(t, done.Error)
	require.Equal(t, 1, done.Attempt)
	types := v.checkLog(done)
	require.Equal(t, 1, count(types, store.EventResponseInProgress), "%v", types)

	resp, err := v.db.ResponseGet(t.Context(), task.ResponseID())
	require.NoError(t, err)
	require.Equal(t, store.StatusCompleted, resp.Status)
	require.JSONEq(t, input, projection(t, resp.Output))
}

// testFail: a task fails with the plugin's error, and a non-retryable one
// is not retried whatever the policy.
func testFail(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task := v.create(modActivities, "fail", `{"type":"bad_input","message":"no such thing","non_retryable":true}`,
		func(p *runtimeParams) { p.Retry = fastRetry(5) })
	done := v.wait(task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.NotNil(t, done.Error)
	require.Equal(t, "bad_input", done.Error.Type)
	require.Equal(t, "no such thing", done.Error.Message)
	require.True(t, done.Error.NonRetryable)
	require.Equal(t, 1, done.Attempt, "a non-retryable error is not retried")
	v.checkLog(done)

	// A retryable error is retried until the policy's attempts run out,
	// and the task fails with the last error.
	task = v.create(modActivities, "fail", `{"type":"flaky","message":"again"}`,
		func(p *runtimeParams) { p.Retry = fastRetry(3) })
	done = v.wait(task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.Equal(t, "flaky", done.Error.Type)
	require.Equal(t, 3, done.Attempt)
	require.Equal(t, 2, count(v.checkLog(done), "task.attempt_failed"))
}

// testRetry: a task whose first attempts fail succeeds by its retry policy,
// with one attempt_failed event per failed attempt.
func testRetry(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	task := v.create(modFlaky, "echo", `"third time lucky"`, func(p *runtimeParams) { p.Retry = fastRetry(5) })
	done := v.wait(task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.Equal(t, flakyAttempts+1, done.Attempt)
	require.JSONEq(t, `"third time lucky"`, projection(t, done.Output))
	types := v.checkLog(done)
	require.Equal(t, flakyAttempts, count(types, "task.attempt_failed"), "%v", types)
	require.Equal(t, flakyAttempts+1, count(types, store.EventResponseInProgress), "%v", types)

	// Without a policy a task has one attempt.
	task = v.create(modFlaky, "echo", `1`, nil)
	done = v.wait(task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.Equal(t, "flaky", done.Error.Type)
	require.Equal(t, 1, done.Attempt)
}
