package access

import (
	"crypto/sha256"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// digest stands for the digest of a request.
func digest(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func TestIdempotency(t *testing.T) {
	t.Parallel()

	t.Run("ParallelBeginOneKey", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t, nil)
		const n = 50
		var (
			wg              sync.WaitGroup
			mu              sync.Mutex
			fresh, inFlight int
		)
		for range n {
			wg.Go(func() {
				replay, err := s.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {}"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && replay == nil:
					fresh++
				case fault.CodeOf(err) == fault.IdempotencyKeyInFlight:
					inFlight++
					require.Equal(t, inFlightRetry, fault.RetryAfterOf(err))
				default:
					t.Errorf("unexpected outcome %+v, %v", replay, err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, fresh, "exactly one request runs")
		require.Equal(t, n-1, inFlight)

		require.NoError(t, s.IdempotencyComplete(t.Context(), "cli_a", "key-1", 202, []byte(`{"id":"task_1"}`)))
		replay, err := s.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {}"))
		require.NoError(t, err)
		require.Equal(t, &Replay{StatusCode: 202, Body: []byte(`{"id":"task_1"}`)}, replay)

		_, err = s.IdempotencyBegin(t.Context(), "cli_a", "key-1", digest("POST /v1/tasks {\"x\":1}"))
		require.Equal(t, fault.IdempotencyKeyReused, fault.CodeOf(err))

		replay, err = s.IdempotencyBegin(t.Context(), "cli_b", "key-1", digest("POST /v1/tasks {}"))
		require.NoError(t, err)
		require.Nil(t, replay, "keys are per client")
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t, nil)
		replay, err := s.IdempotencyBegin(t.Context(), "cli_a", "k", digest("a"))
		require.NoError(t, err)
		require.Nil(t, replay)
		require.NoError(t, s.IdempotencyRelease(t.Context(), "cli_a", "k"))
		replay, err = s.IdempotencyBegin(t.Context(), "cli_a", "k", digest("b"))
		require.NoError(t, err)
		require.Nil(t, replay, "a released key is free again")
		require.Equal(t, fault.Conflict, fault.CodeOf(s.IdempotencyRelease(t.Context(), "cli_a", "other")))
		require.Equal(t, fault.Conflict, fault.CodeOf(s.IdempotencyComplete(t.Context(), "cli_a", "other", 200, nil)))
	})

	t.Run("BadKeys", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t, nil)
		for _, key := range []string{"", strings.Repeat("k", MaxIdempotencyKeyLen+1), "tab\there", "é"} {
			_, err := s.IdempotencyBegin(t.Context(), "cli_a", key, digest("a"))
			require.Equal(t, fault.Invalid, fault.CodeOf(err), "%q", key)
			require.Equal(t, "Idempotency-Key", fault.Param(err))
		}
		_, err := s.IdempotencyBegin(t.Context(), "cli_a", "k", nil)
		require.Equal(t, fault.Invalid, fault.CodeOf(err), "a digest is required")
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		s, _ := setup(t, func(c *Config) { c.Now = clock.Now; c.IdempotencyTTL = time.Hour })
		_, err := s.IdempotencyBegin(t.Context(), "cli_a", "k", digest("a"))
		require.NoError(t, err)
		require.NoError(t, s.IdempotencyComplete(t.Context(), "cli_a", "k", 200, []byte(`{}`)))
		_, err = s.IdempotencyBegin(t.Context(), "cli_a", "k", digest("b"))
		require.Equal(t, fault.IdempotencyKeyReused, fault.CodeOf(err), "within the hour the key is taken")
		clock.Add(time.Hour + time.Second)
		replay, err := s.IdempotencyBegin(t.Context(), "cli_a", "k", digest("b"))
		require.NoError(t, err)
		require.Nil(t, replay, "an expired key is free again")
	})
}

// TestIdempotencyBoundKeyAcrossRestart binds a key to a task in the store,
// as the engine's keyed TaskRun does in the insert's transaction. While the
// Service that holds the key lives, a retry is in flight; a new Service (the
// next process) hands the key, once, to the first retry, as Replay.TaskID.
// A key completed by the engine's transaction and let go with
// IdempotencyCompleted replays its answer.
func TestIdempotencyBoundKeyAcrossRestart(t *testing.T) {
	t.Parallel()
	first, b := setup(t, nil)
	req := digest("POST /v1/responses {}")
	replay, err := first.IdempotencyBegin(t.Context(), "cli_a", "k", req)
	require.NoError(t, err)
	require.Nil(t, replay)
	task, err := b.db.TaskInsert(t.Context(), &store.TaskInsertParams{
		Module: "m", ModuleDigest: "sha256:" + strings.Repeat("0", 64), Function: "f", OwnerClientID: "cli_a",
		IdempotencyTask: &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"},
	})
	require.NoError(t, err)

	_, err = first.IdempotencyBegin(t.Context(), "cli_a", "k", req)
	require.Equal(t, fault.IdempotencyKeyInFlight, fault.CodeOf(err), "its request still runs in this process")
	require.NoError(t, first.IdempotencyRelease(t.Context(), "cli_a", "k"), "a 5xx releases, but the bound key stays")

	next, err := New(b.cfg)
	require.NoError(t, err)
	replay, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", req)
	require.NoError(t, err)
	require.Equal(t, &Replay{TaskID: task.ID}, replay, "the retry attaches to the committed task")
	_, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", req)
	require.Equal(t, fault.IdempotencyKeyInFlight, fault.CodeOf(err), "one retry attaches at a time")
	require.NoError(t, next.IdempotencyComplete(t.Context(), "cli_a", "k", 200, []byte(`{"task_id":"`+task.ID+`"}`)))
	replay, err = next.IdempotencyBegin(t.Context(), "cli_a", "k", req)
	require.NoError(t, err)
	require.Equal(t, 200, replay.StatusCode)

	// A key the engine completed in its own transaction.
	_, err = next.IdempotencyBegin(t.Context(), "cli_a", "c", req)
	require.NoError(t, err)
	_, err = b.db.TaskInsert(t.Context(), &store.TaskInsertParams{
		Module: "m", ModuleDigest: "sha256:" + strings.Repeat("0", 64), Function: "f", OwnerClientID: "cli_a",
		Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "c", StatusCode: 202, Body: []byte(`{}`)},
	})
	require.NoError(t, err)
	next.IdempotencyCompleted("cli_a", "c")
	require.Empty(t, next.keys.keys, "no key is held any more")
	replay, err = next.IdempotencyBegin(t.Context(), "cli_a", "c", req)
	require.NoError(t, err)
	require.Equal(t, &Replay{StatusCode: 202, Body: []byte(`{}`)}, replay)
}
