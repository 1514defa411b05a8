package storetest

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// raceCount is the number of cancel-vs-complete races per order
// (persistence §11.2: the cancel transition is atomic).
const raceCount = 1000

// MustRunningMany brings n tasks to running with a few concurrent writers,
// as a busy runtime would, and returns them.
func MustRunningMany(tb testing.TB, s store.Store, n int) []*store.Task {
	tb.Helper()
	ctx := tb.Context()
	tasks := make([]*store.Task, n)
	parallel(tb, n, 32, func(i int) error {
		t, err := s.TaskInsert(ctx, &store.TaskInsertParams{Module: "echo", ModuleDigest: Digest, Function: "echo"})
		tasks[i] = t
		return err
	})
	parallel(tb, n, 32, func(i int) error {
		if _, err := s.TaskTransition(ctx, &store.TaskTransitionParams{ID: tasks[i].ID, From: []store.Status{store.StatusQueued}, To: store.StatusLoading}); err != nil {
			return err
		}
		t, err := s.TaskTransition(ctx, &store.TaskTransitionParams{ID: tasks[i].ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		tasks[i] = t
		return err
	})
	return tasks
}

// parallel runs fn(0..n-1) on the given number of goroutines and fails on
// the first error.
func parallel(tb testing.TB, n, workers int, fn func(i int) error) {
	tb.Helper()
	var (
		wg   sync.WaitGroup
		next = make(chan int)
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	require.Empty(tb, errs)
}

func testCancelCompleteRace(t *testing.T, newStore func(testing.TB) store.Store) {
	s := newStore(t)
	ctx := t.Context()
	type outcome struct {
		cancelTask    *store.Task
		cancelChanged bool
		cancelErr     error
		completeTask  *store.Task
		completeErr   error
	}
	wins := map[string]int{}
	for _, order := range []string{"CancelFirst", "CompleteFirst"} {
		tasks := MustRunningMany(t, s, raceCount)
		outcomes := make([]outcome, raceCount)
		cancel := func(i int) {
			o := &outcomes[i]
			o.cancelTask, o.cancelChanged, o.cancelErr = s.TaskCancel(ctx, tasks[i].ID)
		}
		complete := func(i int) {
			o := &outcomes[i]
			o.completeTask, o.completeErr = s.TaskTransition(ctx, &store.TaskTransitionParams{
				ID: tasks[i].ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: Frame("done"),
			})
		}
		first, second := cancel, complete
		if order == "CompleteFirst" {
			first, second = complete, cancel
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i := range raceCount {
			sem <- struct{}{}
			wg.Add(2)
			go func() { defer wg.Done(); first(i) }()
			runtime.Gosched()
			go func() { defer wg.Done(); second(i); <-sem }()
		}
		wg.Wait()

		for i, o := range outcomes {
			id := tasks[i].ID
			require.NoError(t, o.cancelErr, "race %s/%d: cancel", order, i)
			completeLost := isConflict(t, o.completeErr)
			require.NotNil(t, o.completeTask, "race %s/%d: the loser sees the task", order, i)
			switch {
			case o.cancelChanged && completeLost:
				wins["cancel"]++
				require.Equal(t, store.StatusCancelling, o.cancelTask.Status)
				require.Equal(t, store.StatusCancelling, o.completeTask.Status, "race %s/%d: the completion sees the cancel", order, i)
				MustTransition(t, s, &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})
			case !o.cancelChanged && !completeLost:
				wins["complete"]++
				require.Equal(t, store.StatusCompleted, o.completeTask.Status)
				require.Equal(t, store.StatusCompleted, o.cancelTask.Status, "race %s/%d: the cancel sees the completion", order, i)
			default:
				t.Fatalf("race %s/%d: cancel changed=%v, completion lost=%v: exactly one must win", order, i, o.cancelChanged, completeLost)
			}
			final := MustCheckLog(t, s, id)
			require.True(t, final.Status.IsTerminal())
		}
	}
	t.Logf("%d races: cancel won %d, complete won %d", 2*raceCount, wins["cancel"], wins["complete"])
	require.Positive(t, wins["cancel"], "no race was won by the cancel")
	require.Positive(t, wins["complete"], "no race was won by the completion")
}
