package runtime

import (
	"context"
	"crypto/sha256"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// TestIdempotencyBoundKeyAcrossRestart runs a keyed TaskRun whose engine
// stops before the task ends: the key stays bound to the task, and after
// the restart the first retry attaches to that task (Replay.TaskID) and
// waits for its response; no second task is made.
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
	_, err := first.ModuleDeploy(t.Context(), "test", testWasm)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("POST /v1/responses {}"))
	digest := sum[:]
	writer := &Principal{ClientID: "cli_a", Name: "a", Scopes: []string{ScopeTasksWrite}}

	replay, err := first.IdempotencyBegin(t.Context(), "cli_a", "k", digest)
	require.NoError(t, err)
	require.Nil(t, replay)
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

	// While the first request waits, a retry is in flight.
	_, err = first.IdempotencyBegin(t.Context(), "cli_a", "k", digest)
	require.Equal(t, fault.IdempotencyKeyInFlight, fault.CodeOf(err))

	require.NoError(t, first.Close(t.Context()))
	require.Equal(t, fault.Unavailable, fault.CodeOf(<-ran), "the waiting request ends with the engine")
	require.NoError(t, first.IdempotencyRelease(t.Context(), "cli_a", "k"), "a 5xx releases, but the bound key stays")

	second.Store(true)
	next := mustOpen(t, b.engineConfig(t))
	replay, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", digest)
	require.NoError(t, err)
	require.Equal(t, &Replay{TaskID: id}, replay, "the retry attaches to the committed task")
	_, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", digest)
	require.Equal(t, fault.IdempotencyKeyInFlight, fault.CodeOf(err), "one retry attaches at a time")

	resp, err := next.TaskWait(t.Context(), writer, id)
	require.NoError(t, err, "tasks:write, the scope of the request, is enough")
	require.Equal(t, id, resp.TaskID)
	require.Equal(t, store.StatusCompleted, resp.Status)
	require.NoError(t, next.IdempotencyComplete(t.Context(), "cli_a", "k", 200, []byte(`{"task_id":"`+id+`"}`)))
	replay, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", digest)
	require.NoError(t, err)
	require.Equal(t, 200, replay.StatusCode)

	ts, err := b.db.TaskList(t.Context(), &store.TaskListParams{})
	require.NoError(t, err)
	require.Len(t, ts, 1, "no second task")
}
