package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func testModule(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Run("Versions", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ctx := t.Context()
		d2 := "sha256:" + strings.Repeat("b", 64)
		fns := []store.Function{{Name: "echo", Kind: store.KindActivity}, {Name: "pipeline", Kind: store.KindWorkflow}}
		v1, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "echo", Digest: Digest, Size: 100, Functions: fns})
		require.NoError(t, err)
		require.Equal(t, 1, v1.Version)
		same, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "echo", Digest: Digest, Size: 100, Functions: fns})
		require.NoError(t, err)
		require.Equal(t, v1, same, "the same bytes again are no new version")
		v2, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "echo", Digest: d2, Size: 120})
		require.NoError(t, err)
		require.Equal(t, 2, v2.Version)
		require.Empty(t, v2.Functions)
		other, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "count", Digest: Digest, Size: 100, Functions: fns[:1]})
		require.NoError(t, err)

		got, err := s.ModuleGet(ctx, "echo")
		require.NoError(t, err)
		require.Equal(t, v2, got)
		list, err := s.ModuleList(ctx)
		require.NoError(t, err)
		require.Equal(t, []*store.Module{other, v2}, list)

		require.NoError(t, s.ModuleDelete(ctx, "echo"))
		_, err = s.ModuleGet(ctx, "echo")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.ModuleDelete(ctx, "echo"), store.ErrNotFound)
		list, err = s.ModuleList(ctx)
		require.NoError(t, err)
		require.Equal(t, []*store.Module{other}, list)
	})

	t.Run("BadParams", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		tests := []struct {
			name string
			p    store.ModuleInsertParams
		}{
			{"empty name", store.ModuleInsertParams{Name: "", Digest: Digest, Size: 1}},
			{"path name", store.ModuleInsertParams{Name: "../etc", Digest: Digest, Size: 1}},
			{"long name", store.ModuleInsertParams{Name: strings.Repeat("a", 129), Digest: Digest, Size: 1}},
			{"upper digest", store.ModuleInsertParams{Name: "m", Digest: strings.ToUpper(Digest), Size: 1}},
			{"short digest", store.ModuleInsertParams{Name: "m", Digest: "sha256:abc", Size: 1}},
			{"no size", store.ModuleInsertParams{Name: "m", Digest: Digest}},
			{"bad function", store.ModuleInsertParams{Name: "m", Digest: Digest, Size: 1, Functions: []store.Function{{Name: "f", Kind: "job"}}}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.ModuleInsert(t.Context(), &tc.p)
				require.ErrorIs(t, err, store.ErrInvalid)
			})
		}
	})
}

func testService(t *testing.T, newStore func(testing.TB) store.Store) {
	s := newStore(t)
	ctx := t.Context()
	_, err := s.ServiceGet(ctx)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.ServiceUpdate(ctx, &store.ServiceUpdateParams{RetentionPeriod: time.Hour})
	require.ErrorIs(t, err, store.ErrNotFound)

	first, err := s.ServiceInit(ctx, &store.ServiceInitParams{
		AdminClient: &store.ClientInsertParams{Name: "admin", TokenHash: hash("admin"), Scopes: []string{"admin"}},
	})
	require.NoError(t, err)
	require.True(t, first.Created)
	require.NoError(t, store.CheckID(store.ServiceIDPrefix, first.Config.ID))
	require.Equal(t, store.DefaultRetentionPeriod, first.Config.RetentionPeriod)
	require.Equal(t, store.DefaultIdempotencyKeyTTL, first.Config.IdempotencyKeyTTL)
	require.NotNil(t, first.AdminClient)
	admin, err := s.ClientGetByTokenHash(ctx, hash("admin"))
	require.NoError(t, err)
	require.Equal(t, first.AdminClient, admin)

	second, err := s.ServiceInit(ctx, &store.ServiceInitParams{
		RetentionPeriod: time.Hour,
		AdminClient:     &store.ClientInsertParams{Name: "admin", TokenHash: hash("admin2"), Scopes: []string{"admin"}},
	})
	require.NoError(t, err)
	require.False(t, second.Created)
	require.Nil(t, second.AdminClient)
	require.Equal(t, first.Config, second.Config, "later starts keep the identity and settings")
	clients, err := s.ClientList(ctx)
	require.NoError(t, err)
	require.Len(t, clients, 1)

	updated, err := s.ServiceUpdate(ctx, &store.ServiceUpdateParams{RetentionPeriod: 48 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 48*time.Hour, updated.RetentionPeriod)
	require.Equal(t, store.DefaultIdempotencyKeyTTL, updated.IdempotencyKeyTTL)
	got, err := s.ServiceGet(ctx)
	require.NoError(t, err)
	require.Equal(t, updated, got)
	_, err = s.ServiceUpdate(ctx, &store.ServiceUpdateParams{RetentionPeriod: -time.Hour})
	require.ErrorIs(t, err, store.ErrInvalid)
}
