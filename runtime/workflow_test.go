package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// testGuest is the workflow module of these tests.
func testGuest() *guest {
	return &guest{
		activities: map[string]guestActivity{
			"echo": echoActivity,
			"fail": func(_ context.Context, in codec.Value) (codec.Value, error) {
				s, _ := in.AsString()
				return codec.Null(), &appError{typ: "broken", msg: s, nonRetryable: true}
			},
		},
		workflows: map[string]guestWorkflow{
			// seq runs n echo activities one after the other.
			"seq": func(g *wf, in codec.Value) (codec.Value, error) {
				n, _ := in.AsLong()
				var out []codec.Value
				for i := range n {
					out = append(out, g.must(g.activity("echo", codec.Long(i))))
				}
				return codec.List(out...), nil
			},
			// signals collects the values of n signals "s".
			"signals": func(g *wf, in codec.Value) (codec.Value, error) {
				n, _ := in.AsLong()
				var out []codec.Value
				for range n {
					out = append(out, g.must(g.signal("s", -1)))
				}
				return codec.List(out...), nil
			},
			// approve waits for "approve" for in milliseconds.
			"approve": func(g *wf, in codec.Value) (codec.Value, error) {
				ms, _ := in.AsLong()
				v, err := g.get(g.signal("approve", time.Duration(ms)*time.Millisecond))
				if err != nil {
					return codec.String("timed out at " + g.wh.Now().Format(time.RFC3339Nano)), nil
				}
				return v, nil
			},
			// sleep sleeps in milliseconds on a durable timer and returns
			// the workflow time before and after.
			"sleep": func(g *wf, in codec.Value) (codec.Value, error) {
				ms, _ := in.AsLong()
				before := g.wh.Now()
				g.must(g.timer(time.Duration(ms) * time.Millisecond))
				return codec.List(codec.Long(before.UnixNano()), codec.Long(g.wh.Now().UnixNano())), nil
			},
			// random returns 16 deterministic random bytes.
			"random": func(g *wf, _ codec.Value) (codec.Value, error) {
				p := make([]byte, 16)
				g.wh.Random(p)
				g.must(g.timer(0))
				return codec.Bytes(p), nil
			},
			// fanout starts three activities, reports the first to finish,
			// and waits for all.
			"fanout": func(g *wf, _ codec.Value) (codec.Value, error) {
				ids := []int64{g.activity("echo", codec.String("a")), g.activity("echo", codec.String("b")), g.activity("echo", codec.String("c"))}
				first := g.any(ids...)
				g.all(ids...)
				return codec.List(codec.Long(int64(first)), g.must(ids[0]), g.must(ids[1]), g.must(ids[2])), nil
			},
			// hold waits for the signal "go", then runs echo.
			"hold": func(g *wf, in codec.Value) (codec.Value, error) {
				g.must(g.signal("go", -1))
				return g.must(g.activity("echo", in)), nil
			},
		},
	}
}

