package runtime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

func TestCancel(t *testing.T) {
	t.Parallel()

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			entered <- struct{}{}
			<-release
			return echo(ctx, call)
		}, func(c *Config) { c.Workers = 1 })
		blocker := mustCreate(t, e, TaskCreateParams{Function: "work"})
		<-entered
		queued := mustCreate(t, e, TaskCreateParams{Function: "work"})

		got, err := e.TaskCancel(t.Context(), b.admin, queued.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, got.Status)
		close(release)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, blocker.ID).Status)

		evs := mustEvents(t, e, b.admin, queued.ID, -1)
		require.Equal(t, []string{store.EventResponseCreated, store.EventResponseCancelled}, eventTypes(evs))
		require.Equal(t, 1, b.exec.callCount(), "the cancelled task never ran")
	})

	t.Run("Loading", func(t *testing.T) {
		t.Parallel()
		b := mustStore(t)
		b.exec.CallFunc = echo
		compiling := make(chan struct{})
		release := make(chan struct{})
		b.exec.CompileFunc = func(context.Context, []byte) (*ModuleInfo, error) {
			close(compiling)
			<-release
			return testModuleInfo, nil
		}
		wasm := []byte("slow to load")
		_, err := b.files.Put(t.Context(), wasm)
		require.NoError(t, err)
		_, err = b.db.ModuleInsert(t.Context(), &store.ModuleInsertParams{
			Name: "slow", Digest: modules.Digest(wasm), Size: int64(len(wasm)),
			Functions: []store.Function{{Name: "echo", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		e := mustOpen(t, b.engineConfig(t))
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "slow", Function: "echo"})
		require.NoError(t, err)
		<-compiling
		require.Equal(t, store.StatusLoading, mustStatus(t, e, task.ID, store.StatusLoading).Status)

		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, got.Status, "a loading task is cancelled at once")
		close(release)
		// A second task proves the worker moved on without running the
		// cancelled one.
		next, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "slow", Function: "echo"})
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, next.ID).Status)
		require.Equal(t, 1, b.exec.callCount())
		evs := mustEvents(t, e, b.admin, task.ID, -1)
		require.Equal(t, []string{store.EventResponseCreated, store.EventStatusChanged, store.EventResponseCancelled}, eventTypes(evs))
	})

	t.Run("Running", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		stopped := make(chan error, 1)
		e, b := setup(t, func(ctx context.Context, _ *Call) (*CallResult, error) {
			close(entered)
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return nil, &fault.Error{Code: fault.Cancelled, Message: "call cancelled"}
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work", Retry: &store.RetryPolicy{MaximumAttempts: 5}})
		<-entered

		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelling, got.Status)
		require.ErrorIs(t, <-stopped, errCancelRequested, "the plugin call's context was cancelled")
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusCancelled, done.Status)
		require.Equal(t, 1, done.Attempt, "a cancelled call is not retried")

		evs := mustEvents(t, e, b.admin, task.ID, -1)
		requireGapless(t, evs, 0)
		require.Equal(t, []string{
			store.EventResponseCreated, store.EventStatusChanged, store.EventResponseInProgress,
			store.EventStatusChanged, store.EventResponseCancelled,
		}, eventTypes(evs))
	})

	t.Run("WaitingForRetry", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, func(context.Context, *Call) (*CallResult, error) {
			return &CallResult{Error: &PluginError{Type: "Flaky", Message: "later"}}, nil
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{
			Function: "work",
			Retry:    &store.RetryPolicy{InitialInterval: time.Hour, MaximumAttempts: 3},
		})
		require.Eventually(t, func() bool {
			cur, err := b.db.TaskGet(context.Background(), task.ID)
			require.NoError(t, err)
			return cur.Status == store.StatusQueued && cur.Attempt == 1
		}, 10*time.Second, time.Millisecond)
		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, got.Status, "a task waiting for its retry is cancelled at once")
		require.Equal(t, 1, b.exec.callCount())
	})

	t.Run("Finished", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		done := mustFinish(t, e, task.ID)
		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
		require.Equal(t, done.LastSeq, got.LastSeq)
		again, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, done.LastSeq, again.LastSeq, "nothing was written")
	})

	t.Run("RaceWithCompletion", func(t *testing.T) {
		t.Parallel()
		var gates sync.Map // task id → chan struct{} closed to let the call finish
		entered := make(chan string, 64)
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			g, _ := gates.Load(call.TaskID)
			entered <- call.TaskID
			select {
			case <-g.(chan struct{}):
				return echo(ctx, call)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, nil)
		const rounds = 100
		var completed, cancelled int
		for i := range rounds {
			id := store.NewID(store.TaskIDPrefix)
			gate := make(chan struct{})
			gates.Store(id, gate)
			ip, err := e.taskInsertParams(t.Context(), &TaskCreateParams{Module: "test", Function: "work"})
			require.NoError(t, err)
			ip.ID = id
			_, err = e.taskInsert(t.Context(), ip)
			require.NoError(t, err)
			require.Equal(t, id, <-entered)

			var (
				wg   sync.WaitGroup
				got  *store.Task
				cerr error
			)
			wg.Go(func() { got, cerr = e.TaskCancel(context.Background(), b.admin, id) })
			if i%2 == 0 {
				close(gate)
			} else {
				wg.Go(func() { close(gate) })
			}
			wg.Wait()
			require.NoError(t, cerr)

			done := mustFinish(t, e, id)
			evs := mustEvents(t, e, b.admin, id, -1)
			requireGapless(t, evs, 0)
			terminal := 0
			for _, ev := range evs {
				if store.IsTerminalEvent(ev.Type) {
					terminal++
				}
			}
			require.Equal(t, 1, terminal, "exactly one terminal event")
			switch got.Status {
			case store.StatusCancelling:
				require.Equal(t, store.StatusCancelled, done.Status, "a cancel that won stays won")
				cancelled++
			case store.StatusCompleted:
				require.Equal(t, store.StatusCompleted, done.Status)
				completed++
			default:
				t.Fatalf("cancel saw status %s", got.Status)
			}
		}
		t.Logf("of %d races: %d completed first, %d cancelled first", rounds, completed, cancelled)
	})
}
