package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testClaim(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("FairAcrossOwners", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		owner := map[string]string{}
		// cli_a floods the queue before cli_b and cli_c submit.
		for range 10 {
			owner[MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a"}).ID] = "cli_a"
		}
		for range 2 {
			owner[MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_b"}).ID] = "cli_b"
		}
		owner[MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_c"}).ID] = "cli_c"

		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 3})
		require.NoError(t, err)
		require.Len(t, claimed, 3)
		got := map[string]int{}
		for _, c := range claimed {
			got[owner[c.ID]]++
			require.Equal(t, store.StatusLoading, c.Status)
			require.Equal(t, 1, c.Attempt)
			MustCheckLog(t, s, c.ID)
		}
		require.Equal(t, map[string]int{"cli_a": 1, "cli_b": 1, "cli_c": 1}, got, "one task per owner first")

		// Single claims keep rotating over the owners that still wait.
		var seq []string
		for {
			c, err := s.TaskClaim(ctx, &store.TaskClaimParams{})
			require.NoError(t, err)
			if len(c) == 0 {
				break
			}
			require.Len(t, c, 1)
			seq = append(seq, owner[c[0].ID])
		}
		require.Len(t, seq, 10)
		require.ElementsMatch(t, []string{"cli_a", "cli_b"}, seq[:2], "b is served before a takes its second turn")
		for _, o := range seq[2:] {
			require.Equal(t, "cli_a", o)
		}
	})

	t.Run("OldestFirstWithinOwner", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var ids []string
		for range 5 {
			ids = append(ids, MustInsertTask(t, s, &store.TaskInsertParams{OwnerClientID: "cli_a"}).ID)
		}
		claimed, err := s.TaskClaim(t.Context(), &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 5)
		for i, c := range claimed {
			require.Equal(t, ids[i], c.ID)
		}
	})

	t.Run("NotBefore", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		soon := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		later := MustInsertTask(t, s, &store.TaskInsertParams{NotBefore: soon})
		require.Equal(t, soon, later.NotBefore)
		now := MustInsertTask(t, s, nil)
		claimed, err := s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, now.ID, claimed[0].ID)
		claimed, err = s.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10, Now: soon})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, later.ID, claimed[0].ID)
	})

	t.Run("ConcurrentClaimsNeverShare", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const n = 200
		parallel(t, n, 16, func(i int) error {
			_, err := s.TaskInsert(t.Context(), &store.TaskInsertParams{
				Module: "m", ModuleDigest: Digest, Function: "f",
				OwnerClientID: []string{"cli_a", "cli_b", "cli_c"}[i%3],
			})
			return err
		})
		results := make([][]*store.Task, 40)
		parallel(t, len(results), 8, func(i int) error {
			var err error
			results[i], err = s.TaskClaim(t.Context(), &store.TaskClaimParams{Limit: 7})
			return err
		})
		seen := map[string]bool{}
		for _, r := range results {
			for _, c := range r {
				require.False(t, seen[c.ID], "task %s claimed twice", c.ID)
				seen[c.ID] = true
			}
		}
		require.Len(t, seen, n)
	})
}