func TestWorkflow(t *testing.T) {
	t.Parallel()

	t.Run("SequentialActivities", func(t *testing.T) {
		t.Parallel()
		e, b := wfSetup(t, testGuest(), nil)
		task := start(t, e, "seq", codec.Long(5), "")
		done := mustFinish(t, e, task.ID)
		requireValue(t, codec.List(codec.Long(0), codec.Long(1), codec.Long(2), codec.Long(3), codec.Long(4)), output(t, done))
		require.Equal(t, 6, b.x.runCount(task.ID), "one run, then one per finished activity")
		require.Equal(t, 5, b.x.callCount("echo"), "each activity ran once")

		var want []string
		for range 5 {
			want = append(want, journal.EventActivityScheduled, journal.EventActivityCompleted)
		}
		require.Equal(t, want, journalTypes(t, e, task.ID))
		children, err := e.store.TaskList(t.Context(), &store.TaskListParams{ParentTaskID: task.ID})
		require.NoError(t, err)
		require.Len(t, children, 5)
		for _, c := range children {
			require.Equal(t, store.StatusCompleted, c.Status)
			require.Equal(t, 1, c.Attempt)
			require.Equal(t, done.ModuleDigest, c.ModuleDigest, "own-module activities run the workflow's version")
		}
		// Only one status change while it ran: waiting is not a status.
		var statuses []string
		for _, ev := range allEvents(t, e, task.ID) {
			if store.IsStatusEvent(ev.Type) {
				statuses = append(statuses, ev.Type)
			}
		}
		require.Equal(t, []string{store.EventResponseCreated, store.EventStatusChanged, store.EventResponseInProgress, store.EventResponseCompleted}, statuses)
	})

	t.Run("ReplayGivesTheSameCalls", func(t *testing.T) {
		t.Parallel()
		g := testGuest()
		e, _ := wfSetup(t, g, nil)
		task := start(t, e, "fanout", codec.Null(), "")
		done := mustFinish(t, e, task.ID)
		want := output(t, done)

		// Replaying the finished journal asks for the recorded commands in
		// order and returns the same output, however often it runs.
		for range 3 {
			j, err := journal.Read(t.Context(), e.store, done)
			require.NoError(t, err)
			require.Equal(t, 3, strings.Count(j.String(), "\ncmd "))
			r := journal.NewReplay(done, j, time.Now(), journal.Check, nil)
			got, err := g.workflows["fanout"](&wf{ctx: t.Context(), wh: r}, codec.Null())
			require.NoError(t, err)
			require.NoError(t, r.Ended("returned"))
			require.Zero(t, r.Fresh(), "nothing new was asked")
			requireValue(t, want, got)
		}

		// A changed workflow is caught at the step it changes.
		j, err := journal.Read(t.Context(), e.store, done)
		require.NoError(t, err)
		r := journal.NewReplay(done, j, time.Now(), journal.Check, nil)
		require.Panics(t, func() {
			w := &wf{ctx: t.Context(), wh: r}
			w.activity("echo", codec.String("a"))
			w.activity("echo", codec.String("B"))
		})
		var nd *journal.NondeterminismError
		require.ErrorAs(t, r.Err(), &nd)
		require.Equal(t, int64(2), nd.Step)
		require.Equal(t, `activity wf.echo("b")`, nd.Recorded)
		require.Equal(t, `asked for activity wf.echo("B")`, nd.Asked)

		// So is one that stops short of the journal.
		r = journal.NewReplay(done, j, time.Now(), journal.Check, nil)
		w := &wf{ctx: t.Context(), wh: r}
		w.activity("echo", codec.String("a"))
		require.ErrorAs(t, r.Ended("returned"), &nd)
		require.Equal(t, int64(2), nd.Step)
		require.Equal(t, "returned without asking for it", nd.Asked)
	})

	t.Run("NondeterminismFailsTheTask", func(t *testing.T) {
		t.Parallel()
		var flip atomic.Bool
		g := testGuest()
		g.workflows["flaky"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			if flip.Load() {
				w.must(w.timer(time.Hour))
			}
			w.must(w.signal("go", -1))
			return codec.Null(), nil
		}
		e, _ := wfSetup(t, g, nil)
		task := start(t, e, "flaky", codec.Null(), "")
		waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
		flip.Store(true)
		signal(t, e, task.ID, "go", codec.Null())
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Nondeterminism), done.Error.Code)
		require.True(t, done.Error.NonRetryable)
		require.Contains(t, done.Error.Message, "step 1")
		require.Contains(t, done.Error.Message, `the journal recorded signal "go" without timeout`)
		require.Contains(t, done.Error.Message, "asked for timer 1h0m0s")
	})

	t.Run("SignalsOnceInOrder", func(t *testing.T) {
		t.Parallel()
		e, b := wfSetup(t, testGuest(), nil)
		const n = 40
		task := start(t, e, "signals", codec.Long(n), "")
		// Half arrive before the workflow first waits, the rest while it
		// runs and waits, from one sender so their order is defined.
		for i := range n {
			signal(t, e, task.ID, "s", codec.Long(int64(i)))
			if i == n/2 {
				waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
				signal(t, e, task.ID, "other", codec.Null()) // nobody waits for it
			}
		}
		done := mustFinish(t, e, task.ID)
		want := make([]codec.Value, n)
		for i := range want {
			want[i] = codec.Long(int64(i))
		}
		requireValue(t, codec.List(want...), output(t, done))
		require.LessOrEqual(t, b.x.runCount(task.ID), 2*n+2)
		err := e.TaskSignal(t.Context(), b.admin, task.ID, "s", mustEnvelope(t, codec.Null()))
		require.Equal(t, fault.SignalTargetFinished, fault.CodeOf(err), "a finished workflow receives no signals")
	})

	t.Run("ConcurrentSignals", func(t *testing.T) {
		t.Parallel()
		e, _ := wfSetup(t, testGuest(), nil)
		const senders, each = 4, 10
		task := start(t, e, "signals", codec.Long(senders*each), "")
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for i := range each {
					signal(t, e, task.ID, "s", codec.Long(int64(s*100+i)))
				}
			})
		}
		wg.Wait()
		got := output(t, mustFinish(t, e, task.ID))
		// Every signal exactly once, each sender's in its order, in the
		// order of the log.
		var logged []int64
		for _, ev := range allEvents(t, e, task.ID) {
			if ev.Type != journal.EventSignalReceived {
				continue
			}
			var p journal.SignalReceived
			require.NoError(t, json.Unmarshal(ev.Payload, &p))
			v, err := codec.DecodeFrame(p.Payload.Data)
			require.NoError(t, err)
			n, _ := v.AsLong()
			logged = append(logged, n)
		}
		require.Len(t, got.Items(), senders*each)
		for i, v := range got.Items() {
			n, _ := v.AsLong()
			require.Equal(t, logged[i], n)
		}
		last := map[int64]int64{}
		for _, n := range logged {
			if prev, ok := last[n/100]; ok {
				require.Greater(t, n, prev)
			}
			last[n/100] = n
		}
	})

	t.Run("SignalTimeout", func(t *testing.T) {
		t.Parallel()
		e, _ := wfSetup(t, testGuest(), nil)
		approved := start(t, e, "approve", codec.Long(int64(time.Hour/time.Millisecond)), "")
		timedOut := start(t, e, "approve", codec.Long(50), "")
		waitJournal(t, e, approved.ID, journal.EventSignalWaiting, 1)
		signal(t, e, approved.ID, "approve", codec.String("alice"))
		requireValue(t, codec.String("alice"), output(t, mustFinish(t, e, approved.ID)))

		done := mustFinish(t, e, timedOut.ID)
		require.Equal(t, []string{journal.EventSignalWaiting, journal.EventSignalTimedOut}, journalTypes(t, e, done.ID))
		var deadline time.Time
		for _, ev := range allEvents(t, e, done.ID) {
			if ev.Type == journal.EventSignalWaiting {
				var p journal.SignalWaiting
				require.NoError(t, json.Unmarshal(ev.Payload, &p))
				deadline = *p.Deadline
			}
		}
		requireValue(t, codec.String("timed out at "+deadline.Format(time.RFC3339Nano)), output(t, done),
			"after a timeout the workflow's time is the deadline")
		err := e.TaskSignal(t.Context(), Caller{All: true}, done.ID, "approve", mustEnvelope(t, codec.Null()))
		require.Equal(t, fault.SignalTargetFinished, fault.CodeOf(err))
	})

	t.Run("TimerAndClock", func(t *testing.T) {
		t.Parallel()
		e, _ := wfSetup(t, testGuest(), nil)
		before := time.Now()
		task := start(t, e, "sleep", codec.Long(80), "")
		done := mustFinish(t, e, task.ID)
		require.GreaterOrEqual(t, time.Since(before), 80*time.Millisecond)
		out := output(t, done).Items()
		t0, _ := out[0].AsLong()
		t1, _ := out[1].AsLong()
		require.GreaterOrEqual(t, time.Duration(t1-t0), 80*time.Millisecond)
		require.Equal(t, []string{journal.EventTimerStarted, journal.EventTimerFired}, journalTypes(t, e, done.ID))
		var inProgress, fireAt time.Time
		for _, ev := range allEvents(t, e, done.ID) {
			switch ev.Type {
			case store.EventResponseInProgress:
				inProgress = ev.CreatedAt
			case journal.EventTimerStarted:
				var p journal.TimerStarted
				require.NoError(t, json.Unmarshal(ev.Payload, &p))
				fireAt = *p.FireAt
			}
		}
		require.Equal(t, inProgress.UnixNano(), t0, "a workflow's time starts at its attempt's start")
		require.Equal(t, fireAt.UnixNano(), t1, "and moves to the fire time of the timer it awaited")
	})

	t.Run("DeterministicRandom", func(t *testing.T) {
		t.Parallel()
		e, b := wfSetup(t, testGuest(), nil)
		task := start(t, e, "random", codec.Null(), "")
		done := mustFinish(t, e, task.ID)
		got, _ := output(t, done).AsBytes()
		want := make([]byte, 16)
		journal.NewReplay(done, journal.New(done), time.Now(), journal.Check, nil).Random(want)
		require.Equal(t, want, got)
		require.Equal(t, 1, b.x.runCount(task.ID), "a zero timer fires within the run")
	})

	t.Run("AwaitAnyFollowsTheJournal", func(t *testing.T) {
		t.Parallel()
		e, _ := wfSetup(t, testGuest(), nil)
		task := start(t, e, "fanout", codec.Null(), "")
		done := output(t, mustFinish(t, e, task.ID)).Items()
		first, _ := done[0].AsLong()
		// The first activity.completed of the log names the one reported.
		var order []string
		var scheduled []string
		for _, ev := range allEvents(t, e, task.ID) {
			var p struct {
				TaskID string `json:"task_id"`
			}
			require.NoError(t, json.Unmarshal(ev.Payload, &p))
			switch ev.Type {
			case journal.EventActivityScheduled:
				scheduled = append(scheduled, p.TaskID)
			case journal.EventActivityCompleted:
				order = append(order, p.TaskID)
			}
		}
		require.Len(t, order, 3)
		require.Equal(t, scheduled[first], order[0])
		requireValue(t, codec.String("a"), done[1])
		requireValue(t, codec.String("c"), done[3])
	})

	t.Run("ActivityErrors", func(t *testing.T) {
		t.Parallel()
		g := testGuest()
		g.workflows["failing"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			_, err := w.get(w.activity("fail", codec.String("on purpose")))
			_, missing := w.get(w.activity("nothing", codec.Null(), func(c *journal.ActivityCommand) { c.Module = "nomodule" }))
			_, retried := w.get(w.activity("fail", codec.String("again"), func(c *journal.ActivityCommand) {
				c.Timeout = 5 * time.Second
				c.Retry = &journal.ActivityRetry{MaxAttempts: 3, InitialInterval: time.Millisecond, NonRetryableErrorTypes: []string{"broken"}}
			}))
			return codec.List(codec.String(err.Error()), codec.String(missing.Error()), codec.String(retried.Error())), nil
		}
		e, b := wfSetup(t, g, nil)
		task := start(t, e, "failing", codec.Null(), "")
		done := mustFinish(t, e, task.ID)
		requireValue(t, codec.List(
			codec.String("broken: on purpose"),
			codec.String(`module_not_found: module "nomodule" is not deployed`),
			codec.String("broken: again"),
		), output(t, done))
		require.Equal(t, 2, b.x.callCount("fail"), "a non-retryable error is not retried")
		children, err := e.store.TaskList(t.Context(), &store.TaskListParams{ParentTaskID: task.ID})
		require.NoError(t, err)
		require.Len(t, children, 2, "an activity of an unknown module creates no task")
		last := children[1]
		require.Equal(t, 5*time.Second, last.Timeout)
		require.Equal(t, 3, last.Retry.MaximumAttempts)
		require.Equal(t, store.StatusFailed, last.Status)
	})

	t.Run("CancelWaiting", func(t *testing.T) {
		t.Parallel()
		g := testGuest()
		release := make(chan struct{})
		g.activities["block"] = func(ctx context.Context, _ codec.Value) (codec.Value, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return codec.Null(), &fault.Error{Code: fault.Cancelled, Message: "stopped"}
			}
			return codec.Null(), nil
		}
		g.workflows["blocked"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			a := w.activity("block", codec.Null())
			w.activity("block", codec.Null())
			w.must(a)
			return codec.Null(), nil
		}
		e, b := wfSetup(t, g, func(c *Config) { c.Workers = 2 })
		defer close(release)
		task := start(t, e, "blocked", codec.Null(), "")
		waitJournal(t, e, task.ID, journal.EventActivityScheduled, 2)
		children, err := e.store.TaskList(t.Context(), &store.TaskListParams{ParentTaskID: task.ID})
		require.NoError(t, err)
		require.Len(t, children, 2)
		mustStatus(t, e, children[0].ID, store.StatusRunning)

		_, err = e.TaskCancel(t.Context(), b.admin, children[0].ID)
		require.Equal(t, fault.Conflict, fault.CodeOf(err), "an activity of a workflow is cancelled with its workflow")

		// The run that scheduled the activities committed its wait; its call
		// unregisters just after.
		require.Eventually(t, func() bool {
			e.running.mu.Lock()
			defer e.running.mu.Unlock()
			return len(e.running.m[task.ID]) == 0
		}, 10*time.Second, time.Millisecond)
		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, got.Status, "a waiting workflow holds no call: cancelled at once")
		for _, c := range children {
			require.Equal(t, store.StatusCancelled, mustFinish(t, e, c.ID).Status)
		}
		require.Equal(t, store.StatusCancelled, mustFinish(t, e, task.ID).Status)
	})

	t.Run("CancelDuringRun", func(t *testing.T) {
		t.Parallel()
		g := testGuest()
		entered := make(chan struct{})
		g.workflows["slow"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			close(entered)
			<-w.ctx.Done()
			return codec.Null(), &fault.Error{Code: fault.Cancelled, Message: "stopped"}
		}
		e, b := wfSetup(t, g, func(c *Config) { c.CancelGrace = 200 * time.Millisecond })
		task := start(t, e, "slow", codec.Null(), "")
		<-entered
		// The first run has not ended: the workflow may watch its cancel,
		// so it is asked; a run that outlasts the grace is terminated.
		asked, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.False(t, asked.CancelRequestedAt.IsZero())
		require.Equal(t, store.StatusRunning, asked.Status)
		require.Equal(t, store.StatusCancelled, mustFinish(t, e, task.ID).Status)
	})
}

