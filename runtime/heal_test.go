//go:build linux

package runtime

import (
	"context"
	ossignal "os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// withFullDisk runs fn while every file write of this process fails with
// EFBIG (RLIMIT_FSIZE 0), as on a full disk, and restores the limit
// after. Tests that use it are not parallel: nothing else runs meanwhile.
func withFullDisk(t *testing.T, fn func()) {
	t.Helper()
	ossignal.Ignore(syscall.SIGXFSZ)
	var old unix.Rlimit
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, nil, &old))
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: old.Max}, nil))
	defer func() { require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, &old, nil)) }()
	fn()
}

// healState returns how many writes wait and how many were left to
// recovery.
func healState(e *Engine) (waiting, left int) {
	e.healer.mu.Lock()
	defer e.healer.mu.Unlock()
	return len(e.healer.items), e.healer.left
}

// TestHealAfterStoreRefusal ends three running activities while the disk
// is full: their completions fail. Two fit the retry queue (MaxTasks 2)
// and the engine is not ready; the third is left to start-up recovery.
// Once writes succeed again, the two complete without a restart, each
// log gapless with one terminal event, the engine is ready again, and the
// third is still running, for recovery.
func TestHealAfterStoreRefusal(t *testing.T) {
	release := make(chan struct{})
	var returned sync.WaitGroup
	returned.Add(3)
	e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
		defer returned.Done()
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return echo(ctx, call)
	}, func(c *Config) {
		c.StoreRetry = StoreRetry{MaxTasks: 2, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	})
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo", Input: mustEnvelope(t, codec.Long(int64(i)))}).ID
	}
	for _, id := range ids {
		mustStatus(t, e, id, store.StatusRunning)
	}
	require.NoError(t, e.StoreError())

	withFullDisk(t, func() {
		close(release)
		returned.Wait()
		require.Eventually(t, func() bool {
			waiting, left := healState(e)
			return waiting+left == 3
		}, 10*time.Second, time.Millisecond)
		waiting, left := healState(e)
		require.Equal(t, 2, waiting)
		require.Equal(t, 1, left)
		// The healer keeps trying and failing meanwhile.
		require.Eventually(t, func() bool {
			e.healer.mu.Lock()
			defer e.healer.mu.Unlock()
			return e.healer.items[0].tries >= 3
		}, 10*time.Second, time.Millisecond)
		require.ErrorContains(t, e.StoreError(), "the store refuses writes: 2 task writes wait")
		for _, id := range ids {
			cur, err := b.db.TaskGet(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, store.StatusRunning, cur.Status)
		}
	})

	completed, running := 0, 0
	require.Eventually(t, func() bool {
		waiting, _ := healState(e)
		return waiting == 0
	}, 10*time.Second, time.Millisecond)
	for _, id := range ids {
		cur, err := b.db.TaskGet(t.Context(), id)
		require.NoError(t, err)
		switch cur.Status {
		case store.StatusCompleted:
			completed++
			evs := mustEvents(t, e, b.admin, id, -1)
			requireGapless(t, evs, 0)
			terminal := 0
			for _, ev := range evs {
				if store.IsTerminalEvent(ev.Type) {
					terminal++
				}
			}
			require.Equal(t, 1, terminal)
		case store.StatusRunning:
			running++
		}
	}
	require.Equal(t, 2, completed)
	require.Equal(t, 1, running, "the write that did not fit is left to start-up recovery")
	require.NoError(t, e.StoreError())
}

// TestHealStartRefused refuses the start of a claimed task (loading to
// running): it goes back to the queue once writes succeed and then runs.
func TestHealStartRefused(t *testing.T) {
	e, b := setup(t, echo, func(c *Config) {
		c.StoreRetry = StoreRetry{MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	})
	w := &worker{e: e}
	task, err := b.db.TaskInsert(t.Context(), &store.TaskInsertParams{
		Module: "test", ModuleDigest: modules.Digest(testWasm),
		Function: "echo", OwnerClientID: "cli_a", Input: store.Payload{Codec: codec.CodecAvro, Data: mustFrame(t, codec.Null())},
		NotBefore: time.Now().Add(time.Hour),
	})
	require.NoError(t, err)
	task, err = b.db.TaskTransition(t.Context(), &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusQueued}, To: store.StatusLoading})
	require.NoError(t, err)
	withFullDisk(t, func() {
		_, ok := w.start(context.Background(), workItem{task: task})
		require.False(t, ok)
		require.Error(t, e.StoreError())
	})
	done := mustFinish(t, e, task.ID)
	require.Equal(t, store.StatusCompleted, done.Status)
	require.Equal(t, 2, done.Attempt, "the refused start counts as an attempt")
	require.NoError(t, e.StoreError())
}

// TestHealWorkflow ends a workflow's second activity while the disk is
// full: the activity's end and the workflow's next run cannot be
// committed. Once writes succeed again, without a restart, the activity's
// end is written, the workflow runs again from its journal and completes
// with every activity's output, each activity's end once in its journal.
func TestHealWorkflow(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	g := &guest{
		activities: map[string]guestActivity{
			"gated": func(ctx context.Context, in codec.Value) (codec.Value, error) {
				if n, _ := in.AsLong(); n == 1 {
					entered <- struct{}{}
					select {
					case <-gate:
					case <-ctx.Done():
						return codec.Null(), ctx.Err()
					}
				}
				return in, nil
			},
		},
		workflows: map[string]guestWorkflow{
			"seq": func(g *wf, in codec.Value) (codec.Value, error) {
				n, _ := in.AsLong()
				var out []codec.Value
				for i := range n {
					out = append(out, g.must(g.activity("gated", codec.Long(i))))
				}
				return codec.List(out...), nil
			},
		},
	}
	e, _ := wfSetup(t, g, func(c *Config) {
		c.StoreRetry = StoreRetry{MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	})
	task := start(t, e, "seq", codec.Long(3), store.OnRestartResume)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the second activity never started")
	}
	withFullDisk(t, func() {
		close(gate)
		require.Eventually(t, func() bool { return e.StoreError() != nil }, 10*time.Second, time.Millisecond)
		require.Eventually(t, func() bool {
			e.healer.mu.Lock()
			defer e.healer.mu.Unlock()
			return len(e.healer.items) > 0 && e.healer.items[0].tries >= 2
		}, 10*time.Second, time.Millisecond)
	})
	done := mustFinish(t, e, task.ID)
	requireValue(t, codec.List(codec.Long(0), codec.Long(1), codec.Long(2)), output(t, done))
	require.Equal(t, []string{
		journal.EventActivityScheduled, journal.EventActivityCompleted,
		journal.EventActivityScheduled, journal.EventActivityCompleted,
		journal.EventActivityScheduled, journal.EventActivityCompleted,
	}, journalTypes(t, e, task.ID))
	evs := allEvents(t, e, task.ID)
	requireGapless(t, evs, 0)
	require.Eventually(t, func() bool { return e.StoreError() == nil }, 10*time.Second, time.Millisecond)
}
