package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// counter is the plugin of the recovery tests: it counts from its last
// checkpoint (or 0) to 5, saving a checkpoint at each step. In the first
// life of the engine it stops at 3 and waits for the shutdown.
type counter struct {
	mu      sync.Mutex
	stopAt3 bool
	at3     chan string        // receives the task id when a task reached 3
	from    map[string][]int64 // task id → the checkpoint each call started from
	attempt map[string][]int
}

func newCounter() *counter {
	return &counter{stopAt3: true, at3: make(chan string, 16), from: map[string][]int64{}, attempt: map[string][]int{}}
}

func (c *counter) call(ctx context.Context, call *Call) (*CallResult, error) {
	start := int64(0)
	if call.Checkpoint != nil {
		v, err := codec.DecodeFrame(call.Checkpoint)
		if err != nil {
			return nil, err
		}
		start, _ = v.AsLong()
	}
	c.mu.Lock()
	c.from[call.TaskID] = append(c.from[call.TaskID], start)
	c.attempt[call.TaskID] = append(c.attempt[call.TaskID], call.Attempt)
	stop := c.stopAt3
	c.mu.Unlock()
	for i := start + 1; i <= 5; i++ {
		f, err := codec.EncodeFrame(codec.Long(i))
		if err != nil {
			return nil, err
		}
		if err := call.SaveCheckpoint(ctx, f); err != nil {
			return nil, err
		}
		if i == 3 && stop {
			c.at3 <- call.TaskID
			<-ctx.Done()
			return nil, &fault.Error{Code: fault.Cancelled, Message: "stopped"}
		}
	}
	out, err := codec.EncodeFrame(codec.Map(
		codec.Entry{Key: "count", Value: codec.Long(5)},
		codec.Entry{Key: "resumed_from", Value: codec.Long(start)},
	))
	return &CallResult{Output: out}, err
}

func (c *counter) starts(id string) ([]int64, []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.from[id]...), append([]int(nil), c.attempt[id]...)
}

func TestRecovery(t *testing.T) {
	t.Parallel()
	b := mustStore(t)
	cnt := newCounter()
	b.exec.CallFunc = cnt.call
	first := mustOpen(t, b.engineConfig(t))
	_, err := first.Modules().Deploy(t.Context(), "test", testWasm)
	require.NoError(t, err)

	// Four tasks stopped at 3 by the shutdown, one per fate.
	policies := map[string]store.OnRestart{
		"resume": store.OnRestartResume, "retry": store.OnRestartRetry,
		"fail": store.OnRestartFail, "cancel": store.OnRestartResume,
	}
	ids := map[string]string{}
	for name, p := range policies {
		ids[name] = mustCreate(t, first, TaskCreateParams{Function: "work", OnRestart: p}).ID
	}
	for range policies {
		<-cnt.at3
	}
	require.NoError(t, first.Close(t.Context()))

	for name, id := range ids {
		task, err := b.db.TaskGet(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, task.Status, name)
		v, err := codec.DecodeFrame(task.Checkpoint.Data)
		require.NoError(t, err)
		n, _ := v.AsLong()
		require.EqualValues(t, 3, n, name)
	}
	// A cancel that arrived while the server was down.
	_, _, err = b.db.TaskCancel(t.Context(), ids["cancel"])
	require.NoError(t, err)

	cnt.mu.Lock()
	cnt.stopAt3 = false
	cnt.mu.Unlock()
	second := mustOpen(t, b.engineConfig(t))

	// resume: continues from checkpoint 3 in the same attempt.
	done := mustFinish(t, second, ids["resume"])
	require.Equal(t, store.StatusCompleted, done.Status)
	out, err := codec.DecodeFrame(done.Output.Data)
	require.NoError(t, err)
	from, _ := out.Get("resumed_from")
	n, _ := from.AsLong()
	require.EqualValues(t, 3, n)
	starts, attempts := cnt.starts(ids["resume"])
	require.Equal(t, []int64{0, 3}, starts)
	require.Equal(t, []int{1, 1}, attempts)
	evs := mustEvents(t, second, b.admin, ids["resume"], -1)
	requireGapless(t, evs, 0)
	require.Contains(t, eventTypes(evs), store.EventRecovered)

	// retry: a new attempt from scratch.
	done = mustFinish(t, second, ids["retry"])
	require.Equal(t, store.StatusCompleted, done.Status)
	starts, attempts = cnt.starts(ids["retry"])
	require.Equal(t, []int64{0, 0}, starts)
	require.Equal(t, []int{1, 2}, attempts)

	// fail: failed with server_restarted and a response.failed event.
	done = mustFinish(t, second, ids["fail"])
	require.Equal(t, store.StatusFailed, done.Status)
	require.Equal(t, string(fault.ServerRestarted), done.Error.Code)
	evs = mustEvents(t, second, b.admin, ids["fail"], -1)
	require.Equal(t, store.EventResponseFailed, evs[len(evs)-1].Type)
	starts, _ = cnt.starts(ids["fail"])
	require.Len(t, starts, 1, "a failed task does not run again")

	// cancelling: cancelled with a response.cancelled event.
	done = mustFinish(t, second, ids["cancel"])
	require.Equal(t, store.StatusCancelled, done.Status)
	evs = mustEvents(t, second, b.admin, ids["cancel"], -1)
	require.Equal(t, store.EventResponseCancelled, evs[len(evs)-1].Type)
}

func TestRecoveryWakesWaitingRetries(t *testing.T) {
	t.Parallel()
	b := mustStore(t)
	var calls atomic.Int32
	b.exec.CallFunc = func(ctx context.Context, call *Call) (*CallResult, error) {
		if calls.Add(1) == 1 {
			return &CallResult{Error: &PluginError{Type: "Flaky", Message: "first attempt fails"}}, nil
		}
		return echo(ctx, call)
	}
	cfg := b.engineConfig(t)
	cfg.PollInterval = time.Hour // only the due-time timer can start the retry
	first := mustOpen(t, cfg)
	_, err := first.Modules().Deploy(t.Context(), "test", testWasm)
	require.NoError(t, err)
	task := mustCreate(t, first, TaskCreateParams{
		Function: "work", OnRestart: store.OnRestartRetry,
		Retry: &store.RetryPolicy{InitialInterval: 300 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 2},
	})
	var queued *store.Task
	require.Eventually(t, func() bool {
		var err error
		queued, err = b.db.TaskGet(context.Background(), task.ID)
		require.NoError(t, err)
		return queued.Status == store.StatusQueued && queued.Attempt == 1
	}, 10*time.Second, time.Millisecond, "the first attempt never failed")
	require.True(t, queued.NotBefore.After(queued.CreatedAt))
	require.NoError(t, first.Close(t.Context()))

	second := mustOpen(t, cfg)
	done := mustFinish(t, second, task.ID)
	require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
	require.Equal(t, 2, done.Attempt)
	require.False(t, done.FinishedAt.Before(queued.NotBefore), "the retry waited for its backoff")
}
