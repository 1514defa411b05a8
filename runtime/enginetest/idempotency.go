package enginetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// idemCreate is one request under an idempotency key, as the HTTP layer
// makes it: claim the key, and either replay the stored answer or create
// the task with its answer in the same transaction. It returns the task id
// the answer names.
func (v *env) idemCreate(ctx context.Context, key string, digest []byte) (string, error) {
	replay, err := v.acc.IdempotencyBegin(ctx, admin.ClientID, key, digest)
	if err != nil {
		return "", err
	}
	if replay != nil {
		var body struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(replay.Body, &body); err != nil {
			return "", err
		}
		return body.ID, nil
	}
	t, err := v.e.TaskCreate(ctx, &runtime.TaskCreateParams{
		ClientID: admin.ClientID, Admin: true, Module: modActivities, Function: "echo",
		Input: envelope(v.tb, `"once"`),
		Idempotency: &runtime.IdempotencyReply{
			Key: key, StatusCode: 202,
			Body: func(t *store.Task) ([]byte, error) { return json.Marshal(map[string]string{"id": t.ID}) },
		},
	})
	if err != nil {
		_ = v.acc.IdempotencyRelease(ctx, admin.ClientID, key)
		return "", err
	}
	v.acc.IdempotencyCompleted(admin.ClientID, key)
	return t.ID, nil
}

// tasksOf returns the number of tasks of admin's client.
func (v *env) tasksOf() int {
	v.tb.Helper()
	ts, err := v.db.TaskList(v.tb.Context(), &store.TaskListParams{OwnerClientID: admin.ClientID, Limit: 1000})
	require.NoError(v.tb, err)
	return len(ts)
}

// testIdempotency: the same key with the same request twice gives the first
// answer and one task; with another request it is refused; the answer
// survives a restart.
func testIdempotency(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	digest := sha256.Sum256([]byte("POST /v1/tasks echo once"))
	first, err := v.idemCreate(t.Context(), "key-1", digest[:])
	require.NoError(t, err)
	again, err := v.idemCreate(t.Context(), "key-1", digest[:])
	require.NoError(t, err)
	require.Equal(t, first, again, "the same key answers with the same task")
	require.Equal(t, 1, v.tasksOf())

	other := sha256.Sum256([]byte("another request"))
	_, err = v.idemCreate(t.Context(), "key-1", other[:])
	require.Equal(t, fault.IdempotencyKeyReused, fault.CodeOf(err), "%v", err)

	done := v.wait(first)
	require.Equal(t, store.StatusCompleted, done.Status)
	v.checkLog(done)

	v.restart()
	again, err = v.idemCreate(t.Context(), "key-1", digest[:])
	require.NoError(t, err)
	require.Equal(t, first, again, "the key outlives a restart")
	require.Equal(t, 1, v.tasksOf())
}

// testIdempotencyConcurrent: concurrent requests with one key create one
// task; the others are told the first is in flight, or get its answer.
func testIdempotencyConcurrent(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	digest := sha256.Sum256([]byte("POST /v1/tasks echo once"))
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			ids[i], errs[i] = v.idemCreate(context.Background(), "key-c", digest[:])
		})
	}
	close(start)
	wg.Wait()
	var created string
	for i := range n {
		if errs[i] != nil {
			require.Equal(t, fault.IdempotencyKeyInFlight, fault.CodeOf(errs[i]), "%v", errs[i])
			continue
		}
		if created == "" {
			created = ids[i]
		}
		require.Equal(t, created, ids[i], "every answer names the one task")
	}
	require.NotEmpty(t, created, "one request created the task")
	require.Equal(t, 1, v.tasksOf())
	id, err := v.idemCreate(t.Context(), "key-c", digest[:])
	require.NoError(t, err)
	require.Equal(t, created, id)
	require.Equal(t, 1, v.tasksOf())
	require.Equal(t, store.StatusCompleted, v.wait(created).Status)
}
