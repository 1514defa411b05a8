package runtime

import (
	"crypto/sha256"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func TestIdempotency(t *testing.T) {
	t.Parallel()
	digest := func(s string) []byte {
		sum := sha256.Sum256([]byte(s))
		return sum[:]
	}

	t.Run("ParallelBeginOneKey", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		const n = 50
		var (
			wg              sync.WaitGroup
			mu              sync.Mutex
			fresh, inFlight int
		)
		for range n {
			wg.Go(func() {
				replay, err := e.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {}"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && replay == nil:
					fresh++
				case fault.CodeOf(err) == fault.IdempotencyKeyInFlight:
					inFlight++
				default:
					t.Errorf("unexpected outcome %+v, %v", replay, err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, fresh, "exactly one request runs")
		require.Equal(t, n-1, inFlight)

		require.NoError(t, e.IdempotencyComplete(t.Context(), "cli_a", "key-1", 202, []byte(`{"id":"task_1"}`)))
		replay, err := e.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {}"))
		require.NoError(t, err)
		require.Equal(t, &Replay{StatusCode: 202, Body: []byte(`{"id":"task_1"}`)}, replay)

		_, err = e.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {\"x\":1}"))
		require.Equal(t, fault.IdempotencyKeyReused, fault.CodeOf(err))

		replay, err = e.IdempotencyBegin(t.Context(), "cli_b", "key-1", digest("POST /v1/tasks {}"))
		require.NoError(t, err)
		require.Nil(t, replay, "keys are per client")
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		replay, err := e.IdempotencyBegin(t.Context(), "cli_a", "k", digest("a"))
		require.NoError(t, err)
		require.Nil(t, replay)
		require.NoError(t, e.IdempotencyRelease(t.Context(), "cli_a", "k"))
		replay, err = e.IdempotencyBegin(t.Context(), "cli_a", "k", digest("b"))
		require.NoError(t, err)
		require.Nil(t, replay, "a released key is free again")
		require.Equal(t, fault.Conflict, fault.CodeOf(e.IdempotencyRelease(t.Context(), "cli_a", "other")))
		require.Equal(t, fault.Conflict, fault.CodeOf(e.IdempotencyComplete(t.Context(), "cli_a", "other", 200, nil)))
	})

	t.Run("CompletedWithTheTask", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		replay, err := e.IdempotencyBegin(t.Context(), "cli_a", "create-1", digest("POST /v1/tasks"))
		require.NoError(t, err)
		require.Nil(t, replay)
		reply := &IdempotencyReply{Key: "create-1", StatusCode: 202, Body: func(task *store.Task) ([]byte, error) {
			return []byte(`{"id":"` + task.ID + `","status":"` + string(task.Status) + `"}`), nil
		}}
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{ClientID: "cli_a", Module: "test", Function: "echo", Idempotency: reply})
		require.NoError(t, err)
		replay, err = e.IdempotencyBegin(t.Context(), "cli_a", "create-1", digest("POST /v1/tasks"))
		require.NoError(t, err)
		require.Equal(t, &Replay{StatusCode: 202, Body: []byte(`{"id":"` + task.ID + `","status":"queued"}`)}, replay)
		mustFinish(t, e, task.ID)
		all, _, err := e.TaskList(t.Context(), b.admin, &TaskListParams{})
		require.NoError(t, err)
		require.Len(t, all, 1)

		// Without a key in flight nothing is created.
		_, err = e.TaskCreate(t.Context(), &TaskCreateParams{
			ClientID: "cli_a", Module: "test", Function: "echo",
			Idempotency: &IdempotencyReply{Key: "never-begun", StatusCode: 202, Body: reply.Body},
		})
		require.Equal(t, fault.Conflict, fault.CodeOf(err))
		all, _, err = e.TaskList(t.Context(), b.admin, &TaskListParams{})
		require.NoError(t, err)
		require.Len(t, all, 1)
	})

	t.Run("BadKeys", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		for _, key := range []string{"", strings.Repeat("k", MaxIdempotencyKeyLen+1), "tab\there", "é"} {
			_, err := e.IdempotencyBegin(t.Context(), "cli_a", key, digest("a"))
			require.Equal(t, fault.Invalid, fault.CodeOf(err), "%q", key)
			require.Equal(t, "Idempotency-Key", fault.Param(err))
		}
	})
}
