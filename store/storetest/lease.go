package storetest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// expiredTTL is a lease that has run out by the time a test reclaims
// (after waitExpired).
const expiredTTL = time.Millisecond

// waitExpired waits until leases of expiredTTL given before the call have
// expired by the store's clock.
func waitExpired() { time.Sleep(30 * time.Millisecond) }

// MustClaim inserts a task and claims it for host with a lease of ttl: the
// task is loading, or running with start. The store must have no other
// queued task.
func MustClaim(tb testing.TB, s store.Store, host string, ttl time.Duration, p *store.TaskInsertParams, start bool) *store.Task {
	tb.Helper()
	if p == nil {
		p = &store.TaskInsertParams{}
	}
	if start {
		p.Start, p.Host, p.LeaseTTL = true, host, ttl
		t := MustInsertTask(tb, s, p)
		require.Equal(tb, host, t.Lease.Host)
		return t
	}
	t := MustInsertTask(tb, s, p)
	claimed, err := s.TaskClaim(tb.Context(), &store.TaskClaimParams{Host: host, LeaseTTL: ttl})
	require.NoError(tb, err)
	require.Len(tb, claimed, 1)
	require.Equal(tb, t.ID, claimed[0].ID)
	return claimed[0]
}

// recoveredEvent is the payload of a task.recovered event.
type recoveredEvent struct {
	Status       store.Status `json:"status"`
	Reason       string       `json:"reason"`
	PreviousHost string       `json:"previous_host"`
	Host         string       `json:"host"`
}

