package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

func TestFinishWatch(t *testing.T) {
	t.Parallel()
	var f finishWatch
	a, stopA := f.add("t1")
	b, stopB := f.add("t1")
	other, stopOther := f.add("t2")
	defer stopOther()
	stopB()
	f.done("t1")
	select {
	case <-a:
	default:
		t.Fatal("the watcher of t1 was not told")
	}
	select {
	case <-b:
		t.Fatal("a stopped watcher was told")
	case <-other:
		t.Fatal("the watcher of t2 was told")
	default:
	}
	stopA() // after done: nothing left to remove
	f.done("t1")
	require.Empty(t, f.m["t1"])
}

// TestTaskRunEndedElsewhere checks that TaskRun returns when its task ends
// by a write the engine did not make (here the store's own cancel of a
// queued task): its periodic read finds the end.
func TestTaskRunEndedElsewhere(t *testing.T) {
	t.Parallel()
	e, b := setup(t, func(ctx context.Context, _ *Call) (*CallResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, func(c *Config) { c.Workers = 1 })
	busy := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo", Input: mustEnvelope(t, codec.Null())})
	defer func() { _, _ = e.TaskCancel(context.Background(), b.admin, busy.ID) }()
	require.Eventually(t, func() bool {
		cur, err := b.db.TaskGet(t.Context(), busy.ID)
		require.NoError(t, err)
		return cur.Status == store.StatusRunning
	}, 10*time.Second, time.Millisecond, "the only worker never got busy")
	type result struct {
		r   *store.Response
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := e.TaskRun(t.Context(), &TaskCreateParams{ClientID: "cli_a", Module: "test", Function: "echo", Input: mustEnvelope(t, codec.Null())})
		got <- result{r, err}
	}()
	var queued *store.Task
	require.Eventually(t, func() bool {
		ts, err := b.db.TaskList(t.Context(), &store.TaskListParams{Statuses: []store.Status{store.StatusQueued}})
		require.NoError(t, err)
		if len(ts) == 1 {
			queued = ts[0]
		}
		return queued != nil
	}, 10*time.Second, time.Millisecond)
	_, _, err := b.db.TaskCancel(t.Context(), queued.ID) // past the engine
	require.NoError(t, err)
	select {
	case res := <-got:
		require.NoError(t, res.err)
		require.Equal(t, store.StatusCancelled, res.r.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("TaskRun never returned")
	}
}
