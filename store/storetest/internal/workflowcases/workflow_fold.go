package workflowcases

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest/internal/check"
)

// Fold covers a child activity's end folded into the commit of
// the workflow run that went on from it (WorkflowCommitParams.EndChild):
// both are written in one transaction, only while the workflow waits on an
// unchanged log, at the time the run used (WorkflowCommitParams.At).
func Fold(t *testing.T, newStore func(testing.TB) store.Store) {
	draft := func(typ, taskID string) store.EventDraft {
		return store.EventDraft{Type: typ, Payload: json.RawMessage(`{"task_id":"` + taskID + `"}`)}
	}
	activity := func(id string) *store.TaskInsertParams {
		return &store.TaskInsertParams{ID: id, Module: "m", ModuleDigest: check.Digest, Function: "a"}
	}
	// waitOnChild runs a workflow whose first run scheduled one activity,
	// started it in its commit and waits, with a timer due at wakeAt. It
	// returns both tasks as they are after that commit.
	waitOnChild := func(t *testing.T, s store.Store, wakeAt time.Time) (wf, child *store.Task) {
		t.Helper()
		wf = check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, Function: "flow"})
		id := store.NewID(store.TaskIDPrefix)
		res, err := s.WorkflowCommit(t.Context(), &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq,
			Wait: true, WakeAt: wakeAt, StartChild: true,
			Events:   []store.EventDraft{draft("activity.scheduled", id)},
			Children: []*store.TaskInsertParams{activity(id)},
		})
		require.NoError(t, err)
		require.NotNil(t, res.Started)
		require.Equal(t, store.StatusRunning, res.Started.Status)
		return res.Task, res.Started
	}
	// unchanged checks that task id is as before: same status, same log.
	unchanged := func(t *testing.T, s store.Store, before *store.Task, log string) {
		t.Helper()
		got := check.MustCheckLog(t, s, before.ID)
		require.Equal(t, before.Status, got.Status, "task %s: status", before.ID)
		require.Equal(t, before.LastSeq, got.LastSeq, "task %s: last_seq", before.ID)
		require.Equal(t, log, check.Types(check.MustEvents(t, s, before.ID)), "task %s: log", before.ID)
	}

	t.Run("WaitAgain", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wakeAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		wf, c1 := waitOnChild(t, s, time.Time{})
		c2 := store.NewID(store.TaskIDPrefix)
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq,
			Wait: true, WakeAt: wakeAt, StartChild: true,
			EndChild: &store.TaskTransitionParams{
				ID: c1.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
				Output: check.Frame("one"), Events: []store.EventDraft{{Type: "activity.heartbeat"}},
				ParentEvents: []store.EventDraft{draft("activity.completed", c1.ID)},
			},
			Events: []store.EventDraft{
				draft("activity.scheduled", c2),
				{Type: "timer.started", Payload: json.RawMessage(`{"timer_id":1}`)},
			},
			Children: []*store.TaskInsertParams{activity(c2)},
		})
		require.NoError(t, err)

		child, err := s.TaskGet(ctx, c1.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, child.Status)
		require.Equal(t, check.Frame("one"), child.Output)
		require.Nil(t, child.Error)
		require.False(t, child.FinishedAt.IsZero())
		check.MustCheckLog(t, s, c1.ID)
		require.Equal(t, "response.created task.status_changed response.in_progress activity.heartbeat response.completed",
			check.Types(check.MustEvents(t, s, c1.ID)))
		resp, err := s.ResponseGet(ctx, store.ResponseIDFor(c1.ID))
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, resp.Status)
		require.Equal(t, check.Frame("one"), resp.Output)

		require.NotNil(t, res.Ended, "the ended child comes with the commit")
		require.Equal(t, c1.ID, res.Ended.ID)
		require.Equal(t, store.StatusCompleted, res.Ended.Status)
		require.Equal(t, check.Frame("one"), res.Ended.Output)
		require.Equal(t, child.LastSeq, res.Ended.LastSeq)
		require.True(t, child.FinishedAt.Equal(res.Ended.FinishedAt))

		require.Equal(t, wf.ID, res.Task.ID)
		require.Equal(t, store.StatusRunning, res.Task.Status, "a waiting workflow stays running")
		require.Equal(t, wf.LastSeq+3, res.Task.LastSeq, "the parent event and both events")
		got := check.MustCheckLog(t, s, wf.ID)
		require.Equal(t, res.Task.LastSeq, got.LastSeq)
		evs := check.MustEvents(t, s, wf.ID)
		require.Len(t, evs, int(wf.LastSeq)+4)
		added := evs[wf.LastSeq+1:]
		require.Equal(t, "activity.completed activity.scheduled timer.started", check.Types(added),
			"the parent event comes first, then the run's events")
		for i, e := range added {
			require.Equal(t, wf.LastSeq+1+int64(i), e.Seq, "one gapless run of sequence numbers")
		}
		require.JSONEq(t, `{"task_id":"`+c1.ID+`"}`, string(added[0].Payload))
		require.JSONEq(t, `{"task_id":"`+c2+`"}`, string(added[1].Payload))
		require.JSONEq(t, `{"timer_id":1}`, string(added[2].Payload))

		require.NotNil(t, res.Started)
		require.Equal(t, c2, res.Started.ID)
		next, err := s.TaskGet(ctx, c2)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, next.Status)
		require.Equal(t, wf.ID, next.ParentTaskID)
		check.MustCheckLog(t, s, c2)

		// The workflow waits again, for its new timer.
		due := claimDue(t, s, wakeAt.Add(-time.Millisecond))
		require.Empty(t, due.Tasks, "the folded end hands the workflow to nobody else")
		require.True(t, wakeAt.Equal(due.NextWakeAt), "next wake %s, want %s", due.NextWakeAt, wakeAt)
		due = claimDue(t, s, wakeAt)
		require.Equal(t, []string{wf.ID}, check.IDsOf(due.Tasks))
		require.Equal(t, res.Task.LastSeq, due.Tasks[0].LastSeq)
	})

	t.Run("End", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		childErr := &store.TaskError{Code: "activity_failed", Message: "disk full", Type: "io", NonRetryable: true}
		wfErr := &store.TaskError{Code: "workflow_failed", Message: "step 2"}
		tests := []struct {
			name  string
			child store.TaskTransitionParams
			// event is the type of the parent event of the child's end.
			event string
			p     store.WorkflowCommitParams
			want  string
		}{
			{
				name:  "CompletedAfterFailedChild",
				child: store.TaskTransitionParams{From: []store.Status{store.StatusRunning}, To: store.StatusFailed, Error: childErr},
				event: "activity.failed",
				p: store.WorkflowCommitParams{
					To: store.StatusCompleted, Output: check.Frame("done"),
					Events: []store.EventDraft{{Type: "compensation.done"}},
				},
				want: "activity.failed compensation.done response.completed",
			},
			{
				name:  "FailedAfterCompletedChild",
				child: store.TaskTransitionParams{From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: check.Frame("out")},
				event: "activity.completed",
				p:     store.WorkflowCommitParams{To: store.StatusFailed, Error: wfErr},
				want:  "activity.completed response.failed",
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wf, c1 := waitOnChild(t, s, time.Now().Add(time.Hour))
				end := tc.child
				end.ID = c1.ID
				end.ParentEvents = []store.EventDraft{draft(tc.event, c1.ID)}
				p := tc.p
				p.ID, p.LastSeq, p.EndChild = wf.ID, wf.LastSeq, &end
				res, err := s.WorkflowCommit(ctx, &p)
				require.NoError(t, err)

				child, err := s.TaskGet(ctx, c1.ID)
				require.NoError(t, err)
				require.Equal(t, end.To, child.Status)
				if end.To == store.StatusFailed {
					require.Equal(t, childErr, child.Error)
					require.True(t, child.Output.IsZero())
				} else {
					require.Equal(t, end.Output, child.Output)
					require.Nil(t, child.Error)
				}
				require.Equal(t, store.TerminalEventType(end.To), check.MustEvents(t, s, c1.ID)[child.LastSeq].Type)
				check.MustCheckLog(t, s, c1.ID)
				require.NotNil(t, res.Ended)
				require.Equal(t, c1.ID, res.Ended.ID)
				require.Equal(t, end.To, res.Ended.Status)
				require.Equal(t, child.LastSeq, res.Ended.LastSeq)

				got := check.MustCheckLog(t, s, wf.ID)
				require.Equal(t, p.To, got.Status)
				require.Equal(t, p.To, res.Task.Status)
				require.Equal(t, got.LastSeq, res.Task.LastSeq)
				if p.To == store.StatusCompleted {
					require.Equal(t, p.Output, got.Output)
				} else {
					require.Equal(t, p.Error, got.Error)
				}
				require.Equal(t, tc.want, check.Types(check.MustEvents(t, s, wf.ID)[wf.LastSeq+1:]),
					"the parent event precedes the workflow's events and its end")
				require.Nil(t, res.Started)

				// The ended workflow no longer waits: its timer is gone.
				due := claimDue(t, s, time.Time{})
				require.Empty(t, due.Tasks)
				require.True(t, due.NextWakeAt.IsZero(), "the ended workflow's wait is dropped")
				_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: wf.ID, LastSeq: got.LastSeq, Wait: true})
				require.ErrorIs(t, err, store.ErrConflict, "a finished workflow waits for nothing")
			})
		}
	})

	t.Run("Conflict", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			// setup brings about the state under test. It returns the
			// workflow as the run read it and the child to end.
			setup func(t *testing.T, s store.Store, wakeAt time.Time) (wf, child *store.Task)
			// end commits the workflow's end rather than a new wait.
			end bool
			// waiting is whether the workflow still waits afterwards.
			waiting bool
			// childConflict is set when the child, not the workflow, is
			// in the wrong state.
			childConflict bool
		}{
			{
				name: "LogGrew",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf, c := waitOnChild(t, s, wakeAt)
					_, err := s.EventAppend(t.Context(), &store.EventAppendParams{
						TaskID: wf.ID, Wake: true,
						Events: []store.EventDraft{{Type: "signal.received", Payload: json.RawMessage(`{"name":"stop"}`)}},
					})
					require.NoError(t, err)
					return wf, c
				},
				waiting: true,
			},
			{
				name: "LogGrewBeforeEnd",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf, c := waitOnChild(t, s, wakeAt)
					_, err := s.EventAppend(t.Context(), &store.EventAppendParams{
						TaskID: wf.ID,
						Events: []store.EventDraft{{Type: store.EventLog, Payload: json.RawMessage(`{"msg":"x"}`)}},
					})
					require.NoError(t, err)
					return wf, c
				},
				end:     true,
				waiting: true,
			},
			{
				name: "Claimed",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					_, c := waitOnChild(t, s, wakeAt)
					due := claimDue(t, s, wakeAt)
					require.Len(t, due.Tasks, 1, "the timer fell due and the scheduler claimed the workflow")
					return due.Tasks[0], c
				},
			},
			{
				name: "ClaimedBeforeEnd",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					_, c := waitOnChild(t, s, wakeAt)
					due := claimDue(t, s, wakeAt)
					require.Len(t, due.Tasks, 1)
					return due.Tasks[0], c
				},
				end: true,
			},
			{
				name: "NeverWaited",
				setup: func(t *testing.T, s store.Store, _ time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf := check.MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, Function: "flow"})
					c := check.MustRunning(t, s, &store.TaskInsertParams{ParentTaskID: wf.ID})
					got, err := s.TaskGet(t.Context(), wf.ID)
					require.NoError(t, err)
					return got, c
				},
			},
			{
				name: "WaitOfOlderAttempt",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf, c := waitOnChild(t, s, wakeAt)
					check.MustTransition(t, s, &store.TaskTransitionParams{ID: wf.ID, From: []store.Status{store.StatusRunning}, To: store.StatusQueued})
					check.MustLoading(t, s, wf.ID)
					again := check.MustTransition(t, s, &store.TaskTransitionParams{ID: wf.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
					require.Equal(t, 2, again.Attempt)
					return again, c
				},
			},
			{
				name: "ChildCancelling",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf, c := waitOnChild(t, s, wakeAt)
					got, changed, err := s.TaskCancel(t.Context(), c.ID)
					require.NoError(t, err)
					require.True(t, changed)
					require.Equal(t, store.StatusCancelling, got.Status)
					return wf, got
				},
				waiting:       true,
				childConflict: true,
			},
			{
				name: "ChildEnded",
				setup: func(t *testing.T, s store.Store, wakeAt time.Time) (*store.Task, *store.Task) {
					t.Helper()
					wf, c := waitOnChild(t, s, wakeAt)
					got := check.MustTransition(t, s, &store.TaskTransitionParams{
						ID: c.ID, From: []store.Status{store.StatusRunning},
						To: store.StatusFailed, Error: &store.TaskError{Code: "timeout"},
					})
					return wf, got
				},
				waiting:       true,
				childConflict: true,
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				ctx := t.Context()
				wakeAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
				wf, c := tc.setup(t, s, wakeAt)
				wfBefore, err := s.TaskGet(ctx, wf.ID)
				require.NoError(t, err)
				wfLog := check.Types(check.MustEvents(t, s, wf.ID))
				cBefore, err := s.TaskGet(ctx, c.ID)
				require.NoError(t, err)
				cLog := check.Types(check.MustEvents(t, s, c.ID))

				c2 := store.NewID(store.TaskIDPrefix)
				p := &store.WorkflowCommitParams{
					ID: wf.ID, LastSeq: wf.LastSeq, StartChild: true,
					EndChild: &store.TaskTransitionParams{
						ID: c.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
						Output: check.Frame("late"), ParentEvents: []store.EventDraft{draft("activity.completed", c.ID)},
					},
					Events:   []store.EventDraft{draft("activity.scheduled", c2)},
					Children: []*store.TaskInsertParams{activity(c2)},
				}
				if tc.end {
					p.To, p.Output = store.StatusCompleted, check.Frame("done")
				} else {
					p.Wait, p.WakeAt = true, wakeAt.Add(time.Hour)
				}
				res, err := s.WorkflowCommit(ctx, p)
				require.ErrorIs(t, err, store.ErrConflict)
				if !tc.childConflict {
					require.NotNil(t, res, "the current workflow comes with the conflict")
					require.Equal(t, wf.ID, res.Task.ID)
					require.Equal(t, wfBefore.Status, res.Task.Status)
					require.Equal(t, wfBefore.LastSeq, res.Task.LastSeq)
					require.Nil(t, res.Ended)
				}

				unchanged(t, s, cBefore, cLog)
				unchanged(t, s, wfBefore, wfLog)
				_, err = s.TaskGet(ctx, c2)
				require.ErrorIs(t, err, store.ErrNotFound, "nothing of a lost commit is written")
				due := claimDue(t, s, wakeAt)
				if tc.waiting {
					require.Equal(t, []string{wf.ID}, check.IDsOf(due.Tasks), "the workflow still waits, for its old timer")
				} else {
					require.Empty(t, due.Tasks, "the lost commit made the workflow wait")
				}
			})
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		wakeAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		wf, c := waitOnChild(t, s, wakeAt)
		otherWf, otherChild := waitOnChild(t, s, wakeAt)
		act := check.MustRunning(t, s, nil)
		running := []store.Status{store.StatusRunning}
		tests := []struct {
			name string
			end  store.TaskTransitionParams
			want error
		}{
			{name: "NotAChild", end: store.TaskTransitionParams{ID: act.ID, From: running, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "ChildOfAnotherWorkflow", end: store.TaskTransitionParams{ID: otherChild.ID, From: running, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "TheWorkflow", end: store.TaskTransitionParams{ID: wf.ID, From: running, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "ToCancelled", end: store.TaskTransitionParams{ID: c.ID, From: running, To: store.StatusCancelled}, want: store.ErrInvalid},
			{name: "ToQueued", end: store.TaskTransitionParams{ID: c.ID, From: running, To: store.StatusQueued}, want: store.ErrInvalid},
			{name: "ToCancelling", end: store.TaskTransitionParams{ID: c.ID, From: running, To: store.StatusCancelling}, want: store.ErrInvalid},
			{name: "FailedWithoutError", end: store.TaskTransitionParams{ID: c.ID, From: running, To: store.StatusFailed}, want: store.ErrInvalid},
			{name: "NoFrom", end: store.TaskTransitionParams{ID: c.ID, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "FromLoading", end: store.TaskTransitionParams{
				ID: c.ID, From: []store.Status{store.StatusLoading}, To: store.StatusFailed,
				Error: &store.TaskError{Code: "boom"},
			}, want: store.ErrInvalid},
			{name: "FromRunningOrLoading", end: store.TaskTransitionParams{
				ID: c.ID, From: []store.Status{store.StatusRunning, store.StatusLoading},
				To: store.StatusCompleted,
			}, want: store.ErrInvalid},
			{name: "NoID", end: store.TaskTransitionParams{From: running, To: store.StatusCompleted}, want: store.ErrInvalid},
			{name: "ReservedParentEvent", end: store.TaskTransitionParams{
				ID: c.ID, From: running, To: store.StatusCompleted,
				ParentEvents: []store.EventDraft{{Type: store.EventResponseCompleted}},
			}, want: store.ErrInvalid},
			{name: "Unknown", end: store.TaskTransitionParams{ID: store.NewID(store.TaskIDPrefix), From: running, To: store.StatusCompleted}, want: store.ErrNotFound},
		}
		logs := map[string]string{}
		before := map[string]*store.Task{}
		for _, id := range []string{wf.ID, c.ID, otherWf.ID, otherChild.ID, act.ID} {
			task, err := s.TaskGet(ctx, id)
			require.NoError(t, err)
			before[id], logs[id] = task, check.Types(check.MustEvents(t, s, id))
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				c2 := store.NewID(store.TaskIDPrefix)
				end := tc.end
				if end.ParentEvents == nil {
					end.ParentEvents = []store.EventDraft{draft("activity.completed", end.ID)}
				}
				_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
					ID: wf.ID, LastSeq: wf.LastSeq, Wait: true,
					EndChild: &end, Events: []store.EventDraft{draft("activity.scheduled", c2)},
					Children: []*store.TaskInsertParams{activity(c2)},
				})
				require.ErrorIs(t, err, tc.want)
				_, err = s.TaskGet(ctx, c2)
				require.ErrorIs(t, err, store.ErrNotFound, "nothing of a refused commit is written")
			})
		}
		for id, task := range before {
			unchanged(t, s, task, logs[id])
		}
		require.ElementsMatch(t, []string{wf.ID, otherWf.ID}, check.IDsOf(claimDue(t, s, wakeAt).Tasks), "both workflows still wait")
	})

	t.Run("At", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		base := time.Now().Add(-time.Hour).Truncate(time.Second)
		at := base.Add(123456789 * time.Nanosecond)
		want := base.Add(123 * time.Millisecond)
		tests := []struct {
			name string
			wait bool
		}{
			{name: "Wait", wait: true},
			{name: "End", wait: false},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wf, c1 := waitOnChild(t, s, time.Time{})
				c2 := store.NewID(store.TaskIDPrefix)
				p := &store.WorkflowCommitParams{
					ID: wf.ID, LastSeq: wf.LastSeq, At: at,
					EndChild: &store.TaskTransitionParams{
						ID: c1.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
						Output: check.Frame("one"), Events: []store.EventDraft{{Type: "activity.heartbeat"}},
						ParentEvents: []store.EventDraft{draft("activity.completed", c1.ID)},
					},
					Events:   []store.EventDraft{draft("activity.scheduled", c2), {Type: "marker.recorded"}},
					Children: []*store.TaskInsertParams{activity(c2)},
				}
				if tc.wait {
					p.Wait = true
				} else {
					p.To, p.Output = store.StatusCompleted, check.Frame("done")
				}
				res, err := s.WorkflowCommit(ctx, p)
				require.NoError(t, err)

				// atFrom checks that the events of a log from seq on carry the
				// commit's time, and those before do not.
				atFrom := func(id string, seq int64, n int) {
					t.Helper()
					evs := check.MustEvents(t, s, id)
					require.Len(t, evs, int(seq)+n, "task %s: events", id)
					for _, e := range evs {
						if e.Seq < seq {
							require.False(t, want.Equal(e.CreatedAt), "task %s#%d %s was written before the commit", id, e.Seq, e.Type)
							continue
						}
						require.True(t, want.Equal(e.CreatedAt), "task %s#%d %s at %s, want %s", id, e.Seq, e.Type, e.CreatedAt, want)
					}
				}
				wfEvents := 3 // activity.completed activity.scheduled marker.recorded
				if !tc.wait {
					wfEvents++ // response.completed
				}
				atFrom(wf.ID, wf.LastSeq+1, wfEvents)
				atFrom(c1.ID, c1.LastSeq+1, 2) // activity.heartbeat response.completed
				atFrom(c2, 0, 1)               // response.created

				child, err := s.TaskGet(ctx, c1.ID)
				require.NoError(t, err)
				require.True(t, want.Equal(child.FinishedAt), "child finished at %s, want %s", child.FinishedAt, want)
				require.True(t, want.Equal(child.UpdatedAt), "child updated at %s, want %s", child.UpdatedAt, want)
				require.True(t, want.Equal(res.Ended.FinishedAt), "ended child finished at %s, want %s", res.Ended.FinishedAt, want)
				resp, err := s.ResponseGet(ctx, store.ResponseIDFor(c1.ID))
				require.NoError(t, err)
				require.True(t, want.Equal(resp.FinishedAt), "response finished at %s, want %s", resp.FinishedAt, want)
				got, err := s.TaskGet(ctx, wf.ID)
				require.NoError(t, err)
				require.True(t, want.Equal(got.UpdatedAt), "workflow updated at %s, want %s", got.UpdatedAt, want)
				if !tc.wait {
					require.True(t, want.Equal(got.FinishedAt), "workflow finished at %s, want %s", got.FinishedAt, want)
				}
				next, err := s.TaskGet(ctx, c2)
				require.NoError(t, err)
				require.True(t, want.Equal(next.CreatedAt), "new child created at %s, want %s", next.CreatedAt, want)
				check.MustCheckLog(t, s, wf.ID)
				check.MustCheckLog(t, s, c1.ID)
			})
		}
	})
}
