package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest"
)

// countingStore is the engine's store with a count of the calls to the
// methods that write a step of a task, claim work or read a task: the
// cost of each step, as the engine pays it. A call is counted before it
// runs, so a test that sees its effect in the store sees it counted.
type countingStore struct {
	store.Store

	workflowCommit        atomic.Int64
	workflowCommitRefused atomic.Int64 // the commits that returned ErrConflict
	workflowChildEnd      atomic.Int64
	taskTransition        atomic.Int64
	taskClaim             atomic.Int64
	workflowClaim         atomic.Int64
	eventList             atomic.Int64
	taskGet               atomic.Int64
}

// storeCalls is a snapshot of the counts of a countingStore.
type storeCalls struct {
	workflowCommit, workflowCommitRefused, workflowChildEnd int64
	taskTransition, taskClaim, workflowClaim                int64
	eventList, taskGet                                      int64
}

// counted returns a countingStore and the Config edit that puts it in
// front of the engine's store.
func counted() (*countingStore, func(*Config)) {
	cs := &countingStore{}
	return cs, func(c *Config) {
		cs.Store = c.Store
		c.Store = cs
	}
}

// calls returns the counts so far.
func (s *countingStore) calls() storeCalls {
	return storeCalls{
		workflowCommit: s.workflowCommit.Load(), workflowCommitRefused: s.workflowCommitRefused.Load(),
		workflowChildEnd: s.workflowChildEnd.Load(), taskTransition: s.taskTransition.Load(),
		taskClaim: s.taskClaim.Load(), workflowClaim: s.workflowClaim.Load(),
		eventList: s.eventList.Load(), taskGet: s.taskGet.Load(),
	}
}

// since returns the calls made after base.
func (c storeCalls) since(base storeCalls) storeCalls {
	return storeCalls{
		workflowCommit: c.workflowCommit - base.workflowCommit, workflowCommitRefused: c.workflowCommitRefused - base.workflowCommitRefused,
		workflowChildEnd: c.workflowChildEnd - base.workflowChildEnd, taskTransition: c.taskTransition - base.taskTransition,
		taskClaim: c.taskClaim - base.taskClaim, workflowClaim: c.workflowClaim - base.workflowClaim,
		eventList: c.eventList - base.eventList, taskGet: c.taskGet - base.taskGet,
	}
}

func (s *countingStore) WorkflowCommit(ctx context.Context, p *store.WorkflowCommitParams) (*store.WorkflowCommitResult, error) {
	s.workflowCommit.Add(1)
	res, err := s.Store.WorkflowCommit(ctx, p)
	if errors.Is(err, store.ErrConflict) {
		s.workflowCommitRefused.Add(1)
	}
	return res, err
}

func (s *countingStore) WorkflowChildEnd(ctx context.Context, p *store.TaskTransitionParams) (*store.WorkflowChildEndResult, error) {
	s.workflowChildEnd.Add(1)
	return s.Store.WorkflowChildEnd(ctx, p)
}

func (s *countingStore) TaskTransition(ctx context.Context, p *store.TaskTransitionParams) (*store.Task, error) {
	s.taskTransition.Add(1)
	return s.Store.TaskTransition(ctx, p)
}

func (s *countingStore) TaskClaim(ctx context.Context, p *store.TaskClaimParams) ([]*store.Task, error) {
	s.taskClaim.Add(1)
	return s.Store.TaskClaim(ctx, p)
}

func (s *countingStore) WorkflowClaim(ctx context.Context, p *store.WorkflowClaimParams) (*store.WorkflowClaimResult, error) {
	s.workflowClaim.Add(1)
	return s.Store.WorkflowClaim(ctx, p)
}

func (s *countingStore) EventList(ctx context.Context, p *store.EventListParams) ([]*store.Event, error) {
	s.eventList.Add(1)
	return s.Store.EventList(ctx, p)
}

func (s *countingStore) TaskGet(ctx context.Context, id string) (*store.Task, error) {
	s.taskGet.Add(1)
	return s.Store.TaskGet(ctx, id)
}

var _ store.Store = (*countingStore)(nil)

// waitIdle waits until the scheduler made the claim it makes at Open and
// every worker's token is back: the scheduler sleeps until something wakes
// it, no worker runs, and a task created now finds an idle worker.
func waitIdle(tb testing.TB, e *Engine, cs *countingStore) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		return cs.taskClaim.Load() >= 1 && len(e.sched.free) == cap(e.sched.free)
	}, 10*time.Second, time.Millisecond, "the scheduler never went idle")
}

