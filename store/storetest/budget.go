package storetest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest/internal/check"
)

// recordGate is a store.ClaimGate that admits up to perOwner tasks of each
// owner and up to memory bytes in all, and records what it was asked.
type recordGate struct {
	perOwner int
	memory   int64
	queued   []string
	taken    map[string]int
	used     int64
	asked    []int64
}

func (g *recordGate) Queued(owners []string) {
	g.queued = slices.Clone(owners)
	g.taken, g.used, g.asked = map[string]int{}, 0, nil
}

func (g *recordGate) Admit(owner string, memoryLimit int64) bool {
	g.asked = append(g.asked, memoryLimit)
	if g.taken[owner] >= g.perOwner || g.used+memoryLimit > g.memory {
		return false
	}
	g.taken[owner]++
	g.used += memoryLimit
	return true
}

func testBudget(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("ClaimGate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		for range 4 {
			MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a", MemoryLimit: 10})
		}
		big := MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_b", MemoryLimit: 100})
		MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_b", MemoryLimit: 10})

		g := &recordGate{perOwner: 2, memory: 50}
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10, Gate: g})
		require.NoError(t, err)
		require.Equal(t, []string{"cli_a", "cli_b"}, g.queued, "the gate sees every owner with queued tasks")
		require.Len(t, claimed, 2, "two of cli_a's; cli_b's oldest task does not fit the memory")
		for _, c := range claimed {
			require.Equal(t, "cli_a", c.OwnerClientID)
			require.Equal(t, store.StatusLoading, c.Status)
		}
		require.Contains(t, g.asked, int64(100), "the gate is asked with the task's memory limit")
		cur, err := s.TaskGet(ctx, big.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, cur.Status, "a refused task stays queued")

		// Without a gate every eligible task is claimed.
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 4)
	})

	t.Run("ListOmitPayloads", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		in := Frame("a large input")
		task := MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a", Input: in})
		full, err := s.TaskList(ctx, &store.TaskListParams{})
		require.NoError(t, err)
		require.Len(t, full, 1)
		require.Equal(t, in, full[0].Input)

		bare, err := s.TaskList(ctx, &store.TaskListParams{OmitPayloads: true})
		require.NoError(t, err)
		require.Len(t, bare, 1)
		require.Equal(t, task.ID, bare[0].ID)
		require.True(t, bare[0].Input.IsZero(), "no input is read")
		require.True(t, bare[0].Output.IsZero())
		require.Equal(t, full[0].Module, bare[0].Module)
		require.Equal(t, full[0].Status, bare[0].Status)
		require.Equal(t, full[0].LastSeq, bare[0].LastSeq)
	})

	t.Run("ClientMemoryLimit", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		c, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "small", TokenHash: []byte("hash-small"), Scopes: []string{"tasks:write"}})
		require.NoError(t, err)
		require.Zero(t, c.MaxMemoryLimit, "a new client has the daemon's default ceiling")

		limit := int64(512 << 20)
		up, err := s.ClientUpdate(ctx, &store.ClientUpdateParams{ID: c.ID, MaxMemoryLimit: &limit})
		require.NoError(t, err)
		require.Equal(t, limit, up.MaxMemoryLimit)
		got, err := s.ClientGetByTokenHash(ctx, []byte("hash-small"))
		require.NoError(t, err)
		require.Equal(t, limit, got.MaxMemoryLimit, "the ceiling is kept")
		same, err := s.ClientUpdate(ctx, &store.ClientUpdateParams{ID: c.ID})
		require.NoError(t, err)
		require.Equal(t, limit, same.MaxMemoryLimit, "no change asked, none made")

		negative := int64(-1)
		_, err = s.ClientUpdate(ctx, &store.ClientUpdateParams{ID: c.ID, MaxMemoryLimit: &negative})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.ClientUpdate(ctx, &store.ClientUpdateParams{ID: "cli_nobody", MaxMemoryLimit: &limit})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("WorkflowClaimGate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		var ids []string
		for i, owner := range []string{"cli_a", "cli_a", "cli_b"} {
			wf := MustRunning(t, s, &store.TaskInsertParams{
				Kind: store.KindWorkflow, Function: "flow",
				OwnerClientID: owner, MemoryLimit: int64(10 * (i + 1)),
			})
			_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{ID: wf.ID, LastSeq: wf.LastSeq, Wait: true})
			require.NoError(t, err)
			_, err = s.EventAppend(ctx, &store.EventAppendParams{TaskID: wf.ID, Events: []store.EventDraft{{Type: "signal.received"}}, Wake: true})
			require.NoError(t, err)
			ids = append(ids, wf.ID)
		}
		g := &recordGate{perOwner: 1, memory: 1 << 20}
		res, err := s.WorkflowClaim(ctx, &store.WorkflowClaimParams{Limit: 10, Gate: g})
		require.NoError(t, err)
		require.Empty(t, g.queued)
		require.ElementsMatch(t, []string{ids[0], ids[2]}, check.IDsOf(res.Tasks), "one workflow per owner")
		require.True(t, res.Refused)
		require.Contains(t, g.asked, int64(20), "the gate is asked with the workflow's memory limit")

		// The refused one is still waiting and due.
		res, err = s.WorkflowClaim(ctx, &store.WorkflowClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{ids[1]}, check.IDsOf(res.Tasks))
		require.False(t, res.Refused)
	})
}
