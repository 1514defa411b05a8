package workflowcases

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest/internal/check"
)

// Wait covers waiting workflows: a run's commit (journal
// events, child tasks and the wait in one transaction, compare-and-set on
// the log), the claim of due and woken workflows, and the end of a
// workflow.
func Wait(t *testing.T, newStore func(testing.TB) store.Store) {
	running := func(t *testing.T, s store.Store, p *store.TaskInsertParams) *store.Task {
		t.Helper()
		if p == nil {
			p = &store.TaskInsertParams{}
		}
		p.Kind = store.KindWorkflow
		if p.Function == "" {
			p.Function = "flow"
		}
		return check.MustRunning(t, s, p)
	}
	child := func(id string) *store.TaskInsertParams {
		return &store.TaskInsertParams{
			ID: id, Module: "echo", ModuleDigest: check.Digest, Function: "echo",
			Input: check.Frame(id), OnRestart: store.OnRestartResume, Timeout: time.Second,
			Retry: store.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{"bad"}},
		}
	}

	t.Run("WaitForChildren", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf := running(t, s, &store.TaskInsertParams{OwnerClientID: "client_a", OnRestart: store.OnRestartResume})
		c1, c2 := store.NewID(store.TaskIDPrefix), store.NewID(store.TaskIDPrefix)
		commit, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq, Wait: true,
			Events: []store.EventDraft{
				{Type: "activity.scheduled", Payload: json.RawMessage(`{"future_id":1,"task_id":"` + c1 + `"}`)},
				{Type: "activity.scheduled", Payload: json.RawMessage(`{"future_id":2,"task_id":"` + c2 + `"}`)},
			},
			Children: []*store.TaskInsertParams{child(c1), child(c2)},
		})
		require.NoError(t, err)
		require.Nil(t, commit.Started)
		require.Equal(t, store.StatusRunning, commit.Task.Status, "a waiting workflow stays running")
		require.Equal(t, wf.LastSeq+2, commit.Task.LastSeq)

		for _, id := range []string{c1, c2} {
			c, err := s.TaskGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.StatusQueued, c.Status)
			require.Equal(t, wf.ID, c.ParentTaskID)
			require.Equal(t, "client_a", c.OwnerClientID, "a child belongs to its workflow's owner")
			require.Equal(t, store.KindActivity, c.Kind)
			require.Equal(t, store.OnRestartResume, c.OnRestart)
			require.Equal(t, time.Second, c.Timeout)
			require.Equal(t, 3, c.Retry.MaximumAttempts)
			require.Equal(t, check.Frame(id), c.Input)
			check.MustCheckLog(t, s, id)
		}
		res := claimDue(t, s, time.Now().Add(365*24*time.Hour))
		require.Empty(t, res.Tasks, "a workflow waiting for activities is not due at any time")
		require.True(t, res.NextWakeAt.IsZero())

		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{c1, c2}, check.IDsOf(claimed), "the workflow holds no queue slot")
		check.MustTransition(t, s, &store.TaskTransitionParams{ID: c1, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		check.MustTransition(t, s, &store.TaskTransitionParams{
			ID: c1, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			Output: check.Frame("one"), WakeParent: true,
			ParentEvents: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(`{"task_id":"` + c1 + `"}`)}},
		})
		res = claimDue(t, s, time.Time{})
		require.Equal(t, []string{wf.ID}, check.IDsOf(res.Tasks), "the finished child woke the workflow")
		require.Equal(t, store.StatusRunning, res.Tasks[0].Status)
		require.Equal(t, wf.LastSeq+3, res.Tasks[0].LastSeq)
		require.Empty(t, claimDue(t, s, time.Time{}).Tasks, "a claimed workflow is handed out once")
		check.MustCheckLog(t, s, wf.ID)
	})

	t.Run("LogGrewDuringRun", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf := running(t, s, nil)
		_, err := s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: wf.ID, Wake: true,
			Events: []store.EventDraft{{Type: "signal.received", Payload: json.RawMessage(`{"name":"go"}`)}},
		})
		require.NoError(t, err)
		require.Empty(t, claimDue(t, s, time.Time{}).Tasks, "a signal to a workflow in a run wakes nothing")

		c1 := store.NewID(store.TaskIDPrefix)
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq, Wait: true,
			Events:   []store.EventDraft{{Type: "timer.started"}},
			Children: []*store.TaskInsertParams{child(c1)}, WakeAt: time.Now(), StartChild: true,
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.NotNil(t, res)
		got := res.Task
		require.Equal(t, wf.LastSeq+1, got.LastSeq, "the current task comes with the conflict")
		_, err = s.TaskGet(ctx, c1)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing of a lost commit is written")
		require.Empty(t, claimDue(t, s, time.Now().Add(time.Hour)).Tasks)
		require.Equal(t, "response.created task.status_changed response.in_progress signal.received", check.Types(check.MustEvents(t, s, wf.ID)))

		_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: wf.ID, LastSeq: got.LastSeq, Wait: true})
		require.NoError(t, err, "a run over the grown log commits")
	})

	t.Run("TimerFallsDue", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		early, late := running(t, s, nil), running(t, s, nil)
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		for _, w := range []struct {
			task *store.Task
			at   time.Time
		}{{late, at.Add(time.Minute)}, {early, at}} {
			_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: w.task.ID, LastSeq: w.task.LastSeq, Wait: true, WakeAt: w.at})
			require.NoError(t, err)
		}
		res := claimDue(t, s, at.Add(-time.Millisecond))
		require.Empty(t, res.Tasks)
		require.True(t, at.Equal(res.NextWakeAt), "next wake %s, want %s", res.NextWakeAt, at)
		res = claimDue(t, s, at)
		require.Equal(t, []string{early.ID}, check.IDsOf(res.Tasks))
		require.True(t, at.Add(time.Minute).Equal(res.NextWakeAt))

		// A signal wakes a workflow before its time.
		_, err := s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: late.ID, Wake: true,
			Events: []store.EventDraft{{Type: "signal.received"}},
		})
		require.NoError(t, err)
		res = claimDue(t, s, time.Time{})
		require.Equal(t, []string{late.ID}, check.IDsOf(res.Tasks))
		require.True(t, res.NextWakeAt.IsZero())
	})

	t.Run("End", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		tests := []struct {
			name string
			p    store.WorkflowCommitParams
			want string
		}{
			{name: "Completed", p: store.WorkflowCommitParams{
				To: store.StatusCompleted, Output: check.Frame("done"),
				Events: []store.EventDraft{{Type: "timer.fired"}},
			}, want: "timer.fired response.completed"},
			{name: "Failed", p: store.WorkflowCommitParams{
				To:    store.StatusFailed,
				Error: &store.TaskError{Code: "nondeterminism", Message: "step 1"},
			}, want: "response.failed"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wf := running(t, s, nil)
				// It waited once, with a timer, and was claimed.
				_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: wf.ID, LastSeq: wf.LastSeq, Wait: true, WakeAt: time.Now()})
				require.NoError(t, err)
				require.Len(t, claimDue(t, s, time.Time{}).Tasks, 1)

				c1 := store.NewID(store.TaskIDPrefix)
				p := tc.p
				p.ID = wf.ID
				p.Children = []*store.TaskInsertParams{child(c1)}
				res, err := s.WorkflowCommit(ctx, &p)
				require.NoError(t, err)
				got := res.Task
				require.Equal(t, p.To, got.Status)
				require.Equal(t, "response.created task.status_changed response.in_progress "+tc.want, check.Types(check.MustEvents(t, s, wf.ID)))
				check.MustCheckLog(t, s, wf.ID)
				c, err := s.TaskGet(ctx, c1)
				require.NoError(t, err)
				require.Equal(t, wf.ID, c.ParentTaskID, "activities scheduled by the last run still run")

				_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: wf.ID, LastSeq: got.LastSeq, Wait: true})
				require.ErrorIs(t, err, store.ErrConflict, "a finished workflow waits for nothing")
				_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: wf.ID, Wake: true, Events: []store.EventDraft{{Type: "signal.received"}}})
				require.ErrorIs(t, err, store.ErrTaskFinished)
			})
		}
	})

	t.Run("StaleWaits", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		retried := running(t, s, &store.TaskInsertParams{OnRestart: store.OnRestartRetry})
		cancelled := running(t, s, nil)
		at := time.Now().Truncate(time.Millisecond)
		for _, w := range []*store.Task{retried, cancelled} {
			_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: w.ID, LastSeq: w.LastSeq, Wait: true, WakeAt: at})
			require.NoError(t, err)
		}
		_, _, err := s.TaskCancel(ctx, cancelled.ID)
		require.NoError(t, err)
		// A new attempt of a requeued workflow runs while its old wait is
		// still due: the old wait must not hand it out a second time.
		check.MustTransition(t, s, &store.TaskTransitionParams{ID: retried.ID, From: []store.Status{store.StatusRunning}, To: store.StatusQueued, ClearCheckpoint: true})
		check.MustLoading(t, s, retried.ID)
		again := check.MustTransition(t, s, &store.TaskTransitionParams{ID: retried.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
		require.Equal(t, 2, again.Attempt)
		res := claimDue(t, s, at)
		require.Empty(t, res.Tasks, "stale waits are dropped")
		require.True(t, res.NextWakeAt.IsZero())
	})

	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		inRun := running(t, s, &store.TaskInsertParams{OnRestart: store.OnRestartResume})
		waiting := running(t, s, &store.TaskInsertParams{OnRestart: store.OnRestartResume})
		activity := check.MustRunning(t, s, &store.TaskInsertParams{OnRestart: store.OnRestartResume})
		_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: waiting.ID, LastSeq: waiting.LastSeq, Wait: true})
		require.NoError(t, err)
		waitingBefore := check.MustCheckLog(t, s, waiting.ID)
		rec, err := s.TaskRecover(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{inRun.ID, waiting.ID, activity.ID}, rec.Resumed)
		for _, id := range []string{inRun.ID, activity.ID} {
			evs := check.MustEvents(t, s, id)
			require.Equal(t, store.EventRecovered, evs[len(evs)-1].Type, "what was running when the daemon stopped says so")
		}
		require.Equal(t, waitingBefore.LastSeq, check.MustCheckLog(t, s, waiting.ID).LastSeq,
			"a workflow that waited gets no event: nothing of it was running")
		for _, id := range []string{inRun.ID, activity.ID} {
			got := check.MustCheckLog(t, s, id)
			require.True(t, got.Lease.Held(), "a resumed task gets a fresh lease: the run before the restart is fenced out")
			require.EqualValues(t, 1, got.Lease.Token)
		}

		require.NoError(t, s.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: rec.Resumed}))
		resumed := check.MustCheckLog(t, s, inRun.ID)
		require.False(t, resumed.Lease.Held(), "a claimable workflow holds no lease")
		require.True(t, check.MustCheckLog(t, s, activity.ID).Lease.Held(), "WorkflowResume leaves other tasks alone")
		claimed := claimDue(t, s, time.Time{}).Tasks
		require.Equal(t, []string{inRun.ID}, check.IDsOf(claimed),
			"the workflow that was in a run runs again; the waiting one keeps waiting")
		require.EqualValues(t, 2, claimed[0].Lease.Token)
		require.True(t, claimed[0].Lease.Held())
		require.NoError(t, s.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: []string{store.NewID(store.TaskIDPrefix)}}), "unknown ids are ignored")
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf := running(t, s, nil)
		act := check.MustRunning(t, s, nil)
		bad := child(store.NewID(store.TaskIDPrefix))
		bad.ParentEvents = []store.EventDraft{{Type: "x"}}
		tests := []struct {
			name string
			p    store.WorkflowCommitParams
			want error
		}{
			{name: "NoID", p: store.WorkflowCommitParams{Wait: true}, want: store.ErrInvalid},
			{name: "NoStatus", p: store.WorkflowCommitParams{ID: wf.ID}, want: store.ErrInvalid},
			{name: "WaitAndEnd", p: store.WorkflowCommitParams{ID: wf.ID, Wait: true, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "FailedWithoutError", p: store.WorkflowCommitParams{ID: wf.ID, To: store.StatusFailed}, want: store.ErrInvalid},
			{name: "ReservedEvent", p: store.WorkflowCommitParams{
				ID: wf.ID, Wait: true, LastSeq: wf.LastSeq,
				Events: []store.EventDraft{{Type: store.EventResponseCompleted}},
			}, want: store.ErrInvalid},
			{name: "ChildWithParentEvents", p: store.WorkflowCommitParams{
				ID: wf.ID, Wait: true, LastSeq: wf.LastSeq,
				Children: []*store.TaskInsertParams{bad},
			}, want: store.ErrInvalid},
			{name: "Activity", p: store.WorkflowCommitParams{ID: act.ID, Wait: true, LastSeq: act.LastSeq}, want: store.ErrInvalid},
			{name: "Unknown", p: store.WorkflowCommitParams{ID: store.NewID(store.TaskIDPrefix), Wait: true}, want: store.ErrNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.WorkflowCommit(ctx, &tc.p)
				require.ErrorIs(t, err, tc.want)
			})
		}
		check.MustCheckLog(t, s, wf.ID)
		require.Equal(t, wf.LastSeq, check.MustCheckLog(t, s, wf.ID).LastSeq, "no failed commit wrote anything")
	})
}