// requireValue compares two Values.
func requireValue(tb testing.TB, want, got codec.Value, msgAndArgs ...any) {
	tb.Helper()
	if !codec.Equal(want, got) {
		w, _ := codec.MarshalProjection(want)
		g, _ := codec.MarshalProjection(got)
		require.Fail(tb, fmt.Sprintf("values differ:\nwant %s\n got %s", w, g), msgAndArgs...)
	}
}

func TestWorkflowRecovery(t *testing.T) {
	t.Parallel()

	// crashy runs echo, then blocks its second run until the engine stops
	// while block is set: a workflow in the middle of a run at a crash.
	crashy := func(block *atomic.Bool, entered chan struct{}) *guest {
		g := testGuest()
		g.workflows["crashy"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			v := w.must(w.activity("echo", codec.String("once")))
			if block.Load() {
				entered <- struct{}{}
				<-w.ctx.Done()
				return codec.Null(), &fault.Error{Code: fault.Cancelled, Message: "stopped"}
			}
			return v, nil
		}
		return g
	}
	tests := []struct {
		name      string
		onRestart store.OnRestart
		check     func(t *testing.T, e *Engine, b *wfBundle, done *store.Task)
	}{
		{name: "Resume", onRestart: store.OnRestartResume, check: func(t *testing.T, e *Engine, b *wfBundle, done *store.Task) {
			requireValue(t, codec.String("once"), output(t, done))
			require.Equal(t, 1, b.x.callCount("echo"), "the finished activity is not run again")
			require.Equal(t, 1, done.Attempt)
			require.Equal(t, []string{journal.EventActivityScheduled, journal.EventActivityCompleted}, journalTypes(t, e, done.ID))
		}},
		{name: "Retry", onRestart: store.OnRestartRetry, check: func(t *testing.T, e *Engine, b *wfBundle, done *store.Task) {
			requireValue(t, codec.String("once"), output(t, done))
			require.Equal(t, 2, b.x.callCount("echo"), "a new attempt starts from scratch")
			require.Equal(t, 2, done.Attempt)
			require.Equal(t, []string{journal.EventActivityScheduled, journal.EventActivityCompleted, journal.EventActivityScheduled, journal.EventActivityCompleted},
				journalTypes(t, e, done.ID))
		}},
		{name: "Fail", onRestart: store.OnRestartFail, check: func(t *testing.T, _ *Engine, _ *wfBundle, done *store.Task) {
			require.Equal(t, store.StatusFailed, done.Status)
			require.Equal(t, store.CodeServerRestarted, done.Error.Code)
		}},
	}
	for _, tc := range tests {
		t.Run("InRun"+tc.name, func(t *testing.T) {
			t.Parallel()
			var block atomic.Bool
			block.Store(true)
			entered := make(chan struct{}, 1)
			e, b := wfSetup(t, crashy(&block, entered), nil)
			task := start(t, e, "crashy", codec.Null(), tc.onRestart)
			<-entered
			block.Store(false)
			e = b.reopen(t, e)
			tc.check(t, e, b, mustFinish(t, e, task.ID))
		})
		t.Run("Waiting"+tc.name, func(t *testing.T) {
			t.Parallel()
			e, b := wfSetup(t, testGuest(), nil)
			task := start(t, e, "hold", codec.String("x"), tc.onRestart)
			waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
			e = b.reopen(t, e)
			if tc.onRestart == store.OnRestartFail {
				tc.check(t, e, b, mustFinish(t, e, task.ID))
				return
			}
			waitJournal(t, e, task.ID, journal.EventSignalWaiting, map[store.OnRestart]int{store.OnRestartResume: 1, store.OnRestartRetry: 2}[tc.onRestart])
			signal(t, e, task.ID, "go", codec.Null())
			done := mustFinish(t, e, task.ID)
			requireValue(t, codec.String("x"), output(t, done))
			require.Equal(t, 1, b.x.callCount("echo"))
			want := []string{journal.EventSignalWaiting, journal.EventSignalReceived, journal.EventActivityScheduled, journal.EventActivityCompleted}
			if tc.onRestart == store.OnRestartRetry {
				want = append([]string{journal.EventSignalWaiting}, want...) // the first attempt's wait
				require.Equal(t, 2, done.Attempt)
			}
			require.Equal(t, want, journalTypes(t, e, done.ID))
		})
	}

	t.Run("TimerFallsDueWhileDown", func(t *testing.T) {
		t.Parallel()
		e, b := wfSetup(t, testGuest(), nil)
		task := start(t, e, "sleep", codec.Long(300), store.OnRestartResume)
		waitJournal(t, e, task.ID, journal.EventTimerStarted, 1)
		require.NoError(t, e.Close(t.Context()))
		time.Sleep(400 * time.Millisecond)
		restarted := time.Now()
		e = mustOpen(t, b.cfg) // PollInterval is an hour: only the due timer can wake it
		done := mustFinish(t, e, task.ID)
		require.Less(t, time.Since(restarted), 5*time.Second)
		require.Equal(t, []string{journal.EventTimerStarted, journal.EventTimerFired}, journalTypes(t, e, done.ID))
		for _, ev := range allEvents(t, e, done.ID) {
			if ev.Type == journal.EventTimerFired {
				require.False(t, ev.CreatedAt.Before(restarted.Truncate(time.Millisecond)), "the timer fired at start")
			}
		}
	})

	t.Run("TimerAcrossRestart", func(t *testing.T) {
		t.Parallel()
		e, b := wfSetup(t, testGuest(), nil)
		task := start(t, e, "sleep", codec.Long(500), store.OnRestartResume)
		waitJournal(t, e, task.ID, journal.EventTimerStarted, 1)
		e = b.reopen(t, e)
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusCompleted, done.Status)
		require.Equal(t, 2, b.x.runCount(task.ID), "one run before the restart, one when the timer fired")
	})
}

