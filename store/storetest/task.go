package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testTask(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("InsertWritesTaskAndFirstEvent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		before := time.Now().Add(-time.Second)
		in := Frame("input")
		retry := store.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 5, NonRetryableErrorTypes: []string{"bad_input"},
		}
		task := MustInsertTask(t, s, &store.TaskInsertParams{
			Module: "pipeline", ModuleDigest: Digest, Function: "build", Kind: store.KindWorkflow,
			Input: in, OnRestart: store.OnRestartResume, Timeout: 1500 * time.Millisecond,
			MemoryLimit: 32 << 20, Retry: retry, OwnerClientID: "cli_a",
		})
		require.NoError(t, store.CheckID(store.TaskIDPrefix, task.ID))
		require.Equal(t, store.StatusQueued, task.Status)
		require.Equal(t, int64(0), task.LastSeq)
		require.Zero(t, task.Attempt)
		require.True(t, task.CreatedAt.After(before))
		require.Equal(t, task.CreatedAt, task.NotBefore)

		got, err := s.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, task, got)
		require.Equal(t, "pipeline", got.Module)
		require.Equal(t, store.KindWorkflow, got.Kind)
		require.Equal(t, in, got.Input)
		require.Equal(t, store.OnRestartResume, got.OnRestart)
		require.Equal(t, 1500*time.Millisecond, got.Timeout)
		require.Equal(t, int64(32<<20), got.MemoryLimit)
		require.Equal(t, retry, got.Retry)
		require.Equal(t, "cli_a", got.OwnerClientID)

		events := MustEvents(t, s, task.ID)
		require.Len(t, events, 1)
		require.Equal(t, int64(0), events[0].Seq)
		require.Equal(t, store.EventResponseCreated, events[0].Type)
		st, ok := EventStatus(t, events[0])
		require.True(t, ok)
		require.Equal(t, store.StatusQueued, st)
		MustCheckLog(t, s, task.ID)
	})

	t.Run("InsertDefaults", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustInsertTask(t, s, nil)
		require.Equal(t, store.KindActivity, task.Kind)
		require.Equal(t, store.OnRestartFail, task.OnRestart)
		require.True(t, task.Input.IsZero())
		got, err := s.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.True(t, got.Input.IsZero())
		require.Equal(t, store.RetryPolicy{}, got.Retry)
	})

	t.Run("InsertChosenIDAndDuplicate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		id := store.NewID(store.TaskIDPrefix)
		task := MustInsertTask(t, s, &store.TaskInsertParams{ID: id})
		require.Equal(t, id, task.ID)
		_, err := s.TaskInsert(t.Context(), &store.TaskInsertParams{ID: id, Module: "m", ModuleDigest: Digest, Function: "f"})
		require.ErrorIs(t, err, store.ErrExists)
		require.Len(t, MustEvents(t, s, id), 1, "the failed insert wrote nothing")
	})

	t.Run("InsertRejectsBadParams", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ok := func() store.TaskInsertParams {
			return store.TaskInsertParams{Module: "m", ModuleDigest: Digest, Function: "f"}
		}
		tests := []struct {
			name   string
			mutate func(*store.TaskInsertParams)
		}{
			{"no module", func(p *store.TaskInsertParams) { p.Module = "" }},
			{"no function", func(p *store.TaskInsertParams) { p.Function = "" }},
			{"bad digest", func(p *store.TaskInsertParams) { p.ModuleDigest = "sha256:xyz" }},
			{"bad kind", func(p *store.TaskInsertParams) { p.Kind = "job" }},
			{"bad policy", func(p *store.TaskInsertParams) { p.OnRestart = "sometimes" }},
			{"negative timeout", func(p *store.TaskInsertParams) { p.Timeout = -time.Second }},
			{"bad id", func(p *store.TaskInsertParams) { p.ID = "task_nope" }},
			{"parent events without parent", func(p *store.TaskInsertParams) {
				p.ParentEvents = []store.EventDraft{{Type: "activity.scheduled"}}
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				p := ok()
				tc.mutate(&p)
				_, err := s.TaskInsert(t.Context(), &p)
				require.ErrorIs(t, err, store.ErrInvalid)
			})
		}
		list, err := s.TaskList(t.Context(), &store.TaskListParams{})
		require.NoError(t, err)
		require.Empty(t, list)
	})

	t.Run("GetUnknown", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.TaskGet(t.Context(), store.NewID(store.TaskIDPrefix))
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ResponseGet(t.Context(), store.NewID(store.ResponseIDPrefix))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var a, b []*store.Task
		for i := range 5 {
			a = append(a, MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a", Module: "ma"}))
			if i < 3 {
				b = append(b, MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_b", Module: "mb"}))
			}
		}
		MustLoading(t, s, a[1].ID)
		_, _, err := s.TaskCancel(t.Context(), a[2].ID)
		require.NoError(t, err)

		ids := func(ts []*store.Task) []string {
			out := make([]string, len(ts))
			for i, t := range ts {
				out[i] = t.ID
			}
			return out
		}
		ctx := t.Context()
		all, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a"})
		require.NoError(t, err)
		require.Equal(t, ids(a), ids(all))

		page1, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a", Limit: 2})
		require.NoError(t, err)
		page2, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a", Limit: 2, Cursor: page1[1].ID})
		require.NoError(t, err)
		require.Equal(t, ids(a[:4]), append(ids(page1), ids(page2)...))

		newest, err := s.TaskList(ctx, &store.TaskListParams{Module: "mb", Newest: true})
		require.NoError(t, err)
		require.Equal(t, []string{b[2].ID, b[1].ID, b[0].ID}, ids(newest))
		older, err := s.TaskList(ctx, &store.TaskListParams{Module: "mb", Newest: true, Cursor: b[2].ID})
		require.NoError(t, err)
		require.Equal(t, []string{b[1].ID, b[0].ID}, ids(older))

		other := MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_b", Module: "mb", Function: "other"})
		byFunction, err := s.TaskList(ctx, &store.TaskListParams{Module: "mb", Function: "other"})
		require.NoError(t, err)
		require.Equal(t, []string{other.ID}, ids(byFunction))
		byFunction, err = s.TaskList(ctx, &store.TaskListParams{Function: "echo", OwnerClientID: "cli_b"})
		require.NoError(t, err)
		require.Equal(t, ids(b), ids(byFunction))

		st, err := s.TaskList(ctx, &store.TaskListParams{Statuses: []store.Status{store.StatusLoading, store.StatusCancelled}})
		require.NoError(t, err)
		require.Equal(t, []string{a[1].ID, a[2].ID}, ids(st))

		_, err = s.TaskList(ctx, &store.TaskListParams{Statuses: []store.Status{"nope"}})
		require.ErrorIs(t, err, store.ErrInvalid)

		counts, err := s.TaskCount(ctx)
		require.NoError(t, err)
		require.Equal(t, map[store.Status]int{
			store.StatusQueued: 7, store.StatusLoading: 1, store.StatusRunning: 0, store.StatusCancelling: 0,
			store.StatusCompleted: 0, store.StatusFailed: 0, store.StatusCancelled: 1,
		}, counts)
	})

	t.Run("Checkpoint", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		queued := MustInsertTask(t, s, nil)
		cur, err := s.TaskCheckpoint(t.Context(), &store.TaskCheckpointParams{ID: queued.ID, Checkpoint: Frame("cp")})
		require.ErrorIs(t, err, store.ErrConflict)
		require.Equal(t, store.StatusQueued, cur.Status)

		task := MustRunning(t, s, nil)
		got, err := s.TaskCheckpoint(t.Context(), &store.TaskCheckpointParams{
			ID: task.ID, Checkpoint: Frame("cp1"),
			Events: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(`{"step":1}`)}},
		})
		require.NoError(t, err)
		require.Equal(t, Frame("cp1"), got.Checkpoint)
		_, err = s.TaskCheckpoint(t.Context(), &store.TaskCheckpointParams{ID: task.ID, Checkpoint: Frame("cp2")})
		require.NoError(t, err)
		reread := MustCheckLog(t, s, task.ID)
		require.Equal(t, Frame("cp2"), reread.Checkpoint)
		require.Equal(t, "response.created task.status_changed response.in_progress activity.completed",
			types(MustEvents(t, s, task.ID)))

		_, err = s.TaskCheckpoint(t.Context(), &store.TaskCheckpointParams{ID: store.NewID(store.TaskIDPrefix), Checkpoint: Frame("x")})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.TaskCheckpoint(t.Context(), &store.TaskCheckpointParams{ID: task.ID})
		require.ErrorIs(t, err, store.ErrInvalid)
	})
}

