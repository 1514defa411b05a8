package journal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// TestCancelRequest covers the cancel future: it resolves where the
// request stands in the log, so await answers the same on every replay
// whatever arrives after it; the request names the child tasks open at
// that point once; a second request changes nothing; a query replay sees
// it too.
func TestCancelRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := &store.Task{ID: "task_wf", Attempt: 1, Module: "wf", ModuleDigest: "sha256:own", StartedAt: now.Add(-time.Second)}
	in := []byte{0xc3, 0x01}
	apply := func(j *Journal, ev Event, at time.Time) {
		t.Helper()
		d, err := Encode(ev)
		require.NoError(t, err)
		require.NoError(t, j.Apply(&store.Event{Seq: j.LastSeq() + 1, Type: d.Type, Payload: d.Payload, CreatedAt: at}))
	}

	r := NewReplay(task, New(task), now, Record, nil)
	a, err := r.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in})
	require.NoError(t, err)
	_, err = r.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in})
	require.NoError(t, err)
	_, ready, err := r.Await(ctx, []int64{a, CancelFuture}, false)
	require.NoError(t, err)
	require.False(t, ready, "nothing resolved: the run suspends")
	j := New(task) // the log a later run reads
	commit(t, j, r, now)
	require.False(t, j.CancelRequested())
	require.Nil(t, j.TakeCancelTargets())
	first, second := r.Children()[0].ID, r.Children()[1].ID

	// a ends, then the request comes, then b ends.
	apply(j, &ActivityCompleted{TaskID: first, Output: store.Payload{Codec: "avro", Data: in}}, now.Add(time.Second))
	apply(j, &CancelRequested{ClientID: "cli_a"}, now.Add(2*time.Second))
	require.True(t, j.CancelRequested())
	require.Equal(t, []string{second}, j.TakeCancelTargets(), "the child open at the request, once")
	require.Nil(t, j.TakeCancelTargets())
	apply(j, &ActivityCompleted{TaskID: second, Output: store.Payload{Codec: "avro", Data: in}}, now.Add(3*time.Second))
	apply(j, &CancelRequested{}, now.Add(4*time.Second))
	require.Nil(t, j.TakeCancelTargets(), "a second request changes nothing")

	for _, mode := range []Mode{Record, Check} {
		r := NewReplay(task, j, now.Add(5*time.Second), mode, nil)
		ra, _ := r.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in})
		rb, _ := r.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in})
		i, ready, err := r.Await(ctx, []int64{ra, CancelFuture}, false)
		require.NoError(t, err)
		require.True(t, ready)
		require.Equal(t, 0, i, "a ended before the request")
		i, ready, err = r.Await(ctx, []int64{rb, CancelFuture}, false)
		require.NoError(t, err)
		require.True(t, ready)
		require.Equal(t, 1, i, "the request came before b ended, whatever came since")
		require.Equal(t, now.Add(2*time.Second), r.Now(), "the workflow's clock moves to the request")
		i, ready, err = r.Await(ctx, []int64{ra, CancelFuture}, true)
		require.NoError(t, err)
		require.True(t, ready)
		require.Equal(t, 0, i, "all: a ended before the request")
		i, ready, err = r.Await(ctx, []int64{CancelFuture, ra, rb}, true)
		require.NoError(t, err)
		require.True(t, ready)
		require.Equal(t, 0, i, "all: the request came before the last of them, and answers at its index")
		i, _, err = r.Await(ctx, []int64{ra, rb, CancelFuture}, true)
		require.NoError(t, err)
		require.Equal(t, 2, i)
		res, err := r.Result(ctx, CancelFuture)
		require.NoError(t, err)
		require.Equal(t, OutcomeValue, res.Outcome)
		require.Equal(t, nullFrame, res.Frame)
		_, _, err = r.Await(ctx, []int64{-1}, false)
		require.Error(t, err, "no future has a negative id")
	}
	require.Contains(t, j.String(), "res cancel order=")
}