func testLease(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("ClaimsGiveLeases", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		before := time.Now().Add(-5 * time.Second) // the store's clock may be another host's
		claimed := MustClaim(t, s, "h1", time.Minute, nil, false)
		require.Equal(t, "h1", claimed.Lease.Host)
		require.EqualValues(t, 1, claimed.Lease.Token)
		require.True(t, claimed.Lease.Held())
		require.True(t, claimed.Lease.ExpiresAt.After(before.Add(time.Minute)), "expiry %v", claimed.Lease.ExpiresAt)
		got, err := s.TaskGet(ctx, claimed.ID)
		require.NoError(t, err)
		require.Equal(t, claimed.Lease, got.Lease, "the claim returns the lease it stored")

		// Back to queued releases the lease and keeps the token; the next
		// claim gives the next token.
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: claimed.ID, From: []store.Status{store.StatusLoading}, To: store.StatusQueued, Lease: 1,
		})
		got, err = s.TaskGet(ctx, claimed.ID)
		require.NoError(t, err)
		require.Equal(t, store.Lease{Token: 1}, got.Lease)
		again, err := s.TaskClaim(ctx, &store.TaskClaimParams{Host: "h2"})
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, "h2", again[0].Lease.Host)
		require.EqualValues(t, 2, again[0].Lease.Token)
		require.True(t, again[0].Lease.ExpiresAt.After(before.Add(store.DefaultLeaseTTL)), "the default lease")

		// A finished task holds no lease.
		done := MustTransition(t, s, &store.TaskTransitionParams{
			ID: claimed.ID, From: []store.Status{store.StatusLoading}, To: store.StatusFailed,
			Error: &store.TaskError{Code: "x"}, Lease: 2,
		})
		require.Equal(t, store.Lease{Token: 2}, done.Lease)

		started := MustClaim(t, s, "h3", time.Minute, nil, true)
		require.EqualValues(t, 1, started.Lease.Token)
		require.Equal(t, store.StatusRunning, started.Status)
		require.True(t, started.Lease.ExpiresAt.After(before.Add(time.Minute)), "expiry %v", started.Lease.ExpiresAt)
		got, err = s.TaskGet(ctx, started.ID)
		require.NoError(t, err)
		require.Equal(t, started.Lease, got.Lease, "a task inserted running returns the lease it stored")
	})

	t.Run("WorkflowLeases", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		wf := MustClaim(t, s, "h1", time.Minute, &store.TaskInsertParams{Kind: store.KindWorkflow}, true)
		childID := store.NewID(store.TaskIDPrefix)
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: wf.LastSeq, Wait: true, Lease: wf.Lease.Token,
			Children:   []*store.TaskInsertParams{{ID: childID, Module: "m", ModuleDigest: Digest, Function: "a"}},
			StartChild: true, Host: "h1", LeaseTTL: time.Minute,
		})
		require.NoError(t, err)
		require.False(t, res.Task.Lease.Held(), "a waiting workflow holds no lease")
		require.EqualValues(t, 1, res.Task.Lease.Token)
		require.Equal(t, "h1", res.Started.Lease.Host)
		require.EqualValues(t, 1, res.Started.Lease.Token)
		stored, err := s.TaskGet(ctx, childID)
		require.NoError(t, err)
		require.Equal(t, res.Started.Lease, stored.Lease)
		require.True(t, stored.Lease.Held())

		// The child's end hands the workflow over with a fresh lease.
		end, err := s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{
			ID: childID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted,
			Lease: 1, Host: "h2", LeaseTTL: time.Minute,
		})
		require.NoError(t, err)
		require.NotNil(t, end.Parent)
		require.Equal(t, "h2", end.Parent.Lease.Host)
		require.EqualValues(t, 2, end.Parent.Lease.Token)
		got, err := s.TaskGet(ctx, wf.ID)
		require.NoError(t, err)
		require.Equal(t, end.Parent.Lease, got.Lease)

		// Waiting again and claimed through WorkflowClaim: the next lease.
		_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: got.LastSeq, Wait: true, WakeAt: time.Now().Add(-time.Second), Lease: 2,
		})
		require.NoError(t, err)
		claim, err := s.WorkflowClaim(ctx, &store.WorkflowClaimParams{Host: "h3", LeaseTTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, claim.Tasks, 1)
		require.Equal(t, "h3", claim.Tasks[0].Lease.Host)
		require.EqualValues(t, 3, claim.Tasks[0].Lease.Token)
		got, err = s.TaskGet(ctx, wf.ID)
		require.NoError(t, err)
		require.Equal(t, claim.Tasks[0].Lease, got.Lease)
	})

	t.Run("Fencing", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		// A running task whose lease expired and moved to h2: token 1 is
		// stale, token 2 is current.
		task := MustClaim(t, s, "h1", expiredTTL, &store.TaskInsertParams{OnRestart: store.OnRestartResume}, true)
		waitExpired()
		rec, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h2", LeaseTTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, rec.Resumed, 1)
		cur := rec.Resumed[0]
		require.EqualValues(t, 2, cur.Lease.Token)

		lost := func(t *testing.T, got *store.Task, err error) {
			t.Helper()
			require.ErrorIs(t, err, store.ErrLeaseLost)
			require.NotNil(t, got, "the task as it is comes with ErrLeaseLost")
			require.Equal(t, cur.LastSeq, got.LastSeq)
			after := MustCheckLog(t, s, task.ID)
			require.Equal(t, cur.LastSeq, after.LastSeq, "a fenced-out write changes nothing")
			require.Equal(t, store.StatusRunning, after.Status)
			require.Equal(t, cur.Lease, after.Lease)
		}
		got, err := s.TaskTransition(ctx, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Lease: 1,
		})
		lost(t, got, err)
		got, err = s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: task.ID, Checkpoint: Frame("stale"), Lease: 1})
		lost(t, got, err)
		_, err = s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}, Lease: 1,
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		_, err = s.EventAppend(ctx, &store.EventAppendParams{
			TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventProgress}}, Lease: 1,
			Progress: &store.TaskProgress{Done: 1},
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.Equal(t, cur.LastSeq, MustCheckLog(t, s, task.ID).LastSeq)
		// A token never handed out is no better.
		got, err = s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: task.ID, Checkpoint: Frame("x"), Lease: 3})
		lost(t, got, err)

		// The current token writes; unfenced writes (a signal, a cancel)
		// are not checked.
		_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}, Lease: 2})
		require.NoError(t, err)
		_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "signal"}}})
		require.NoError(t, err)
		_, changed, err := s.TaskCancel(ctx, task.ID)
		require.NoError(t, err)
		require.True(t, changed)
		MustTransition(t, s, &store.TaskTransitionParams{
			ID: task.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled, Lease: 2,
		})
		// A released lease fences out its own former token too.
		_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}, Lease: 2})
		require.ErrorIs(t, err, store.ErrLeaseLost)
	})

	t.Run("FencingWorkflow", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		wf := MustClaim(t, s, "h1", expiredTTL, &store.TaskInsertParams{Kind: store.KindWorkflow, OnRestart: store.OnRestartResume}, true)
		waitExpired()
		rec, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h2", LeaseTTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, rec.Resumed, 1)
		cur := rec.Resumed[0]
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: cur.LastSeq, To: store.StatusCompleted, Lease: 1,
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.NotNil(t, res)
		require.Equal(t, cur.Lease, res.Task.Lease)
		require.Equal(t, cur.LastSeq, MustCheckLog(t, s, wf.ID).LastSeq)

		// A child whose lease moved on: neither its end nor a commit that
		// folds its end in lands.
		childID := store.NewID(store.TaskIDPrefix)
		res, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: cur.LastSeq, Wait: true, Lease: cur.Lease.Token,
			Children:   []*store.TaskInsertParams{{ID: childID, Module: "m", ModuleDigest: Digest, Function: "a", OnRestart: store.OnRestartResume}},
			StartChild: true, Host: "h2", LeaseTTL: expiredTTL,
		})
		require.NoError(t, err)
		waitExpired()
		rec, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h3", LeaseTTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, rec.Resumed, 1)
		require.Equal(t, childID, rec.Resumed[0].ID)
		child := rec.Resumed[0]
		_, err = s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{
			ID: childID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Lease: 1,
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		fold, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: res.Task.LastSeq, To: store.StatusCompleted,
			EndChild: &store.TaskTransitionParams{ID: childID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Lease: 1},
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.NotNil(t, fold)
		require.NotNil(t, fold.Ended)
		require.Equal(t, child.Lease, fold.Ended.Lease)
		require.Equal(t, child.LastSeq, MustCheckLog(t, s, childID).LastSeq)
		require.Equal(t, res.Task.LastSeq, MustCheckLog(t, s, wf.ID).LastSeq)

		// With the child's current token, the fold commits.
		_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: wf.ID, LastSeq: res.Task.LastSeq, To: store.StatusCompleted,
			EndChild: &store.TaskTransitionParams{ID: childID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Lease: child.Lease.Token},
		})
		require.NoError(t, err)
	})

	t.Run("Extend", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		a := MustClaim(t, s, "h1", expiredTTL, &store.TaskInsertParams{OnRestart: store.OnRestartResume}, true)
		b := MustClaim(t, s, "h1", expiredTTL, nil, true)
		c := MustClaim(t, s, "h1", time.Minute, nil, true)
		waitExpired()
		// b expired but nobody took it over: still h1's to renew. a is
		// taken over first.
		rec, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h2", Limit: 1})
		require.NoError(t, err)
		require.Len(t, rec.Resumed, 1)
		require.Equal(t, a.ID, rec.Resumed[0].ID)

		before := time.Now().Add(-5 * time.Second)
		unknown := store.NewID(store.TaskIDPrefix)
		res, err := s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "h1", TTL: time.Hour, Held: []store.LeaseHeld{
			{TaskID: a.ID, Token: a.Lease.Token},
			{TaskID: b.ID, Token: b.Lease.Token},
			{TaskID: unknown, Token: 1},
			{TaskID: c.ID, Token: c.Lease.Token},
		}})
		require.NoError(t, err)
		require.Equal(t, []string{a.ID, unknown}, res.Lost, "the taken-over task and the unknown one, in order")
		require.Empty(t, res.Cancelling)
		for _, id := range []string{b.ID, c.ID} {
			got, err := s.TaskGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, "h1", got.Lease.Host)
			require.EqualValues(t, 1, got.Lease.Token)
			require.True(t, got.Lease.ExpiresAt.After(before.Add(time.Hour)), "renewed: %v", got.Lease.ExpiresAt)
		}
		// The renewal holds off a takeover; another host cannot renew.
		rec, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h2"})
		require.NoError(t, err)
		require.Empty(t, rec.Resumed)
		require.Empty(t, rec.Failed)
		res, err = s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "h2", Held: []store.LeaseHeld{{TaskID: b.ID, Token: 1}}})
		require.NoError(t, err)
		require.Equal(t, []string{b.ID}, res.Lost)
		res, err = s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "h1"})
		require.NoError(t, err)
		require.Empty(t, res.Lost)

		// A cancel accepted meanwhile is reported with the renewal.
		got, changed, err := s.TaskCancel(ctx, c.ID)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, store.StatusCancelling, got.Status)
		res, err = s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "h1", Held: []store.LeaseHeld{
			{TaskID: a.ID, Token: a.Lease.Token},
			{TaskID: b.ID, Token: b.Lease.Token},
			{TaskID: c.ID, Token: c.Lease.Token},
		}})
		require.NoError(t, err)
		require.Equal(t, []string{a.ID}, res.Lost)
		require.Equal(t, []string{c.ID}, res.Cancelling, "renewed, and cancelling")
	})

	t.Run("ReclaimRestart", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		mine := MustClaim(t, s, "h1", time.Minute, &store.TaskInsertParams{OnRestart: store.OnRestartResume}, true)
		theirs := MustClaim(t, s, "h2", time.Minute, &store.TaskInsertParams{OnRestart: store.OnRestartResume}, true)
		// Without Restart a live lease is left alone.
		res, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h1"})
		require.NoError(t, err)
		require.Empty(t, res.Resumed)
		// h1 starts again: its own live leases are left over, h2's are not.
		res, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h1", Restart: true, LeaseTTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, res.Resumed, 1)
		require.Equal(t, mine.ID, res.Resumed[0].ID)
		require.Equal(t, "h1", res.Resumed[0].Lease.Host)
		require.Equal(t, mine.Lease.Token+1, res.Resumed[0].Lease.Token)
		got, err := s.TaskGet(ctx, theirs.ID)
		require.NoError(t, err)
		require.Equal(t, theirs.Lease, got.Lease)
		// The old run's writes are fenced off.
		_, err = s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: mine.ID, Checkpoint: Frame("x"), Lease: mine.Lease.Token})
		require.ErrorIs(t, err, store.ErrLeaseLost)
	})

	t.Run("Reclaim", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		type cell struct {
			from   store.Status
			policy store.OnRestart
			want   store.Status
		}
		cells := []cell{
			{store.StatusLoading, store.OnRestartFail, store.StatusFailed},
			{store.StatusLoading, store.OnRestartRetry, store.StatusQueued},
			{store.StatusLoading, store.OnRestartResume, store.StatusQueued},
			{store.StatusRunning, store.OnRestartFail, store.StatusFailed},
			{store.StatusRunning, store.OnRestartRetry, store.StatusQueued},
			{store.StatusRunning, store.OnRestartResume, store.StatusRunning},
			{store.StatusCancelling, store.OnRestartFail, store.StatusCancelled},
			{store.StatusCancelling, store.OnRestartResume, store.StatusCancelled},
		}
		tasks := make([]*store.Task, len(cells))
		for i, c := range cells {
			task := MustClaim(t, s, "h1", expiredTTL, &store.TaskInsertParams{OnRestart: c.policy}, c.from != store.StatusLoading)
			if c.from != store.StatusLoading {
				var err error
				task, err = s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: task.ID, Checkpoint: Frame("snap"), Lease: task.Lease.Token})
				require.NoError(t, err)
			}
			if c.from == store.StatusCancelling {
				var err error
				task, _, err = s.TaskCancel(ctx, task.ID)
				require.NoError(t, err)
			}
			tasks[i] = task
		}
		live := MustClaim(t, s, "h1", time.Minute, &store.TaskInsertParams{OnRestart: store.OnRestartFail}, true)
		waiting := MustClaim(t, s, "h1", expiredTTL, &store.TaskInsertParams{Kind: store.KindWorkflow}, true)
		_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: waiting.ID, LastSeq: waiting.LastSeq, Wait: true, Lease: 1})
		require.NoError(t, err)
		queued := MustInsertTask(t, s, &store.TaskInsertParams{OnRestart: store.OnRestartFail})
		waitExpired()

		res, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h2", LeaseTTL: time.Minute})
		require.NoError(t, err)
		var resumed []string
		for _, r := range res.Resumed {
			resumed = append(resumed, r.ID)
			require.Equal(t, "h2", r.Lease.Host)
			require.EqualValues(t, 2, r.Lease.Token)
			require.Equal(t, Frame("snap"), r.Checkpoint)
			got, err := s.TaskGet(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, r, got, "a resumed task is returned as stored")
		}
		for i, c := range cells {
			task := MustCheckLog(t, s, tasks[i].ID)
			require.Equal(t, c.want, task.Status, "%s/%s", c.from, c.policy)
			switch c.want {
			case store.StatusFailed:
				require.Contains(t, res.Failed, task.ID)
				require.Equal(t, store.CodeServerRestarted, task.Error.Code)
			case store.StatusQueued:
				require.Contains(t, res.Requeued, task.ID)
				if c.from == store.StatusRunning {
					require.Equal(t, c.policy == store.OnRestartRetry, task.Checkpoint.IsZero(), "retry starts from scratch")
				}
			case store.StatusCancelled:
				require.Contains(t, res.Cancelled, task.ID)
			case store.StatusRunning:
				require.Contains(t, resumed, task.ID)
			}
			if c.want != store.StatusRunning {
				require.False(t, task.Lease.Held(), "%s/%s", c.from, c.policy)
			}
			// The takeover starts with task.recovered: reason, both hosts.
			events := MustEvents(t, s, task.ID)
			rec := events[tasks[i].LastSeq+1]
			require.Equal(t, store.EventRecovered, rec.Type, "%s/%s: %s", c.from, c.policy, types(events))
			var p recoveredEvent
			require.NoError(t, json.Unmarshal(rec.Payload, &p))
			require.Equal(t, recoveredEvent{Status: c.from, Reason: store.ReasonLeaseExpired, PreviousHost: "h1", Host: "h2"}, p)
			if c.want == store.StatusRunning {
				require.Len(t, events, int(tasks[i].LastSeq)+2)
			} else {
				require.Len(t, events, int(tasks[i].LastSeq)+3, "the status event follows")
			}
		}
		require.Len(t, res.Failed, 2)
		require.Len(t, res.Requeued, 3)
		require.Len(t, res.Cancelled, 2)
		require.Len(t, res.Resumed, 1)
		// A live lease, a waiting workflow and a queued task are not
		// touched.
		for _, before := range []*store.Task{live, waiting, queued} {
			after := MustCheckLog(t, s, before.ID)
			require.NotContains(t, slices.Concat(res.Failed, res.Requeued, res.Cancelled, resumed), before.ID)
			require.Equal(t, before.Status, after.Status)
			if before.ID != waiting.ID {
				require.Equal(t, before.LastSeq, after.LastSeq)
				require.Equal(t, before.Lease, after.Lease)
			}
		}
		require.Equal(t, "h1", live.Lease.Host)
		again, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h3"})
		require.NoError(t, err)
		require.Empty(t, slices.Concat(again.Failed, again.Requeued, again.Cancelled))
		require.Empty(t, again.Resumed)
	})

	t.Run("ReclaimConcurrent", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		const n = 30
		want := make([]string, n)
		for i := range want {
			want[i] = MustClaim(t, s, "h0", expiredTTL, &store.TaskInsertParams{OnRestart: store.OnRestartResume}, true).ID
		}
		waitExpired()
		var (
			mu  sync.Mutex
			got = map[string]string{}
			wg  sync.WaitGroup
		)
		for _, host := range []string{"h1", "h2", "h3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					res, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: host, LeaseTTL: time.Minute, Limit: 4})
					if !assertNoError(t, err) || len(res.Resumed) == 0 {
						return
					}
					mu.Lock()
					for _, task := range res.Resumed {
						if prev, ok := got[task.ID]; ok {
							t.Errorf("task %s taken over by %s and %s", task.ID, prev, host)
						}
						got[task.ID] = host
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, got, n)
		for _, id := range want {
			task := MustCheckLog(t, s, id)
			require.Equal(t, got[id], task.Lease.Host)
			require.EqualValues(t, 2, task.Lease.Token)
			recovered := 0
			for _, e := range MustEvents(t, s, id) {
				if e.Type == store.EventRecovered {
					recovered++
				}
			}
			require.Equal(t, 1, recovered, "one takeover of %s", id)
		}
	})

	t.Run("ReclaimStaleKeys", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		c, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "c", TokenHash: hash("c")})
		require.NoError(t, err)
		begin := func(key string) {
			t.Helper()
			r, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
				ClientID: c.ID, Key: key, RequestDigest: hash(key), ExpiresAt: time.Now().Add(time.Hour),
			})
			require.NoError(t, err)
			require.Equal(t, store.IdempotencyNew, r.Outcome)
		}
		begin("old")
		time.Sleep(50 * time.Millisecond)
		res, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h1"})
		require.NoError(t, err)
		require.Zero(t, res.IdempotencyKeysReleased, "keys are left alone without StaleKeysAfter")
		res, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h1", StaleKeysAfter: time.Hour})
		require.NoError(t, err)
		require.Zero(t, res.IdempotencyKeysReleased, "a young key may still be in flight on a live host")
		res, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h1", StaleKeysAfter: 10 * time.Millisecond})
		require.NoError(t, err)
		require.Equal(t, 1, res.IdempotencyKeysReleased)
		begin("old") // free again
	})

	t.Run("WorkWatch", func(t *testing.T) {
		s := newStore(t)
		ch, stop := s.WorkWatch()
		defer stop()
		drain(ch)
		MustInsertTask(t, s, nil)
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no work signal after a queued task was inserted")
		}
	})

	t.Run("Validate", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		_, err := s.TaskReclaim(ctx, &store.TaskReclaimParams{})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.TaskReclaim(ctx, &store.TaskReclaimParams{Host: "h", Limit: -1})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "-bad"})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.LeaseExtend(ctx, &store.LeaseExtendParams{Host: "h", Held: []store.LeaseHeld{{TaskID: "task_x"}}})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.TaskClaim(ctx, &store.TaskClaimParams{Host: "bad host"})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.WorkflowClaim(ctx, &store.WorkflowClaimParams{LeaseTTL: -time.Second})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: "task_x", Checkpoint: Frame("x"), Lease: -1})
		require.ErrorIs(t, err, store.ErrInvalid)
	})
}

// drain empties a watch channel.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// assertNoError reports err on t without stopping the goroutine's test.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
