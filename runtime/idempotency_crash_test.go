package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// TestIdempotencyBoundKeyAcrossRestart runs a keyed TaskRun whose engine
// stops before the task ends: the key is bound to the task in the
// transaction of the insert and stays bound after the engine is gone, so
// that a retry after the restart finds that task (access gives it as
// Replay.TaskID) and waits for its response; no second task is made.
func TestIdempotencyBoundKeyAcrossRestart(t *testing.T) {
	t.Parallel()
	b := mustStore(t)
	var second atomic.Bool
	b.exec.CallFunc = func(ctx context.Context, call *Call) (*CallResult, error) {
		if second.Load() {
			return echo(ctx, call)
		}
		<-ctx.Done() // the first engine never finishes it
		return nil, ctx.Err()
	}
	first := mustOpen(t, b.engineConfig(t))
	_, err := first.Modules().Deploy(t.Context(), "test", testWasm)
	require.NoError(t, err)
	const request = "POST /v1/responses {}"
	beginKey(t, b.db, "cli_a", "k", request)
	ran := make(chan error, 1)
	go func() {
		_, err := first.TaskRun(context.Background(), &TaskCreateParams{
			ClientID: "cli_a", Module: "test", Function: "work", OnRestart: store.OnRestartRetry,
			Input: mustEnvelope(t, codec.String("x")), IdempotencyKey: "k",
		})
		ran <- err
	}()
	var id string
	require.Eventually(t, func() bool {
		ts, err := b.db.TaskList(t.Context(), &store.TaskListParams{})
		require.NoError(t, err)
		if len(ts) == 1 {
			id = ts[0].ID
		}
		return id != ""
	}, 10*time.Second, 5*time.Millisecond)

	// The key was bound in the insert's transaction.
	res := keyOutcome(t, b.db, "cli_a", "k", request)
	require.Equal(t, store.IdempotencyTask, res.Outcome)
	require.Equal(t, id, res.Key.TaskID)

	require.NoError(t, first.Close(t.Context()))
	require.Equal(t, fault.Unavailable, fault.CodeOf(<-ran), "the waiting request ends with the engine")
	require.NoError(t, b.db.IdempotencyKeyRelease(t.Context(), &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}),
		"a 5xx releases, but the bound key stays")

	second.Store(true)
	next := mustOpen(t, b.engineConfig(t))
	res = keyOutcome(t, b.db, "cli_a", "k", request)
	require.Equal(t, store.IdempotencyTask, res.Outcome, "the retry finds the committed task")
	require.Equal(t, id, res.Key.TaskID)

	resp, err := next.TaskWait(t.Context(), Caller{ClientID: "cli_a"}, id)
	require.NoError(t, err)
	require.Equal(t, id, resp.TaskID)
	require.Equal(t, store.StatusCompleted, resp.Status)
	_, err = next.TaskWait(t.Context(), Caller{ClientID: "cli_b"}, id)
	require.Equal(t, fault.NotFound, fault.CodeOf(err), "another client's task stays hidden")

	ts, err := b.db.TaskList(t.Context(), &store.TaskListParams{})
	require.NoError(t, err)
	require.Len(t, ts, 1, "no second task")
}