func TestModuleReplayCheck(t *testing.T) {
	t.Parallel()
	e, b := wfSetup(t, testGuest(), nil)
	ctx := t.Context()
	task := start(t, e, "hold", codec.String("x"), "")
	waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
	other := start(t, e, "signals", codec.Long(1), "")
	waitJournal(t, e, other.ID, journal.EventSignalWaiting, 1)

	version := func(i int, edit func(g *guest)) []byte {
		wasm := fmt.Appendf(nil, "\x00asm\x01\x00\x00\x00 weft workflow test module v%d", i)
		g := testGuest()
		edit(g)
		b.x.add(wasm, g)
		return wasm
	}
	changed := version(2, func(g *guest) {
		g.workflows["hold"] = func(w *wf, in codec.Value) (codec.Value, error) {
			w.must(w.signal("start", -1))
			return in, nil
		}
	})
	extended := version(3, func(g *guest) {
		g.workflows["hold"] = func(w *wf, in codec.Value) (codec.Value, error) {
			w.must(w.signal("go", -1))
			w.must(w.timer(time.Second)) // new code after the journal's end
			return w.must(w.activity("echo", in)), nil
		}
	})
	dropped := version(4, func(g *guest) { delete(g.workflows, "hold") })

	div, err := e.Modules().ReplayCheck(ctx, "wf", changed)
	require.NoError(t, err)
	require.Equal(t, []modules.Divergence{{
		TaskID: task.ID, Function: "hold",
		Reason: `step 1: the journal recorded signal "go" without timeout, but the new version asked for signal "start" without timeout`,
	}}, div)
	div, err = e.Modules().ReplayCheck(ctx, "wf", extended)
	require.NoError(t, err)
	require.Empty(t, div, "a version that only adds steps after the journal replays it")
	div, err = e.Modules().ReplayCheck(ctx, "wf", dropped)
	require.NoError(t, err)
	require.Equal(t, []modules.Divergence{{TaskID: task.ID, Function: "hold", Reason: `the new version exports no workflow "hold"`}}, div)

	_, err = e.Modules().DeployCheckReplay(ctx, "wf", changed)
	require.Equal(t, fault.ReplayDivergence, fault.CodeOf(err))
	require.Contains(t, fault.Message(err), task.ID)
	require.NotContains(t, fault.Message(err), other.ID)
	m, err := e.Modules().Get(ctx, "wf")
	require.NoError(t, err)
	require.Equal(t, 1, m.Version, "a refused deploy deploys nothing")
	_, err = e.Modules().ReplayCheck(ctx, "wf", []byte("not a module"))
	require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err))

	m, err = e.Modules().DeployCheckReplay(ctx, "wf", extended)
	require.NoError(t, err)
	require.Equal(t, 2, m.Version)
	// Running workflows stay on their version.
	signal(t, e, task.ID, "go", codec.Null())
	requireValue(t, codec.String("x"), output(t, mustFinish(t, e, task.ID)))
	require.Equal(t, modules.Digest(wfWasm), mustFinish(t, e, task.ID).ModuleDigest)
	require.Equal(t, []string{journal.EventSignalWaiting, journal.EventSignalReceived, journal.EventActivityScheduled, journal.EventActivityCompleted}, journalTypes(t, e, task.ID))
	require.NotContains(t, journalTypes(t, e, task.ID), journal.EventTimerStarted, "the task ran its own version")
}

