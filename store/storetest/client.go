package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testClient(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("InsertGetList", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		a, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "laptop", TokenHash: hash("ta"), Scopes: []string{"tasks:read", "tasks:write"}})
		require.NoError(t, err)
		require.NoError(t, store.CheckID(store.ClientIDPrefix, a.ID))
		b, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "ci", TokenHash: hash("tb")})
		require.NoError(t, err)
		require.Empty(t, b.Scopes)

		got, err := s.ClientGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, a, got)
		byHash, err := s.ClientGetByTokenHash(ctx, hash("ta"))
		require.NoError(t, err)
		require.Equal(t, a, byHash)
		list, err := s.ClientList(ctx)
		require.NoError(t, err)
		require.Equal(t, []*store.Client{a, b}, list)

		_, err = s.ClientInsert(ctx, &store.ClientInsertParams{Name: "dup", TokenHash: hash("ta")})
		require.ErrorIs(t, err, store.ErrExists)
		_, err = s.ClientInsert(ctx, &store.ClientInsertParams{Name: "", TokenHash: hash("tc")})
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.ClientGetByTokenHash(ctx, hash("unknown"))
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ClientGet(ctx, store.NewID(store.ClientIDPrefix))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("Revoke", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		c, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "laptop", TokenHash: hash("t")})
		require.NoError(t, err)
		require.False(t, c.Revoked())
		revoked, err := s.ClientRevoke(ctx, c.ID)
		require.NoError(t, err)
		require.True(t, revoked.Revoked())

		// The next lookup by token already refuses it.
		got, err := s.ClientGetByTokenHash(ctx, hash("t"))
		require.ErrorIs(t, err, store.ErrRevoked)
		require.Equal(t, c.ID, got.ID)

		time.Sleep(2 * time.Millisecond)
		again, err := s.ClientRevoke(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, revoked.RevokedAt, again.RevokedAt, "revoking twice keeps the first time")
		_, err = s.ClientRevoke(ctx, store.NewID(store.ClientIDPrefix))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func testPairing(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("RedeemCreatesClientOnce", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		p, err := s.PairingInsert(ctx, &store.PairingInsertParams{
			CodeHash: hash("code"), Scopes: []string{"tasks:read"},
			ExpiresAt: time.Now().Add(10 * time.Minute),
		})
		require.NoError(t, err)
		require.NoError(t, store.CheckID(store.PairingIDPrefix, p.ID))
		c, err := s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("code"), ClientName: "phone", TokenHash: hash("tok")})
		require.NoError(t, err)
		require.Equal(t, "phone", c.Name)
		require.Equal(t, []string{"tasks:read"}, c.Scopes)
		got, err := s.ClientGetByTokenHash(ctx, hash("tok"))
		require.NoError(t, err)
		require.Equal(t, c, got)

		_, err = s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("code"), ClientName: "again", TokenHash: hash("tok2")})
		require.ErrorIs(t, err, store.ErrUsed)
		_, err = s.ClientGetByTokenHash(ctx, hash("tok2"))
		require.ErrorIs(t, err, store.ErrNotFound, "a refused redemption creates no client")
	})

	t.Run("SingleUseUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.PairingInsert(t.Context(), &store.PairingInsertParams{CodeHash: hash("code"), ExpiresAt: time.Now().Add(time.Minute)})
		require.NoError(t, err)
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.PairingRedeem(t.Context(), &store.PairingRedeemParams{
					CodeHash:   hash("code"),
					ClientName: fmt.Sprintf("c%d", i), TokenHash: hash(fmt.Sprintf("tok%d", i)),
				})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
				continue
			}
			require.ErrorIs(t, err, store.ErrUsed)
		}
		require.Equal(t, 1, ok)
		list, err := s.ClientList(t.Context())
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		expires := time.Now().Add(time.Minute)
		_, err := s.PairingInsert(ctx, &store.PairingInsertParams{CodeHash: hash("code"), ExpiresAt: expires})
		require.NoError(t, err)
		_, err = s.PairingInsert(ctx, &store.PairingInsertParams{CodeHash: hash("code"), ExpiresAt: expires})
		require.ErrorIs(t, err, store.ErrExists)
		_, err = s.PairingInsert(ctx, &store.PairingInsertParams{CodeHash: hash("other")})
		require.ErrorIs(t, err, store.ErrInvalid)

		_, err = s.PairingRedeem(ctx, &store.PairingRedeemParams{
			CodeHash: hash("code"), ClientName: "x", TokenHash: hash("t"),
			Now: expires.Add(time.Second),
		})
		require.ErrorIs(t, err, store.ErrExpired)
		_, err = s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("unknown"), ClientName: "x", TokenHash: hash("t")})
		require.ErrorIs(t, err, store.ErrNotFound)

		// A redemption whose token hash is taken fails whole: the code stays
		// unused.
		_, err = s.ClientInsert(ctx, &store.ClientInsertParams{Name: "old", TokenHash: hash("taken")})
		require.NoError(t, err)
		_, err = s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("code"), ClientName: "x", TokenHash: hash("taken")})
		require.ErrorIs(t, err, store.ErrExists)
		_, err = s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("code"), ClientName: "x", TokenHash: hash("fresh")})
		require.NoError(t, err)
	})
}
