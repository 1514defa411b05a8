package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// MustStatus brings a new task with the given policy to an unfinished
// status, with a checkpoint when it runs.
func MustStatus(tb testing.TB, s store.Store, st store.Status, p store.OnRestart) *store.Task {
	tb.Helper()
	params := &store.TaskInsertParams{OnRestart: p}
	switch st {
	case store.StatusQueued:
		return MustInsertTask(tb, s, params)
	case store.StatusLoading:
		return MustLoading(tb, s, MustInsertTask(tb, s, params).ID)
	case store.StatusRunning, store.StatusCancelling:
		t := MustRunning(tb, s, params)
		t, err := s.TaskCheckpoint(tb.Context(), &store.TaskCheckpointParams{ID: t.ID, Checkpoint: Frame("snapshot")})
		require.NoError(tb, err)
		if st == store.StatusCancelling {
			t, _, err = s.TaskCancel(tb.Context(), t.ID)
			require.NoError(tb, err)
		}
		return t
	}
	tb.Fatalf("MustStatus: %s is not an unfinished status", st)
	return nil
}

func testRecover(t *testing.T, newStore func(testing.TB) store.Store) {
	// The whole persistence §11.3 table: 4 states × 3 policies.
	type cell struct {
		name      string
		from      store.Status
		policy    store.OnRestart
		want      store.Status
		lastEvent string // "" when the task must be left untouched
	}
	cells := []cell{
		{"QueuedFail", store.StatusQueued, store.OnRestartFail, store.StatusFailed, store.EventResponseFailed},
		{"QueuedRetry", store.StatusQueued, store.OnRestartRetry, store.StatusQueued, ""},
		{"QueuedResume", store.StatusQueued, store.OnRestartResume, store.StatusQueued, ""},
		{"LoadingFail", store.StatusLoading, store.OnRestartFail, store.StatusFailed, store.EventResponseFailed},
		{"LoadingRetry", store.StatusLoading, store.OnRestartRetry, store.StatusQueued, store.EventStatusChanged},
		{"LoadingResume", store.StatusLoading, store.OnRestartResume, store.StatusQueued, store.EventStatusChanged},
		{"RunningFail", store.StatusRunning, store.OnRestartFail, store.StatusFailed, store.EventResponseFailed},
		{"RunningRetry", store.StatusRunning, store.OnRestartRetry, store.StatusQueued, store.EventStatusChanged},
		{"RunningResume", store.StatusRunning, store.OnRestartResume, store.StatusRunning, store.EventRecovered},
		{"CancellingFail", store.StatusCancelling, store.OnRestartFail, store.StatusCancelled, store.EventResponseCancelled},
		{"CancellingRetry", store.StatusCancelling, store.OnRestartRetry, store.StatusCancelled, store.EventResponseCancelled},
		{"CancellingResume", store.StatusCancelling, store.OnRestartResume, store.StatusCancelled, store.EventResponseCancelled},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := t.Context()
			task := MustStatus(t, s, c.from, c.policy)
			require.Equal(t, c.from, task.Status)
			// A finished task is no leftover and must not change.
			done := MustRunning(t, s, &store.TaskInsertParams{OnRestart: c.policy})
			done = MustTransition(t, s, &store.TaskTransitionParams{ID: done.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})

			res, err := s.TaskRecover(ctx)
			require.NoError(t, err)
			got := MustCheckLog(t, s, task.ID)
			require.Equal(t, c.want, got.Status)
			require.Equal(t, done, MustCheckLog(t, s, done.ID))

			events := MustEvents(t, s, task.ID)
			last := events[len(events)-1]
			if c.lastEvent == "" {
				require.Equal(t, task.LastSeq, got.LastSeq, "left untouched")
				require.Equal(t, 1, res.Queued)
			} else {
				require.Equal(t, task.LastSeq+1, got.LastSeq, "exactly one new event")
				require.Equal(t, c.lastEvent, last.Type)
				var p struct {
					Reason string `json:"reason"`
				}
				require.NoError(t, json.Unmarshal(last.Payload, &p))
				if !store.IsTerminalEvent(last.Type) {
					require.Equal(t, store.CodeServerRestarted, p.Reason)
				}
			}

			switch c.want {
			case store.StatusFailed:
				require.Equal(t, []string{task.ID}, res.Failed)
				require.NotNil(t, got.Error)
				require.Equal(t, store.CodeServerRestarted, got.Error.Code)
				resp, err := s.ResponseGet(ctx, task.ResponseID())
				require.NoError(t, err)
				require.Equal(t, store.CodeServerRestarted, resp.Error.Code)
				var doc store.Response
				require.NoError(t, json.Unmarshal(last.Payload, &doc))
				require.Equal(t, store.CodeServerRestarted, doc.Error.Code)
			case store.StatusCancelled:
				require.Equal(t, []string{task.ID}, res.Cancelled)
				resp, err := s.ResponseGet(ctx, task.ResponseID())
				require.NoError(t, err)
				require.Equal(t, store.StatusCancelled, resp.Status)
			case store.StatusRunning:
				require.Equal(t, []string{task.ID}, res.Resumed)
				require.Equal(t, Frame("snapshot"), got.Checkpoint, "resume keeps the checkpoint")
				require.Equal(t, task.Attempt, got.Attempt)
			case store.StatusQueued:
				if c.from != store.StatusQueued {
					require.Equal(t, []string{task.ID}, res.Requeued)
					claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 2})
					require.NoError(t, err)
					require.Len(t, claimed, 1, "a requeued task is claimable at once")
					require.Equal(t, task.ID, claimed[0].ID)
				}
				if c.from == store.StatusRunning {
					require.True(t, got.Checkpoint.IsZero(), "retry starts from scratch")
				}
			}

			// Recovery is idempotent for everything it finished.
			again, err := s.TaskRecover(ctx)
			require.NoError(t, err)
			require.Empty(t, again.Failed)
			require.Empty(t, again.Cancelled)
		})
	}

	t.Run("ManyTasksAndInFlightKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		var ids []string
		for _, st := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling} {
			for _, p := range []store.OnRestart{store.OnRestartFail, store.OnRestartRetry, store.OnRestartResume} {
				for range 3 {
					ids = append(ids, MustStatus(t, s, st, p).ID)
				}
			}
		}
		_, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "k1",
			RequestDigest: hash("r1"), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(t, err)
		res, err := s.TaskRecover(ctx)
		require.NoError(t, err)
		require.Len(t, res.Failed, 9)
		require.Len(t, res.Requeued, 9)
		require.Len(t, res.Resumed, 3)
		require.Len(t, res.Cancelled, 9)
		require.Equal(t, 6, res.Queued)
		require.Equal(t, 1, res.IdempotencyKeysReleased)
		for _, id := range ids {
			MustCheckLog(t, s, id)
		}
		begin, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "k1",
			RequestDigest: hash("r1"), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(t, err)
		require.Equal(t, store.IdempotencyNew, begin.Outcome)
	})
}