// TestJournalCache checks that the journal a run leaves in the cache is the
// journal a fresh read of the log builds: a woken workflow must see the
// same journal either way.
func TestJournalCache(t *testing.T) {
	t.Parallel()
	g := testGuest()
	g.workflows["mixed"] = func(w *wf, _ codec.Value) (codec.Value, error) {
		w.must(w.activity("echo", codec.String("a")))
		_, _ = w.get(w.activity("x", codec.Null(), func(c *journal.ActivityCommand) { c.Module = "nomodule" }))
		w.must(w.timer(0))
		first := w.must(w.signal("s", -1))
		_, _ = w.get(w.signal("never", 10*time.Millisecond))
		w.must(w.timer(20 * time.Millisecond))
		w.must(w.signal("end", -1))
		return first, nil
	}
	e, _ := wfSetup(t, g, nil)
	task := start(t, e, "mixed", codec.Null(), "")
	signal(t, e, task.ID, "s", codec.String("early"))
	signal(t, e, task.ID, "s", codec.String("kept"))
	waitJournal(t, e, task.ID, journal.EventSignalWaiting, 3)
	require.Eventually(t, func() bool {
		cur, err := e.store.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		cached := e.jcache.Take(task.ID, 1)
		if cached == nil || cached.LastSeq() != cur.LastSeq {
			if cached != nil {
				e.jcache.Put(cached)
			}
			return false
		}
		fresh, err := journal.Read(t.Context(), e.store, cur)
		require.NoError(t, err)
		require.Equal(t, fresh.String(), cached.String())
		require.Equal(t, 7, strings.Count(fresh.String(), "\ncmd "))
		n, _ := fresh.PendingSignals()
		require.Equal(t, 1, n, "one signal is kept for later")
		e.jcache.Put(cached)
		return true
	}, 10*time.Second, 5*time.Millisecond)
	signal(t, e, task.ID, "end", codec.Null())
	requireValue(t, codec.String("early"), output(t, mustFinish(t, e, task.ID)))
}