// finishedIn waits until task id is finished, reading s itself (not the
// engine's store, whose calls a test may count), and returns it.
func finishedIn(tb testing.TB, s store.Store, id string) *store.Task {
	tb.Helper()
	watch, stop := s.EventWatch(id)
	defer stop()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		t, err := s.TaskGet(tb.Context(), id)
		require.NoError(tb, err)
		if t.Status.IsTerminal() {
			return t
		}
		select {
		case <-watch:
		case <-limit.C:
			require.FailNow(tb, "task did not finish", "task %s is %s", id, t.Status)
		}
	}
}

// logOf returns the whole log of task id, read from s itself.
func logOf(tb testing.TB, s store.Store, id string) []*store.Event {
	tb.Helper()
	evs, err := s.EventList(tb.Context(), &store.EventListParams{TaskID: id, Limit: 10000})
	require.NoError(tb, err)
	return evs
}

// journalOf lists the journal events of evs.
func journalOf(evs []*store.Event) []*store.Event {
	var out []*store.Event
	for _, ev := range evs {
		switch ev.Type {
		case journal.EventActivityScheduled, journal.EventActivityCompleted, journal.EventActivityFailed, journal.EventTimerStarted,
			journal.EventTimerFired, journal.EventSignalWaiting, journal.EventSignalReceived, journal.EventSignalTimedOut:
			out = append(out, ev)
		}
	}
	return out
}

// childrenOf lists the child tasks of workflow id, read from s itself.
func childrenOf(tb testing.TB, s store.Store, id string) []*store.Task {
	tb.Helper()
	ts, err := s.TaskList(tb.Context(), &store.TaskListParams{ParentTaskID: id})
	require.NoError(tb, err)
	return ts
}

// recv waits for a value on ch.
func recv(tb testing.TB, ch <-chan struct{}, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		require.FailNow(tb, "never happened", what)
	}
}

// blockingGuest is testGuest with an activity "block" that reports on
// entered that it started, then returns its input once release is closed,
// whatever its context says: an activity that does not stop when
// cancelled. release closes the channel (once); it is also called at the
// test's end, before the engine closes.
func blockingGuest(tb testing.TB) (g *guest, entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 1)
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	tb.Cleanup(release)
	g = testGuest()
	g.activities["block"] = func(_ context.Context, v codec.Value) (codec.Value, error) {
		select {
		case in <- struct{}{}:
		default:
		}
		<-gate
		return v, nil
	}
	return g, in, release
}

