package enginetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
)

// promptly bounds how long a cancelled call may take to stop: the kit's
// sleep looks for the cancel every 5 ms, and wazero stops a busy loop at
// once.
const promptly = 10 * time.Second

// long is the input of a sleep that only a cancel ends within the test.
const long = `{"ms":600000}`

// testCancelQueued: a queued task is cancelled at once and never runs.
func testCancelQueued(t *testing.T, h *Harness) {
	v := newEnv(t, h, func(c *runtime.Config) { c.Workers = 1 })
	blocker := v.create(modActivities, "sleep", long, nil)
	v.waitFor(blocker.ID, "running", func(t *store.Task) bool { return t.Status == store.StatusRunning })
	queued := v.create(modActivities, "echo", `1`, nil)
	require.Equal(t, store.StatusQueued, queued.Status, "the only worker is busy")

	got, err := v.e.TaskCancel(t.Context(), admin, queued.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusCancelled, got.Status, "a queued task is cancelled at once")
	done := v.wait(queued.ID)
	require.Equal(t, store.StatusCancelled, done.Status)
	require.Equal(t, []string{store.EventResponseCreated, store.EventResponseCancelled}, v.checkLog(done), "it never ran")

	// Cancelling again, or a finished task, changes nothing.
	again, err := v.e.TaskCancel(t.Context(), admin, queued.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusCancelled, again.Status)
	require.Equal(t, done.LastSeq, again.LastSeq)

	_, err = v.e.TaskCancel(t.Context(), admin, blocker.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusCancelled, v.wait(blocker.ID).Status)
}

// testCancelRunning: cancelling a running call stops it promptly, be it a
// plugin that looks for the cancel (sleep) or a busy loop (spin), and the
// task ends cancelled without a retry.
func testCancelRunning(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	for _, fn := range []string{"sleep", "spin"} {
		input := long
		if fn == "spin" {
			input = ""
		}
		task := v.create(modActivities, fn, input, func(p *runtimeParams) { p.Retry = fastRetry(5) })
		v.waitEvent(task.ID, store.EventResponseInProgress)

		start := time.Now()
		got, err := v.e.TaskCancel(t.Context(), admin, task.ID)
		require.NoError(t, err)
		require.Contains(t, []store.Status{store.StatusCancelling, store.StatusCancelled}, got.Status)
		done := v.wait(task.ID)
		require.Less(t, time.Since(start), promptly, "%s stops promptly", fn)
		require.Equal(t, store.StatusCancelled, done.Status, "%s: %+v", fn, done.Error)
		require.Equal(t, 1, done.Attempt, "%s: a cancelled call is not retried", fn)
		types := v.checkLog(done)
		require.Equal(t, 1, count(types, store.EventResponseInProgress), "%s: %v", fn, types)
	}
}

// testCancelAtStart: a cancel that arrives right after a task is created,
// while its worker takes it up, is never lost: with a worker idle the task
// starts in its creating transaction, before its call is registered, and
// the cancel may commit in between. Each long call stops promptly.
func testCancelAtStart(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	for i := range 16 {
		task := v.create(modActivities, "sleep", long, nil)
		if i%2 == 1 {
			time.Sleep(time.Duration(i) * 100 * time.Microsecond)
		}
		_, err := v.e.TaskCancel(t.Context(), admin, task.ID)
		require.NoError(t, err)
		start := time.Now()
		done := v.wait(task.ID)
		require.Less(t, time.Since(start), promptly, "round %d", i)
		require.Equal(t, store.StatusCancelled, done.Status, "round %d: %+v", i, done.Error)
		v.checkLog(done)
	}
}