// TestWorkflowLog checks that each line a workflow logs reaches its task's
// log once, in order, however many runs replay it.
func TestWorkflowLog(t *testing.T) {
	t.Parallel()
	g := testGuest()
	g.workflows["chatty"] = func(w *wf, _ codec.Value) (codec.Value, error) {
		w.log("info", "start")
		w.must(w.activity("echo", codec.String("a")))
		w.log("info", "after a")
		w.must(w.signal("go", -1))
		w.log("warn", "after the signal")
		w.must(w.timer(10 * time.Millisecond))
		w.log("info", "done")
		return codec.Null(), nil
	}
	e, b := wfSetup(t, g, nil)
	task := start(t, e, "chatty", codec.Null(), store.OnRestartResume)
	waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
	e = b.reopen(t, e) // a restart loses the journal cache: the count comes from the log
	signal(t, e, task.ID, "go", codec.Null())
	done := mustFinish(t, e, task.ID)
	require.Equal(t, store.StatusCompleted, done.Status)
	require.GreaterOrEqual(t, b.x.runCount(task.ID), 4)
	var lines []string
	for _, ev := range allEvents(t, e, task.ID) {
		if ev.Type != EventLog {
			continue
		}
		var l struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal(ev.Payload, &l))
		lines = append(lines, l.Level+" "+l.Message)
	}
	require.Equal(t, []string{"info start", "info after a", "warn after the signal", "info done"}, lines)
}