func testTransition(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a"})
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, store.StatusLoading, claimed[0].Status)
		require.Equal(t, 1, claimed[0].Attempt)

		running := MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		require.False(t, running.StartedAt.IsZero())
		_, err = s.ResponseGet(ctx, task.ResponseID())
		require.ErrorIs(t, err, store.ErrNotFound, "no response while running")

		out := Frame("output")
		done := MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: out,
		})
		require.Equal(t, out, done.Output)
		require.False(t, done.FinishedAt.IsZero())
		require.Equal(t, int64(3), done.LastSeq)

		got := MustCheckLog(t, s, task.ID)
		require.Equal(t, done, got)
		events := MustEvents(t, s, task.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress response.completed", types(events))

		resp, err := s.ResponseGet(ctx, task.ResponseID())
		require.NoError(t, err)
		require.Equal(t, &store.Response{
			ID: task.ResponseID(), Object: "response", TaskID: task.ID, OwnerClientID: "cli_a",
			Status: store.StatusCompleted, Output: out, CreatedAt: task.CreatedAt, FinishedAt: done.FinishedAt,
		}, resp)

		// The terminal event carries the whole response.
		var doc store.Response
		require.NoError(t, json.Unmarshal(events[3].Payload, &doc))
		doc.OwnerClientID = "cli_a"
		require.Equal(t, resp, &doc)
		var raw map[string]any
		require.NoError(t, json.Unmarshal(events[3].Payload, &raw))
		require.Equal(t, map[string]any{"codec": "avro", "blob": "wwHioz3/VYAiNwpvdXRwdXQ="}, raw["output_envelope"])
	})

	t.Run("Failed", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustRunning(t, s, nil)
		_, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed})
		require.ErrorIs(t, err, store.ErrInvalid, "a failure needs an error")
		e := &store.TaskError{Code: "plugin_error", Message: "boom", Type: "Boom", NonRetryable: true, Details: Frame("why")}
		failed := MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed, Error: e})
		require.Equal(t, e, failed.Error)
		MustCheckLog(t, s, task.ID)
		resp, err := s.ResponseGet(t.Context(), task.ResponseID())
		require.NoError(t, err)
		require.Equal(t, store.StatusFailed, resp.Status)
		require.Equal(t, e, resp.Error)
		require.True(t, resp.Output.IsZero())
	})

	t.Run("CompareAndSetLoserSeesCurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustInsertTask(t, s, nil)
		cur, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.NotNil(t, cur)
		require.Equal(t, store.StatusQueued, cur.Status)
		require.Equal(t, int64(0), MustCheckLog(t, s, task.ID).LastSeq, "the loser wrote nothing")

		_, err = s.TaskTransition(t.Context(), &store.TaskTransitionParams{
			ID: store.NewID(store.TaskIDPrefix), From: []store.Status{store.StatusQueued}, To: store.StatusLoading,
		})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("StateMachine", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustInsertTask(t, s, nil)
		tests := []struct {
			name string
			from []store.Status
			to   store.Status
		}{
			{"no from", nil, store.StatusLoading},
			{"unknown to", []store.Status{store.StatusQueued}, "paused"},
			{"out of terminal", []store.Status{store.StatusCompleted}, store.StatusQueued},
			{"cancelling to completed", []store.Status{store.StatusCancelling}, store.StatusCompleted},
			{"queued to completed", []store.Status{store.StatusQueued}, store.StatusCompleted},
			{"same status", []store.Status{store.StatusQueued}, store.StatusQueued},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{ID: task.ID, From: tc.from, To: tc.to})
				require.ErrorIs(t, err, store.ErrInvalid)
			})
		}
		done := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{ID: done.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		for _, to := range []store.Status{store.StatusFailed, store.StatusCancelled, store.StatusQueued} {
			cur, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{
				ID: done.ID, From: []store.Status{store.StatusRunning}, To: to, Error: &store.TaskError{Code: "x"},
			})
			require.ErrorIs(t, err, store.ErrConflict)
			require.Equal(t, store.StatusCompleted, cur.Status)
		}
		MustCheckLog(t, s, done.ID)
	})

	t.Run("RetryBackoff", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustRunning(t, s, nil)
		_, err := s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: task.ID, Checkpoint: Frame("cp")})
		require.NoError(t, err)
		later := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		q := MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusQueued, NotBefore: later,
			ClearCheckpoint: true, Reason: "retry", Events: []store.EventDraft{{Type: "task.attempt_failed", Payload: json.RawMessage(`{"attempt":1}`)}},
		})
		require.Equal(t, later, q.NotBefore)
		require.True(t, q.Checkpoint.IsZero())
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 5})
		require.NoError(t, err)
		require.Empty(t, claimed, "not claimable before its time")
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 5, Now: later})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, 2, claimed[0].Attempt)
		MustCheckLog(t, s, task.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress task.attempt_failed task.status_changed task.status_changed",
			types(MustEvents(t, s, task.ID)))
	})

	t.Run("EventsBeforeStatusEvent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustRunning(t, s, nil)
		_, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			Events: []store.EventDraft{{Type: store.EventResponseCompleted}},
		})
		require.ErrorIs(t, err, store.ErrInvalid, "status types are reserved")
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			Events: []store.EventDraft{{Type: "task.log", Payload: json.RawMessage(`{"msg":"bye"}`)}},
		})
		events := MustEvents(t, s, task.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress task.log response.completed", types(events))
		MustCheckLog(t, s, task.ID)
	})
}

