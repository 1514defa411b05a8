package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// TestIdempotencyCompletedWithTheTask creates a task under an idempotency
// key held in the store: the key is completed with the reply in the
// transaction of the insert, and without a key in flight nothing is
// created.
func TestIdempotencyCompletedWithTheTask(t *testing.T) {
	t.Parallel()
	e, b := setup(t, echo, nil)
	beginKey(t, b.db, "cli_a", "create-1", "POST /v1/tasks")
	reply := &IdempotencyReply{Key: "create-1", StatusCode: 202, Body: func(task *store.Task) ([]byte, error) {
		return []byte(`{"id":"` + task.ID + `","status":"` + string(task.Status) + `"}`), nil
	}}
	task, err := e.TaskCreate(t.Context(), &TaskCreateParams{ClientID: "cli_a", Module: "test", Function: "echo", Idempotency: reply})
	require.NoError(t, err)
	res := keyOutcome(t, b.db, "cli_a", "create-1", "POST /v1/tasks")
	require.Equal(t, store.IdempotencyReplay, res.Outcome)
	require.Equal(t, 202, res.Key.StatusCode)
	require.Equal(t, `{"id":"`+task.ID+`","status":"queued"}`, string(res.Key.Body))
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
}