func TestWorkflowFold(t *testing.T) {
	t.Parallel()

	t.Run("OneCommitPerStep", func(t *testing.T) {
		t.Parallel()
		const n = 20
		cs, edit := counted()
		e, b := wfSetup(t, testGuest(), edit)
		waitIdle(t, e, cs)
		base := cs.calls()
		task := start(t, e, "seq", codec.Long(n), "")
		require.Equal(t, store.StatusRunning, task.Status, "an idle worker starts the workflow at once")
		done := finishedIn(t, b.db, task.ID)
		waitIdle(t, e, cs)
		calls := cs.calls().since(base)

		want := make([]codec.Value, n)
		for i := range want {
			want[i] = codec.Long(int64(i))
		}
		requireValue(t, codec.List(want...), output(t, done))
		require.Equal(t, storeCalls{workflowCommit: n + 1, eventList: 1}, calls,
			"one commit for the first run, then one per activity's end and the next step; "+
				"the log is read once, by the first run; no activity's end is written alone")
		require.Equal(t, n+1, b.x.runCount(task.ID))
		require.Equal(t, n, b.x.callCount("echo"), "each activity ran once")

		evs := logOf(t, b.db, task.ID)
		requireGapless(t, evs, 0)
		storetest.MustCheckLog(t, b.db, task.ID)
		jevs := journalOf(evs)
		require.Len(t, jevs, 2*n)
		children := map[string]*store.Task{}
		for _, c := range childrenOf(t, b.db, task.ID) {
			children[c.ID] = c
		}
		require.Len(t, children, n)
		for i := 0; i < len(jevs); i += 2 {
			scheduled, completed := jevs[i], jevs[i+1]
			require.Equal(t, journal.EventActivityScheduled, scheduled.Type, "event %d", scheduled.Seq)
			require.Equal(t, journal.EventActivityCompleted, completed.Type, "event %d", completed.Seq)
			var (
				s journal.ActivityScheduled
				c journal.ActivityCompleted
			)
			require.NoError(t, json.Unmarshal(scheduled.Payload, &s))
			require.NoError(t, json.Unmarshal(completed.Payload, &c))
			require.Equal(t, s.TaskID, c.TaskID, "each activity ends before the next is scheduled")
			require.Equal(t, int64(i/2+1), s.FutureID)

			child := children[s.TaskID]
			require.NotNil(t, child, "child %s", s.TaskID)
			require.Equal(t, store.StatusCompleted, child.Status)
			require.Equal(t, 1, child.Attempt)
			require.Equal(t, child.Output, c.Output)
			requireValue(t, codec.Long(int64(i/2)), output(t, child))
			require.True(t, child.FinishedAt.Equal(completed.CreatedAt),
				"the child's end and its journal event are written by one commit")
			if i+2 < len(jevs) {
				require.True(t, jevs[i+2].CreatedAt.Equal(completed.CreatedAt),
					"the next step is written by the same commit")
			}
			childLog := logOf(t, b.db, child.ID)
			storetest.MustCheckLog(t, b.db, child.ID)
			require.Equal(t, []string{
				store.EventResponseCreated, store.EventStatusChanged, store.EventResponseInProgress,
				store.EventResponseCompleted,
			}, eventTypes(childLog), "one terminal event")
		}
	})

	t.Run("SignalDuringActivity", func(t *testing.T) {
		t.Parallel()
		g, entered, release := blockingGuest(t)
		// race reports which of its activity and the signal "s" resolved
		// first, then both values.
		g.workflows["race"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			a := w.activity("block", codec.String("done"))
			s := w.signal("s", -1)
			first := w.any(a, s)
			return codec.List(codec.Long(int64(first)), w.must(s), w.must(a)), nil
		}
		cs, edit := counted()
		// One worker: it runs the activity, then the workflow; no other
		// worker can take the workflow the signal wakes meanwhile.
		e, b := wfSetup(t, g, func(c *Config) {
			c.Workers = 1
			edit(c)
		})
		task := start(t, e, "race", codec.Null(), "")
		recv(t, entered, "the activity never started")
		signal(t, e, task.ID, "s", codec.String("sig"))
		base := cs.calls()
		release()
		done := finishedIn(t, b.db, task.ID)
		waitIdle(t, e, cs)
		calls := cs.calls().since(base)

		// The run that went on from the activity's end replayed a journal
		// without the signal: its commit is refused, the activity's end is
		// written alone, after the signal, and the run over the whole log
		// sees the signal first.
		requireValue(t, codec.List(codec.Long(1), codec.String("sig"), codec.String("done")), output(t, done))
		require.Equal(t, int64(2), calls.workflowCommit, "the refused commit and the last one")
		require.Equal(t, int64(1), calls.workflowCommitRefused)
		require.Equal(t, int64(1), calls.workflowChildEnd, "the activity's end, alone")
		require.Equal(t, 3, b.x.runCount(task.ID))
		require.Equal(t, 1, b.x.callCount("block"), "the activity ran once")
		require.Equal(t, []string{journal.EventActivityScheduled, journal.EventSignalWaiting, journal.EventSignalReceived, journal.EventActivityCompleted},
			journalTypes(t, e, task.ID))
		storetest.MustCheckLog(t, b.db, task.ID)

		children := childrenOf(t, b.db, task.ID)
		require.Len(t, children, 1)
		require.Equal(t, store.StatusCompleted, children[0].Status)
		requireValue(t, codec.String("done"), output(t, children[0]))
		storetest.MustCheckLog(t, b.db, children[0].ID)
	})

	t.Run("CancelDuringActivity", func(t *testing.T) {
		t.Parallel()
		g, entered, release := blockingGuest(t)
		g.workflows["one"] = func(w *wf, in codec.Value) (codec.Value, error) {
			return w.must(w.activity("block", in)), nil
		}
		cs, edit := counted()
		e, b := wfSetup(t, g, edit)
		task := start(t, e, "one", codec.String("x"), "")
		recv(t, entered, "the activity never started")
		children := childrenOf(t, b.db, task.ID)
		require.Len(t, children, 1)
		child := children[0]

		got, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, got.Status, "a workflow that waits on its activity is cancelled at once")
		cur, err := b.db.TaskGet(t.Context(), child.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelling, cur.Status, "its running activity is asked to stop")

		// The activity does not stop: it returns its value once released.
		// Its end goes into no run of the cancelled workflow, and the
		// cancel wins over its result.
		release()
		ended := finishedIn(t, b.db, child.ID)
		require.Equal(t, store.StatusCancelled, ended.Status)
		require.True(t, ended.Output.IsZero())
		storetest.MustCheckLog(t, b.db, child.ID)
		require.Equal(t, 1, b.x.callCount("block"))
		require.Equal(t, int64(1), cs.workflowCommit.Load(), "only the first run committed")

		wfTask := storetest.MustCheckLog(t, b.db, task.ID)
		require.Equal(t, store.StatusCancelled, wfTask.Status)
		require.Equal(t, []string{journal.EventActivityScheduled}, journalTypes(t, e, task.ID),
			"a finished workflow's log gets no activity event")
		left, err := b.db.TaskList(t.Context(), &store.TaskListParams{Statuses: []store.Status{
			store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling,
		}})
		require.NoError(t, err)
		require.Empty(t, left, "no task is left unfinished")
		require.NoError(t, e.Close(t.Context()))
		require.Zero(t, e.running.len())
	})

	t.Run("FailedActivity", func(t *testing.T) {
		t.Parallel()
		g := testGuest()
		g.workflows["failing"] = func(w *wf, in codec.Value) (codec.Value, error) {
			_, err := w.get(w.activity("fail", in))
			return codec.String(err.Error()), nil
		}
		cs, edit := counted()
		e, b := wfSetup(t, g, edit)
		waitIdle(t, e, cs)
		base := cs.calls()
		task := start(t, e, "failing", codec.String("on purpose"), "")
		done := finishedIn(t, b.db, task.ID)
		waitIdle(t, e, cs)
		calls := cs.calls().since(base)

		requireValue(t, codec.String("broken: on purpose"), output(t, done))
		require.Equal(t, storeCalls{workflowCommit: 2, eventList: 1}, calls, "the failure folds into the next step's commit")
		require.Equal(t, 1, b.x.callCount("fail"))
		require.Equal(t, []string{journal.EventActivityScheduled, journal.EventActivityFailed}, journalTypes(t, e, task.ID))
		children := childrenOf(t, b.db, task.ID)
		require.Len(t, children, 1)
		child := storetest.MustCheckLog(t, b.db, children[0].ID)
		require.Equal(t, store.StatusFailed, child.Status)
		require.Equal(t, 1, child.Attempt)
		require.Equal(t, &store.TaskError{Code: string(fault.Application), Type: "broken", Message: "on purpose", NonRetryable: true}, child.Error)
	})

	t.Run("NondeterminismAfterActivity", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int64
		g := testGuest()
		// fickle asks for another activity once its first run is over.
		g.workflows["fickle"] = func(w *wf, _ codec.Value) (codec.Value, error) {
			in := "a"
			if runs.Add(1) > 1 {
				in = "b"
			}
			return w.must(w.activity("echo", codec.String(in))), nil
		}
		cs, edit := counted()
		e, b := wfSetup(t, g, edit)
		waitIdle(t, e, cs)
		base := cs.calls()
		task := start(t, e, "fickle", codec.Null(), "")
		done := finishedIn(t, b.db, task.ID)
		waitIdle(t, e, cs)
		calls := cs.calls().since(base)

		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Nondeterminism), done.Error.Code)
		require.Contains(t, done.Error.Message, "step 1")
		require.Contains(t, done.Error.Message, `asked for activity wf.echo("b")`)
		require.Equal(t, int64(2), runs.Load())
		require.Equal(t, int64(1), calls.workflowCommit, "the broken run commits nothing")
		require.Equal(t, int64(1), calls.workflowChildEnd, "the activity's end is written alone")

		children := childrenOf(t, b.db, task.ID)
		require.Len(t, children, 1)
		child := storetest.MustCheckLog(t, b.db, children[0].ID)
		requireValue(t, codec.String("a"), output(t, child))
		require.Equal(t, 1, b.x.callCount("echo"))
		storetest.MustCheckLog(t, b.db, task.ID)
		require.Equal(t, []string{journal.EventActivityScheduled, journal.EventActivityCompleted}, journalTypes(t, e, task.ID))
	})
}
