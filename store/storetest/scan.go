package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testPayloadScan(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("ReportsEveryStoredValue", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		queued := MustInsertTask(t, s, &store.TaskInsertParams{Input: Frame("in1")})
		running := MustRunning(t, s, &store.TaskInsertParams{Input: Frame("in2")})
		_, err := s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: running.ID, Checkpoint: Frame("cp")})
		require.NoError(t, err)
		done := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{ID: done.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: Frame("out")})
		failed := MustRunning(t, s, nil)
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: failed.ID, From: []store.Status{store.StatusRunning}, To: store.StatusFailed,
			Error: &store.TaskError{Code: "e", Details: Frame("details")},
		})
		_, err = s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", RequestDigest: hash("r"), ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		require.NoError(t, s.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 202, Body: []byte(`{"ok":true}`)}))
		_, err = s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "pending", RequestDigest: hash("r"), ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)

		got := map[string]store.Payload{}
		docs := map[string]json.RawMessage{}
		require.NoError(t, s.PayloadScan(ctx, func(sp *store.ScannedPayload) error {
			key := fmt.Sprintf("%s[%s].%s", sp.Table, sp.Row, sp.Field)
			if sp.Document != nil {
				require.True(t, sp.Payload.IsZero())
				docs[key] = sp.Document
			} else {
				got[key] = sp.Payload
			}
			return nil
		}))
		require.Equal(t, map[string]store.Payload{
			"tasks[" + queued.ID + "].input":         Frame("in1"),
			"tasks[" + running.ID + "].input":        Frame("in2"),
			"tasks[" + running.ID + "].checkpoint":   Frame("cp"),
			"tasks[" + done.ID + "].output":          Frame("out"),
			"tasks[" + failed.ID + "].error_details": Frame("details"),
		}, got)
		events := 0
		for _, id := range []string{queued.ID, running.ID, done.ID, failed.ID} {
			for _, e := range MustEvents(t, s, id) {
				events++
				doc, ok := docs[fmt.Sprintf("task_events[%s#%d].payload", id, e.Seq)]
				require.True(t, ok, "event %s#%d not scanned", id, e.Seq)
				require.JSONEq(t, string(e.Payload), string(doc))
			}
		}
		require.JSONEq(t, `{"ok":true}`, string(docs["idempotency_keys[cli_a/k].body"]))
		require.Len(t, docs, events+1, "events and the one stored body")
	})

	t.Run("StopsOnError", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for range 3 {
			MustInsertTask(t, s, &store.TaskInsertParams{Input: Frame("x")})
		}
		stop := errors.New("stop")
		calls := 0
		err := s.PayloadScan(t.Context(), func(*store.ScannedPayload) error {
			calls++
			return stop
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls)
	})
}
