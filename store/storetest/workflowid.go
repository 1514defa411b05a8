package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testWorkflowID covers workflow ids (docs/workflows.md, "Workflow ids"):
// the id round-trips and filters a list; at most one open run of an owner
// holds an id, also under concurrent inserts; another owner's id is
// another id; each reuse policy decides after the latest run ended; bad
// ids and policies are refused.
func testWorkflowID(t *testing.T, newStore func(testing.TB) store.Store) {
	workflow := func(owner, id string, policy store.WorkflowIDReusePolicy) *store.TaskInsertParams {
		return &store.TaskInsertParams{Kind: store.KindWorkflow, OwnerClientID: owner, WorkflowID: id, WorkflowIDReuse: policy}
	}
	insert := func(t *testing.T, s store.Store, p *store.TaskInsertParams) (*store.Task, error) {
		t.Helper()
		p.Module, p.ModuleDigest, p.Function = "m", Digest, "f"
		return s.TaskInsert(t.Context(), p)
	}
	end := func(t *testing.T, s store.Store, id string, to store.Status) {
		t.Helper()
		p := &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusQueued}, To: to}
		if to == store.StatusFailed {
			p.Error = &store.TaskError{Code: "application_error", Message: "x"}
		}
		if to == store.StatusCompleted {
			MustLoading(t, s, id)
			MustTransition(t, s, &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
			p.From = []store.Status{store.StatusRunning}
			p.Output = Frame("out")
		}
		MustTransition(t, s, p)
	}

	t.Run("RoundTripAndList", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		a, err := insert(t, s, workflow("cli_a", "order-42", ""))
		require.NoError(t, err)
		require.Equal(t, "order-42", a.WorkflowID)
		got, err := s.TaskGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, "order-42", got.WorkflowID)
		plain := MustInsertTask(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, OwnerClientID: "cli_a"})
		require.Empty(t, plain.WorkflowID)
		end(t, s, a.ID, store.StatusCancelled)
		b, err := insert(t, s, workflow("cli_a", "order-42", ""))
		require.NoError(t, err)
		list, err := s.TaskList(ctx, &store.TaskListParams{OwnerClientID: "cli_a", WorkflowID: "order-42", Newest: true})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, b.ID, list[0].ID, "the newest run first: the current one")
		require.Equal(t, a.ID, list[1].ID)
	})

	t.Run("OneOpenRun", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		a, err := insert(t, s, workflow("cli_a", "w", ""))
		require.NoError(t, err)
		for _, st := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning} {
			if st == store.StatusLoading {
				MustLoading(t, s, a.ID)
			}
			if st == store.StatusRunning {
				MustTransition(t, s, &store.TaskTransitionParams{ID: a.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
			}
			_, err := insert(t, s, workflow("cli_a", "w", store.ReuseAllowDuplicate))
			require.ErrorIs(t, err, store.ErrWorkflowIDInUse, "while the run is %s", st)
			require.ErrorContains(t, err, a.ID)
		}
		_, err = insert(t, s, workflow("cli_b", "w", ""))
		require.NoError(t, err, "another owner's id is another id")
		_, err = insert(t, s, workflow("cli_a", "w2", ""))
		require.NoError(t, err)
		_, _, err = s.TaskCancel(t.Context(), a.ID)
		require.NoError(t, err)
		_, err = insert(t, s, workflow("cli_a", "w", ""))
		require.ErrorIs(t, err, store.ErrWorkflowIDInUse, "a cancelling run is open")
	})

	t.Run("ConcurrentInserts", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const n = 16
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = insert(t, s, workflow("cli_a", "race", ""))
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrWorkflowIDInUse):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, won, "exactly one insert takes the id")
		list, err := s.TaskList(t.Context(), &store.TaskListParams{WorkflowID: "race"})
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("ReusePolicies", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			policy  store.WorkflowIDReusePolicy
			last    store.Status
			allowed bool
		}{
			{"", store.StatusCompleted, true},
			{store.ReuseAllowDuplicate, store.StatusCompleted, true},
			{store.ReuseAllowDuplicate, store.StatusFailed, true},
			{store.ReuseAllowDuplicateFailedOnly, store.StatusCompleted, false},
			{store.ReuseAllowDuplicateFailedOnly, store.StatusFailed, true},
			{store.ReuseAllowDuplicateFailedOnly, store.StatusCancelled, true},
			{store.ReuseRejectDuplicate, store.StatusCompleted, false},
			{store.ReuseRejectDuplicate, store.StatusFailed, false},
			{store.ReuseRejectDuplicate, store.StatusCancelled, false},
		} {
			t.Run(string(tc.policy)+"/"+string(tc.last), func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				first, err := insert(t, s, workflow("cli_a", "w", ""))
				require.NoError(t, err)
				end(t, s, first.ID, tc.last)
				_, err = insert(t, s, workflow("cli_a", "w", tc.policy))
				if tc.allowed {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, store.ErrWorkflowIDReuse)
				require.ErrorContains(t, err, first.ID)
				list, lerr := s.TaskList(t.Context(), &store.TaskListParams{WorkflowID: "w"})
				require.NoError(t, lerr)
				require.Len(t, list, 1, "a refused insert writes nothing")
			})
		}
	})

	t.Run("ContinueAsNew", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		run := MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, OwnerClientID: "cli_a", WorkflowID: "chain", WorkflowIDReuse: store.ReuseRejectDuplicate})
		res, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: run.ID, To: store.StatusCompleted, Lease: run.Lease.Token,
			Events: []store.EventDraft{{Type: "workflow.continued_as_new", Payload: []byte(`{}`)}},
			Next:   &store.TaskInsertParams{Module: "m", ModuleDigest: Digest, Function: "f", WorkflowID: "chain", OwnerClientID: "cli_a", Input: Frame("next")},
		})
		require.NoError(t, err, "the next run follows its own run whatever the first run's policy")
		require.Equal(t, store.StatusCompleted, res.Task.Status)
		require.NotNil(t, res.Next)
		require.Equal(t, store.StatusQueued, res.Next.Status)
		require.Equal(t, run.ID, res.Next.ContinuedFrom)
		require.Equal(t, "chain", res.Next.WorkflowID)
		require.Equal(t, store.KindWorkflow, res.Next.Kind)
		got, err := s.TaskGet(ctx, res.Next.ID)
		require.NoError(t, err)
		require.Equal(t, run.ID, got.ContinuedFrom)
		require.Equal(t, "cli_a", got.OwnerClientID)
		require.Equal(t, Frame("next"), got.Input)
		MustCheckLog(t, s, run.ID)

		// A run that fails to continue (a bad next run) commits nothing.
		run2 := MustRunning(t, s, &store.TaskInsertParams{Kind: store.KindWorkflow, OwnerClientID: "cli_a", WorkflowID: "other"})
		_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: run2.ID, To: store.StatusCompleted, Lease: run2.Lease.Token,
			Next: &store.TaskInsertParams{Module: "m", ModuleDigest: Digest, Function: "f", OwnerClientID: "cli_a"},
		})
		require.ErrorIs(t, err, store.ErrInvalid, "the next run needs a workflow id")
		got, err = s.TaskGet(ctx, run2.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status)
		_, err = s.WorkflowCommit(ctx, &store.WorkflowCommitParams{
			ID: run2.ID, To: store.StatusFailed, Error: &store.TaskError{Code: "x"}, Lease: run2.Lease.Token,
			Next: &store.TaskInsertParams{Module: "m", ModuleDigest: Digest, Function: "f", WorkflowID: "other", OwnerClientID: "cli_a"},
		})
		require.ErrorIs(t, err, store.ErrInvalid, "only a completed run continues")
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, p := range []*store.TaskInsertParams{
			{Kind: store.KindActivity, WorkflowID: "w"},
			{Kind: store.KindWorkflow, WorkflowID: string(make([]byte, store.MaxWorkflowIDLen+1))},
			{Kind: store.KindWorkflow, WorkflowID: "a\nb"},
			{Kind: store.KindWorkflow, WorkflowID: "\xff"},
			{Kind: store.KindWorkflow, WorkflowID: "w", WorkflowIDReuse: "sometimes"},
		} {
			_, err := insert(t, s, p)
			require.ErrorIs(t, err, store.ErrInvalid, "%+v", p)
		}
	})
}
