package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// TestCancelBeforeRegister holds the worker between the commit that made a
// task running (its creating transaction) and the registration of its call,
// cancels it there, and proves the cancel is not lost: the long call never
// runs, or stops at once, and the task ends cancelled.
func TestCancelBeforeRegister(t *testing.T) {
	t.Parallel()
	e, b := setup(t, func(ctx context.Context, _ *Call) (*CallResult, error) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(time.Minute):
			return nil, nil
		}
	}, func(c *Config) { c.Workers = 1 })
	type hold struct {
		id      string
		release chan struct{}
	}
	holds := make(chan hold)
	e.hookRegister = func(id string) {
		h := hold{id: id, release: make(chan struct{})}
		holds <- h
		<-h.release
	}
	var task *store.Task
	for round := 0; ; round++ {
		require.Less(t, round, 100, "no task started in its creating transaction")
		task = mustCreate(t, e, TaskCreateParams{Function: "work"})
		h := <-holds
		require.Equal(t, task.ID, h.id)
		// The cancel commits while the worker is held before registering.
		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		close(h.release)
		if task.Status == store.StatusRunning {
			require.Equal(t, store.StatusCancelling, got.Status)
			break
		}
		// The worker was not idle yet, and the task was claimed: it is
		// loading until the call is registered, and the cancel ended it.
		require.Equal(t, store.StatusCancelled, got.Status)
		mustFinish(t, e, task.ID)
	}

	start := time.Now()
	done := mustFinish(t, e, task.ID)
	require.Equal(t, store.StatusCancelled, done.Status)
	require.Less(t, time.Since(start), 10*time.Second, "the cancelled call did not run on")
	require.Zero(t, b.exec.callCount(), "a task cancelled before its call was registered never calls the plugin")
	evs := mustEvents(t, e, b.admin, task.ID, -1)
	requireGapless(t, evs, 0)
	require.Equal(t, store.EventResponseCancelled, evs[len(evs)-1].Type)
}

// TestCancelBeforeRegisterActivity is TestCancelBeforeRegister for an
// activity that its workflow's commit started and handed to the same
// worker: the workflow is cancelled while the worker is held before the
// activity's registration, and the activity never runs.
func TestCancelBeforeRegisterActivity(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	g := &guest{
		activities: map[string]guestActivity{
			"long": func(ctx context.Context, _ codec.Value) (codec.Value, error) {
				calls.Add(1)
				select {
				case <-ctx.Done():
					return codec.Null(), context.Cause(ctx)
				case <-time.After(time.Minute):
					return codec.Null(), nil
				}
			},
		},
		workflows: map[string]guestWorkflow{
			"one": func(g *wf, _ codec.Value) (codec.Value, error) {
				return g.get(g.activity("long", codec.Null()))
			},
		},
	}
	e, b := wfSetup(t, g, func(c *Config) { c.Workers = 1 })
	held := make(chan string, 1)
	release := make(chan struct{})
	e.hookRegister = func(id string) {
		if cur, err := b.db.TaskGet(context.Background(), id); err == nil && cur.ParentTaskID != "" {
			held <- id // an activity
			<-release
		}
	}
	task := start(t, e, "one", codec.Null(), "")
	child := <-held
	require.NotEqual(t, task.ID, child)
	cur, err := b.db.TaskGet(t.Context(), child)
	require.NoError(t, err)
	require.Equal(t, store.StatusRunning, cur.Status, "started by its workflow's commit")
	require.Equal(t, task.ID, cur.ParentTaskID)

	_, err = e.TaskCancel(t.Context(), b.admin, task.ID)
	require.NoError(t, err)
	close(release)

	start := time.Now()
	require.Equal(t, store.StatusCancelled, mustFinish(t, e, task.ID).Status)
	done := mustFinish(t, e, child)
	require.Equal(t, store.StatusCancelled, done.Status)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Zero(t, calls.Load(), "the cancelled activity never ran")
}
