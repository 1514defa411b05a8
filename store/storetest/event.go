package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testEvent(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("GaplessUnderConcurrentWriters", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustRunning(t, s, nil)
		const writers, each = 16, 25
		var (
			mu   sync.Mutex
			seqs = map[int64]string{}
		)
		parallel(t, writers*each, writers, func(i int) error {
			drafts := []store.EventDraft{{Type: store.EventLog, Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}}
			if i%5 == 0 {
				drafts = append(drafts, store.EventDraft{Type: store.EventLog, Payload: json.RawMessage(fmt.Sprintf(`{"i":%d,"second":true}`, i))})
			}
			evs, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: drafts})
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for j, e := range evs {
				if prev, dup := seqs[e.Seq]; dup {
					return fmt.Errorf("sequence %d given twice (%s)", e.Seq, prev)
				}
				seqs[e.Seq] = string(drafts[j].Payload)
				if j > 0 && e.Seq != evs[j-1].Seq+1 {
					return fmt.Errorf("one call's events are not consecutive: %d after %d", e.Seq, evs[j-1].Seq)
				}
			}
			return nil
		})
		// Status changes interleave with the appends' sequence numbers too.
		MustTransition(t, s, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		got := MustCheckLog(t, s, task.ID)
		require.Equal(t, int64(2+writers*each+writers*each/5+1), got.LastSeq)
		for _, e := range MustEvents(t, s, task.ID) {
			if want, ok := seqs[e.Seq]; ok {
				require.JSONEq(t, want, string(e.Payload), "event %d", e.Seq)
			}
		}
	})

	t.Run("ManyTasksConcurrently", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		tasks := make([]*store.Task, 20)
		for i := range tasks {
			tasks[i] = MustInsertTask(t, s, nil)
		}
		parallel(t, 400, 16, func(i int) error {
			_, err := s.EventAppend(t.Context(), &store.EventAppendParams{
				TaskID: tasks[i%len(tasks)].ID,
				Events: []store.EventDraft{{Type: store.EventLog}},
			})
			return err
		})
		for _, task := range tasks {
			require.Equal(t, int64(20), MustCheckLog(t, s, task.ID).LastSeq)
		}
	})

	t.Run("AppendErrors", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustInsertTask(t, s, nil)
		done := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{ID: done.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
		tests := []struct {
			name string
			p    store.EventAppendParams
			want error
		}{
			{"unknown task", store.EventAppendParams{TaskID: store.NewID(store.TaskIDPrefix), Events: []store.EventDraft{{Type: "x"}}}, store.ErrNotFound},
			{"finished task", store.EventAppendParams{TaskID: done.ID, Events: []store.EventDraft{{Type: "x"}}}, store.ErrTaskFinished},
			{"status type", store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventStatusChanged}}}, store.ErrInvalid},
			{"terminal type", store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventResponseFailed}}}, store.ErrInvalid},
			{"no type", store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{}}}, store.ErrInvalid},
			{"not JSON", store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "x", Payload: json.RawMessage("{")}}}, store.ErrInvalid},
			{"no events", store.EventAppendParams{TaskID: task.ID}, store.ErrInvalid},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.EventAppend(ctx, &tc.p)
				require.ErrorIs(t, err, tc.want)
			})
		}
		require.Equal(t, int64(0), MustCheckLog(t, s, task.ID).LastSeq)
		MustCheckLog(t, s, done.ID)
	})

	t.Run("ListPages", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		task := MustInsertTask(t, s, nil)
		var drafts []store.EventDraft
		for i := range 9 {
			drafts = append(drafts, store.EventDraft{Type: store.EventLog, Payload: json.RawMessage(fmt.Sprintf(`{"line":%d}`, i))})
		}
		evs, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: drafts})
		require.NoError(t, err)
		require.Len(t, evs, 9)
		require.Equal(t, int64(1), evs[0].Seq)
		require.Equal(t, int64(9), evs[8].Seq)
		page, err := s.EventList(ctx, &store.EventListParams{TaskID: task.ID, From: 4, Limit: 3})
		require.NoError(t, err)
		require.Len(t, page, 3)
		require.Equal(t, []int64{4, 5, 6}, []int64{page[0].Seq, page[1].Seq, page[2].Seq})
		require.JSONEq(t, `{"line":3}`, string(page[0].Payload))
		require.Equal(t, evs[3], page[0])
		past, err := s.EventList(ctx, &store.EventListParams{TaskID: task.ID, From: 10})
		require.NoError(t, err)
		require.Empty(t, past)
		_, err = s.EventList(ctx, &store.EventListParams{TaskID: store.NewID(store.TaskIDPrefix)})
		require.ErrorIs(t, err, store.ErrNotFound)
		empty, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "x"}}})
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(empty[0].Payload), "a missing payload is an empty object")
	})

	t.Run("Watch", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		task := MustInsertTask(t, s, nil)
		other := MustInsertTask(t, s, nil)
		ch, stop := s.EventWatch(task.ID)
		defer stop()
		_, err := s.EventAppend(t.Context(), &store.EventAppendParams{TaskID: other.ID, Events: []store.EventDraft{{Type: "x"}}})
		require.NoError(t, err)
		select {
		case <-ch:
			t.Fatal("signalled for another task's event")
		case <-time.After(50 * time.Millisecond):
		}
		_, _, err = s.TaskCancel(t.Context(), task.ID)
		require.NoError(t, err)
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("no signal after a status event committed")
		}
		stop()
		stop() // idempotent
	})

	t.Run("WakeQueuedTask", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		waiting := MustInsertTask(t, s, &store.TaskInsertParams{NotBefore: time.Now().Add(24 * time.Hour)})
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 5})
		require.NoError(t, err)
		require.Empty(t, claimed)
		_, err = s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: waiting.ID, Wake: true,
			Events: []store.EventDraft{{Type: "signal.received", Payload: json.RawMessage(`{"name":"approve"}`)}},
		})
		require.NoError(t, err)
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 5})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, waiting.ID, claimed[0].ID)
		MustCheckLog(t, s, waiting.ID)
	})
}