// HandOff covers the hand-offs that spare a run of a workflow
// two commits per activity: the child it schedules started in its commit,
// and the workflow handed to whoever ends that child.
func HandOff(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("StartChild", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf := check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, Function: "flow", OwnerClientID: "client_a"})
		c1, c2 := store.NewID(store.TaskIDPrefix), store.NewID(store.TaskIDPrefix)
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq, Wait: true, StartChild: true,
			Children: []*store.TaskInsertParams{
				{ID: c1, Module: "m", ModuleDigest: check.Digest, Function: "a"},
				{ID: c2, Module: "m", ModuleDigest: check.Digest, Function: "b"},
			},
		})
		require.NoError(t, err)
		require.NotNil(t, res.Started)
		require.Equal(t, c1, res.Started.ID)
		require.Equal(t, store.StatusRunning, res.Started.Status)
		require.Equal(t, 1, res.Started.Attempt)
		require.False(t, res.Started.StartedAt.IsZero())
		require.Equal(t, "response.created task.status_changed response.in_progress", check.Types(check.MustEvents(t, s, c1)))
		check.MustCheckLog(t, s, c1)
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "only the second child is left to claim")
		require.Equal(t, c2, claimed[0].ID)
	})

	t.Run("ChildEnd", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		tests := []struct {
			name    string
			waiting bool
		}{
			{name: "Waiting", waiting: true},
			{name: "InRun", waiting: false},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wf, res := waitOnStarted(t, s)
				c1 := res.Started.ID
				if !tc.waiting {
					// A signal woke the workflow and the scheduler claimed it
					// for a run meanwhile.
					_, err := s.EventAppend(ctx, &store.EventAppendParams{TaskID: wf.ID, Wake: true, Events: []store.EventDraft{{Type: "signal.received"}}})
					require.NoError(t, err)
					claimed, err := s.WorkflowClaim(ctx, &store.WorkflowClaimParams{Limit: 10})
					require.NoError(t, err)
					require.Len(t, claimed.Tasks, 1)
				}
				end, err := s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{
					ID: res.Started.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: check.Frame("a"),
					ParentEvents: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(`{"task_id":"` + c1 + `"}`)}},
				})
				require.NoError(t, err)
				require.Equal(t, store.StatusCompleted, end.Task.Status)
				evs := check.MustEvents(t, s, wf.ID)
				require.Equal(t, "activity.completed", evs[len(evs)-1].Type)
				if tc.waiting {
					require.NotNil(t, end.Parent, "a waiting workflow is handed to the child's worker")
					require.Equal(t, wf.ID, end.Parent.ID)
					require.Equal(t, store.StatusRunning, end.Parent.Status)
				} else {
					require.Nil(t, end.Parent, "a workflow in a run is not handed out twice")
				}
				again, err := s.WorkflowClaim(ctx, &store.WorkflowClaimParams{Limit: 10})
				require.NoError(t, err)
				require.Empty(t, again.Tasks, "the workflow is in one place only")
				check.MustCheckLog(t, s, c1)
				check.MustCheckLog(t, s, wf.ID)
			})
		}
	})

	t.Run("ChildEndOfFinishedWorkflow", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wf, res := waitOnStarted(t, s)
		c1 := res.Started.ID
		_, _, err := s.TaskCancel(ctx, wf.ID)
		require.NoError(t, err)
		check.MustTransition(t, s, &store.TaskTransitionParams{ID: wf.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})
		end, err := s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{
			ID: res.Started.ID, From: []store.Status{store.StatusRunning},
			To: store.StatusFailed, Error: &store.TaskError{Code: "x"}, ParentEvents: []store.EventDraft{{Type: "activity.failed"}},
		})
		require.NoError(t, err)
		require.Nil(t, end.Parent)
		require.Equal(t, store.StatusFailed, end.Task.Status)
		check.MustCheckLog(t, s, wf.ID)
		_, err = s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{ID: c1, From: []store.Status{store.StatusRunning}, To: store.StatusQueued})
		require.ErrorIs(t, err, store.ErrInvalid, "only an end")
	})
}

// waitOnStarted commits a new running workflow waiting on one child
// activity, started in the commit, and returns the workflow as inserted
// and the commit's result.
func waitOnStarted(t *testing.T, s store.Store) (*store.Task, *store.WorkflowCommitResult) {
	t.Helper()
	wf := check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, Function: "flow"})
	res, err := s.WorkflowCommit(t.Context(), &store.WorkflowCommitParams{
		ID: wf.ID, LastSeq: wf.LastSeq, Wait: true, StartChild: true,
		Children: []*store.TaskInsertParams{{ID: store.NewID(store.TaskIDPrefix), Module: "m", ModuleDigest: check.Digest, Function: "a"}},
	})
	require.NoError(t, err)
	require.NotNil(t, res.Started)
	return wf, res
}

// claimDue claims up to 10 waiting workflows due at at.
func claimDue(t *testing.T, s store.Store, at time.Time) *store.WorkflowClaimResult {
	t.Helper()
	res, err := s.WorkflowClaim(t.Context(), &store.WorkflowClaimParams{Limit: 10, Now: at})
	require.NoError(t, err)
	return res
}
