package journal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// commit appends what run r recorded to the journal a later run reads, as
// the store would write it at time at.
func commit(tb testing.TB, j *Journal, r *Replay, at time.Time) {
	tb.Helper()
	for _, d := range r.Events() {
		require.NoError(tb, j.Apply(&store.Event{Seq: j.LastSeq() + 1, Type: d.Type, Payload: d.Payload, CreatedAt: at}))
	}
}

func eventTypes(r *Replay) []string {
	var out []string
	for _, d := range r.Events() {
		out = append(out, d.Type)
	}
	return out
}

func TestReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := &store.Task{ID: "task_wf", Attempt: 1, Module: "wf", ModuleDigest: "sha256:own", StartedAt: now.Add(-time.Second)}
	digest := func(_ context.Context, module, _ string, _ store.Kind) (string, error) {
		switch module {
		case "other":
			return "sha256:other", nil
		case "broken":
			return "", errors.New("store down")
		}
		return "", fault.Errorf(fault.ModuleNotFound, "module %q not found", module)
	}
	in := []byte{0xc3, 0x01}

	// A first run records each command and what it resolved at once.
	r := NewReplay(task, New(task), now, Record, digest)
	own, err := r.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in, Timeout: time.Second})
	require.NoError(t, err)
	other, err := r.ScheduleActivity(ctx, &ActivityCommand{Module: "other", Function: "echo", Input: in})
	require.NoError(t, err)
	missing, err := r.ScheduleActivity(ctx, &ActivityCommand{Module: "nomodule", Function: "echo", Input: in})
	require.NoError(t, err)
	zero, err := r.StartTimer(ctx, 0)
	require.NoError(t, err)
	later, err := r.StartTimer(ctx, time.Minute)
	require.NoError(t, err)
	sig, err := r.WaitSignal(ctx, "go", -1)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, []int64{own, other, missing, zero, later, sig})
	require.Equal(t, []string{
		EventActivityScheduled, EventActivityScheduled,
		EventActivityScheduled, EventActivityFailed, // an unknown module fails its future at once
		EventTimerStarted, EventTimerFired, // a timer of zero fires within the run
		EventTimerStarted, EventSignalWaiting,
	}, eventTypes(r))
	children := r.Children()
	require.Len(t, children, 2)
	require.Equal(t, "sha256:own", children[0].ModuleDigest, "the workflow's own module runs its own version")
	require.Equal(t, time.Second, children[0].Timeout)
	require.Equal(t, task.ID, children[0].ParentTaskID)
	require.Equal(t, "sha256:other", children[1].ModuleDigest)

	i, ready, err := r.Await(ctx, []int64{own, missing, zero}, false)
	require.NoError(t, err)
	require.True(t, ready)
	require.Equal(t, 1, i, "the activity that could not be scheduled resolved first")
	res, err := r.Result(ctx, missing)
	require.NoError(t, err)
	require.Equal(t, OutcomeError, res.Outcome)
	_, ready, err = r.Await(ctx, []int64{own, zero}, true)
	require.NoError(t, err)
	require.False(t, ready, "the activity is still running")
	require.Equal(t, now.Add(time.Minute), r.WakeAt())
	require.NoError(t, r.Ended("suspended"))
	require.Equal(t, 6, r.Fresh())

	// The next run replays the journal: the same commands, nothing new.
	j := New(task)
	commit(t, j, r, now)
	r2 := NewReplay(task, j, now.Add(2*time.Minute), Record, digest)
	for _, ask := range []func() (int64, error){
		func() (int64, error) {
			return r2.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in, Timeout: time.Second})
		},
		func() (int64, error) {
			return r2.ScheduleActivity(ctx, &ActivityCommand{Module: "other", Function: "echo", Input: in})
		},
		func() (int64, error) {
			return r2.ScheduleActivity(ctx, &ActivityCommand{Module: "nomodule", Function: "echo", Input: in})
		},
		func() (int64, error) { return r2.StartTimer(ctx, 0) },
		func() (int64, error) { return r2.StartTimer(ctx, time.Minute) },
		func() (int64, error) { return r2.WaitSignal(ctx, "go", -1) },
	} {
		_, err := ask()
		require.NoError(t, err)
	}
	require.NoError(t, r2.Ended("suspended"))
	require.Zero(t, r2.Fresh())
	require.Empty(t, r2.Children())
	require.Equal(t, []string{EventTimerFired}, eventTypes(r2), "the minute timer fell due before the run")
	_, ready, err = r2.Await(ctx, []int64{later}, false)
	require.NoError(t, err)
	require.True(t, ready)
	require.Equal(t, now.Add(time.Minute), r2.Now(), "the clock moves to the fire time")

	// A run that asks for something else diverges at that step.
	r3 := NewReplay(task, j, now, Check, nil)
	_, err = r3.ScheduleActivity(ctx, &ActivityCommand{Function: "echo", Input: in, Timeout: time.Second})
	require.NoError(t, err)
	_, err = r3.StartTimer(ctx, time.Second)
	var nd *NondeterminismError
	require.ErrorAs(t, err, &nd)
	require.Equal(t, int64(2), nd.Step)
	require.Equal(t, "activity other.echo(<2 bytes>)", nd.Recorded)
	require.Equal(t, "asked for timer 1s", nd.Asked)
	require.ErrorIs(t, r3.Err(), err, "the first error stays")

	// So does one that stops short.
	r4 := NewReplay(task, j, now, Check, nil)
	require.ErrorAs(t, r4.Ended("returned"), &nd)
	require.Equal(t, int64(1), nd.Step)
	require.Equal(t, "returned without asking for it", nd.Asked)

	// A store failure resolving a digest fails the run, not the future.
	r5 := NewReplay(task, New(task), now, Record, digest)
	_, err = r5.ScheduleActivity(ctx, &ActivityCommand{Module: "broken", Function: "echo", Input: in})
	require.ErrorContains(t, err, "store down")
	_, _, err = r5.Await(ctx, []int64{9}, false)
	require.ErrorIs(t, err, r5.Err())
}

// TestReplayRandomAndLog: the random stream is the task's attempt's, and
// the first log lines of a run are those earlier runs logged.
func TestReplayRandomAndLog(t *testing.T) {
	t.Parallel()
	task := &store.Task{ID: "task_wf", Attempt: 1}
	read := func(attempt int) []byte {
		tk := *task
		tk.Attempt = attempt
		b := make([]byte, 16)
		NewReplay(&tk, New(&tk), time.Now(), Check, nil).Random(b)
		return b
	}
	require.Equal(t, read(1), read(1))
	require.NotEqual(t, read(1), read(2))

	j := New(task)
	j.Committed(3, []store.EventDraft{{Type: store.EventLog, Payload: []byte(`{"message":"a"}`)}, {Type: store.EventLog, Payload: []byte(`{"message":"b"}`)}})
	r := NewReplay(task, j, time.Now(), Record, nil)
	require.Equal(t, []bool{false, false, true}, []bool{r.LogLine(), r.LogLine(), r.LogLine()})
}