func testCancel(t *testing.T, newStore func(testing.TB) store.Store) {
	tests := []struct {
		name    string
		setup   func(testing.TB, store.Store) *store.Task
		want    store.Status
		changed bool
		event   string // type of the last event after the cancel
	}{
		{
			"Queued", func(tb testing.TB, s store.Store) *store.Task { return MustInsertTask(tb, s, nil) },
			store.StatusCancelled, true, store.EventResponseCancelled,
		},
		{"Loading", func(tb testing.TB, s store.Store) *store.Task {
			return MustLoading(tb, s, MustInsertTask(tb, s, nil).ID)
		}, store.StatusCancelled, true, store.EventResponseCancelled},
		{
			"Running", func(tb testing.TB, s store.Store) *store.Task { return MustRunning(tb, s, nil) },
			store.StatusCancelling, true, store.EventStatusChanged,
		},
		{"Cancelling", func(tb testing.TB, s store.Store) *store.Task {
			t := MustRunning(tb, s, nil)
			_, _, err := s.TaskCancel(tb.Context(), t.ID)
			require.NoError(tb, err)
			return t
		}, store.StatusCancelling, false, store.EventStatusChanged},
		{"Completed", func(tb testing.TB, s store.Store) *store.Task {
			t := MustRunning(tb, s, nil)
			return MustTransition(tb, s, &store.TaskTransitionParams{ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		}, store.StatusCompleted, false, store.EventResponseCompleted},
		{"Failed", func(tb testing.TB, s store.Store) *store.Task {
			t := MustRunning(tb, s, nil)
			return MustTransition(tb, s, &store.TaskTransitionParams{ID: t.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed, Error: &store.TaskError{Code: "e"}})
		}, store.StatusFailed, false, store.EventResponseFailed},
		{"Cancelled", func(tb testing.TB, s store.Store) *store.Task {
			t := MustInsertTask(tb, s, nil)
			_, _, err := s.TaskCancel(tb.Context(), t.ID)
			require.NoError(tb, err)
			return t
		}, store.StatusCancelled, false, store.EventResponseCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			task := tc.setup(t, s)
			before := MustCheckLog(t, s, task.ID)
			got, changed, err := s.TaskCancel(t.Context(), task.ID)
			require.NoError(t, err)
			require.Equal(t, tc.changed, changed)
			require.Equal(t, tc.want, got.Status)
			after := MustCheckLog(t, s, task.ID)
			require.Equal(t, got, after)
			if !tc.changed {
				require.Equal(t, before, after, "an unchanged task is not written")
			}
			events := MustEvents(t, s, task.ID)
			require.Equal(t, tc.event, events[len(events)-1].Type)
			if tc.want == store.StatusCancelled {
				resp, err := s.ResponseGet(t.Context(), task.ResponseID())
				require.NoError(t, err)
				require.Equal(t, store.StatusCancelled, resp.Status)
			}
		})
	}

	t.Run("CancellingEndsCancelled", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustRunning(t, s, nil)
		_, _, err := s.TaskCancel(t.Context(), task.ID)
		require.NoError(t, err)
		cur, err := s.TaskTransition(t.Context(), &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		require.ErrorIs(t, err, store.ErrConflict, "the completion lost to the cancel")
		require.Equal(t, store.StatusCancelling, cur.Status)
		MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})
		MustCheckLog(t, s, task.ID)
	})

	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, _, err := s.TaskCancel(t.Context(), store.NewID(store.TaskIDPrefix))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// isConflict reports a lost compare-and-set, failing on other errors.
func isConflict(tb testing.TB, err error) bool {
	tb.Helper()
	if err == nil {
		return false
	}
	require.True(tb, errors.Is(err, store.ErrConflict), "unexpected error: %v", err)
	return true
}
