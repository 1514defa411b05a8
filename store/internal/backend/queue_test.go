package backend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The queue batches the jobs waiting at once, up to its size, skips a job
// whose caller gave up before it was taken, answers each caller with what
// Finish got, and refuses jobs after Close, which waits for the queued.
func TestQueue(t *testing.T) {
	closedErr := errors.New("closed")
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	q := NewQueue(3, closedErr, func(jobs []*Job[int]) {
		if jobs[0].Work == 0 {
			<-release // hold the committer so that the next jobs queue up
		}
		var ws []int
		for _, j := range jobs {
			ws = append(ws, j.Work)
			j.Finish([]string{"t"}, errorFor(j.Work))
		}
		mu.Lock()
		batches = append(batches, ws)
		mu.Unlock()
	})

	first := make(chan error, 1)
	go func() { _, err := q.Submit(context.Background(), 0); first <- err }()
	require.Eventually(t, func() bool { return q.Pending() == 1 }, 10*time.Second, time.Millisecond)

	// While the committer holds job 0: a job whose caller gives up, then
	// four more.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := q.Submit(ctx, 99); gaveUp <- err }()
	require.Eventually(t, func() bool { return q.Pending() == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)

	var wg sync.WaitGroup
	errs := make([]error, 5)
	touched := make([][]string, 5)
	for i := 1; i <= 4; i++ {
		wg.Go(func() { touched[i], errs[i] = q.Submit(context.Background(), i) })
		require.Eventually(t, func() bool { return q.Pending() == int64(2+i) }, 10*time.Second, time.Millisecond)
	}
	close(release)
	wg.Wait()
	require.NoError(t, <-first)
	for i := 1; i <= 4; i++ {
		require.Equal(t, errorFor(i), errs[i], "job %d", i)
		require.Equal(t, []string{"t"}, touched[i])
	}
	mu.Lock()
	// 99 was queued before 1..4 but never taken; no batch exceeds 3.
	require.Equal(t, [][]int{{0}, {1, 2}, {3, 4}}, batches)
	mu.Unlock()
	require.Zero(t, q.Pending())

	require.NoError(t, q.Close(context.Background()))
	_, err := q.Submit(context.Background(), 5)
	require.ErrorIs(t, err, closedErr)
	<-q.Done()
}

func errorFor(i int) error {
	if i%2 == 0 {
		return nil
	}
	return errors.New("odd")
}
