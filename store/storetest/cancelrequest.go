package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testCancelRequest covers EventAppendParams.CancelRequest: the first
// request of a workflow is recorded with its event and wakes it; a second
// appends nothing and returns ErrCancelRequested, also when many race; an
// activity or a finished task is refused; the request survives a reopen.
func testCancelRequest(t *testing.T, newStore func(testing.TB) store.Store) {
	request := func(s store.Store, id string) ([]*store.Event, error) {
		return s.EventAppend(t.Context(), &store.EventAppendParams{
			TaskID: id, Events: []store.EventDraft{{Type: "workflow.cancel_requested", Payload: []byte(`{}`)}},
			Wake: true, CancelRequest: true,
		})
	}

	t.Run("Once", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf := MustInsertTask(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow})
		require.True(t, wf.CancelRequestedAt.IsZero())
		evs, err := request(s, wf.ID)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		got, err := s.TaskGet(ctx, wf.ID)
		require.NoError(t, err)
		require.False(t, got.CancelRequestedAt.IsZero(), "the request is on the task")
		require.Equal(t, evs[0].CreatedAt, got.CancelRequestedAt, "at the time of its event")
		require.Equal(t, evs[0].Seq, got.LastSeq)
		require.Equal(t, store.StatusQueued, got.Status, "a request changes no status")

		_, err = request(s, wf.ID)
		require.ErrorIs(t, err, store.ErrCancelRequested)
		again, err := s.TaskGet(ctx, wf.ID)
		require.NoError(t, err)
		require.Equal(t, got.LastSeq, again.LastSeq, "a second request appends nothing")
		require.Equal(t, got.CancelRequestedAt, again.CancelRequestedAt)

		// A plain append keeps the request.
		_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: wf.ID, Events: []store.EventDraft{{Type: "test.note"}}})
		require.NoError(t, err)
		after, err := s.TaskGet(ctx, wf.ID)
		require.NoError(t, err)
		require.Equal(t, got.CancelRequestedAt, after.CancelRequestedAt)
	})

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		act := MustInsertTask(t, s, &store.TaskInsertParams{})
		_, err := request(s, act.ID)
		require.Error(t, err, "an activity takes no cancel request")
		got, err := s.TaskGet(t.Context(), act.ID)
		require.NoError(t, err)
		require.True(t, got.CancelRequestedAt.IsZero())
		require.Equal(t, act.LastSeq, got.LastSeq)

		wf := MustInsertTask(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow})
		MustTransition(t, s, &store.TaskTransitionParams{ID: wf.ID, From: []store.Status{store.StatusQueued}, To: store.StatusCancelled})
		_, err = request(s, wf.ID)
		require.ErrorIs(t, err, store.ErrTaskFinished)

		_, err = request(s, "tsk_missing")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		wf := MustInsertTask(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow})
		var (
			wg             sync.WaitGroup
			mu             sync.Mutex
			ok, refused, n int
		)
		for range 16 {
			wg.Go(func() {
				_, err := request(s, wf.ID)
				mu.Lock()
				defer mu.Unlock()
				n++
				switch {
				case err == nil:
					ok++
				case errors.Is(err, store.ErrCancelRequested):
					refused++
				default:
					t.Errorf("request: %v", err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, ok, "exactly one request is recorded")
		require.Equal(t, 15, refused)
		evs, err := s.EventList(t.Context(), &store.EventListParams{TaskID: wf.ID})
		require.NoError(t, err)
		count := 0
		for _, ev := range evs {
			if ev.Type == "workflow.cancel_requested" {
				count++
			}
		}
		require.Equal(t, 1, count)
	})
}
