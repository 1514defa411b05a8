package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// TestDrain checks the graceful half of a stop: calls in progress may
// finish within the grace period, nothing starts meanwhile, and the calls
// still running when it ends are named and left to start-up recovery.
func TestDrain(t *testing.T) {
	t.Parallel()

	t.Run("RunningCallsFinish", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		var calls atomic.Int32
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			calls.Add(1)
			select {
			case <-release:
				return echo(ctx, call)
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}, nil)
		running := mustCreate(t, e, TaskCreateParams{Function: "work"})
		mustStatus(t, e, running.ID, store.StatusRunning)
		require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)

		drained := make(chan []string, 1)
		go func() { drained <- e.Drain(t.Context(), 30*time.Second) }()
		require.Eventually(t, e.draining.Load, 10*time.Second, time.Millisecond)
		// Created while draining: accepted, but it does not start.
		late := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, store.StatusQueued, late.Status)
		select {
		case ids := <-drained:
			t.Fatalf("Drain returned %v while a call was running", ids)
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		require.Empty(t, <-drained)
		done, err := b.db.TaskGet(t.Context(), running.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, done.Status, "the call in progress finished within the grace")
		got, err := b.db.TaskGet(t.Context(), late.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, got.Status, "nothing starts while draining")
		require.Equal(t, int32(1), calls.Load())
	})

	t.Run("GraceEnds", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, func(ctx context.Context, _ *Call) (*CallResult, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, nil)
		stuck := mustCreate(t, e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartFail})
		mustStatus(t, e, stuck.ID, store.StatusRunning)
		require.Eventually(t, func() bool { return e.running.len() == 1 }, 10*time.Second, time.Millisecond)
		start := time.Now()
		ids := e.Drain(t.Context(), 100*time.Millisecond)
		require.Equal(t, []string{stuck.ID}, ids)
		require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
		require.NoError(t, e.Close(t.Context()))
		got, err := b.db.TaskGet(t.Context(), stuck.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status, "an interrupted task is left to start-up recovery")
	})

	t.Run("NoGrace", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		require.Empty(t, e.Drain(t.Context(), 0))
		late := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, store.StatusQueued, late.Status)
	})
}
