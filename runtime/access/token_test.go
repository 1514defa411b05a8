package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

func TestAuth(t *testing.T) {
	t.Parallel()

	t.Run("BootstrapWritesTheAdminToken", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		db, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "weft.db")})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close(context.Background()) })
		s, err := New(Config{Store: db})
		require.NoError(t, err)
		dataDir := filepath.Join(dir, "data")
		token, created, err := s.Bootstrap(t.Context(), dataDir)
		require.NoError(t, err)
		require.True(t, created)
		require.True(t, strings.HasPrefix(token, TokenPrefix))

		path := filepath.Join(dataDir, AdminTokenFile)
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		content, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, token+"\n", string(content))

		who, err := s.Authenticate(t.Context(), token)
		require.NoError(t, err)
		require.True(t, who.IsAdmin())
		require.Equal(t, "admin", who.Name)

		// A second start creates nothing and leaves the file alone.
		again, created, err := s.Bootstrap(t.Context(), dataDir)
		require.NoError(t, err)
		require.False(t, created)
		require.Empty(t, again)
		content2, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, content, content2)
	})

	t.Run("BootstrapLostToAnotherHost", func(t *testing.T) {
		t.Parallel()
		// Two hosts of one database start at once: both find no service,
		// one creates it, and the other must not keep a token that names
		// no client.
		_, b := setup(t, nil)
		late, err := New(Config{Store: notYetCreated{b.db}})
		require.NoError(t, err)
		dataDir := filepath.Join(t.TempDir(), "second-host")
		token, created, err := late.Bootstrap(t.Context(), dataDir)
		require.NoError(t, err)
		require.False(t, created)
		require.Empty(t, token)
		_, err = os.Stat(filepath.Join(dataDir, AdminTokenFile))
		require.ErrorIs(t, err, os.ErrNotExist)
	})

	t.Run("OnlyTheHashIsStored", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, nil)
		token, err := os.ReadFile(filepath.Join(b.dir, AdminTokenFile))
		require.NoError(t, err)
		p, err := s.PairingCreate(t.Context(), b.admin, nil, 0)
		require.NoError(t, err)
		paired, err := s.Pair(t.Context(), p.Code, "laptop")
		require.NoError(t, err)

		clients, err := s.ClientList(t.Context())
		require.NoError(t, err)
		require.Len(t, clients, 2)
		for _, c := range clients {
			require.Len(t, c.TokenHash, sha256.Size)
		}
		sum := sha256.Sum256([]byte(paired.Token))
		require.Equal(t, sum[:], clients[1].TokenHash)

		// No token or code is anywhere in the database files.
		require.NoError(t, b.db.Close(t.Context()))
		files, err := filepath.Glob(filepath.Join(b.dir, "weft.db*"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, secret := range []string{strings.TrimSpace(string(token)), paired.Token, p.Code} {
				require.False(t, bytes.Contains(raw, []byte(secret)), "%s holds a secret in clear", f)
			}
		}
	})

	t.Run("BadTokens", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, nil)
		raw, err := os.ReadFile(filepath.Join(b.dir, AdminTokenFile))
		require.NoError(t, err)
		token := strings.TrimSpace(string(raw))
		tests := []struct {
			name, token string
			code        fault.Code
		}{
			{name: "missing", token: "", code: fault.MissingCredential},
			{name: "wrong", token: TokenPrefix + strings.Repeat("A", len(token)-len(TokenPrefix)), code: fault.InvalidCredential},
			{name: "one character off", token: token[:len(token)-1] + flip(token[len(token)-1]), code: fault.InvalidCredential},
			{name: "no prefix", token: strings.TrimPrefix(token, TokenPrefix), code: fault.InvalidCredential},
			{name: "truncated", token: token[:20], code: fault.InvalidCredential},
			{name: "with bearer", token: "Bearer " + token, code: fault.InvalidCredential},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Authenticate(t.Context(), tc.token)
				require.Equal(t, tc.code, fault.CodeOf(err))
			})
		}
		_, err = s.Authenticate(t.Context(), token)
		require.NoError(t, err, "the token itself works")
	})

	t.Run("RevokedOnTheNextRequest", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, nil)
		p, err := s.PairingCreate(t.Context(), b.admin, []string{ScopeTasksRead}, 0)
		require.NoError(t, err)
		paired, err := s.Pair(t.Context(), p.Code, "phone")
		require.NoError(t, err)
		who, err := s.Authenticate(t.Context(), paired.Token)
		require.NoError(t, err)
		require.Equal(t, paired.ClientID, who.ClientID)
		require.Equal(t, []string{ScopeTasksRead}, who.Scopes)

		revoked, err := s.ClientRevoke(t.Context(), paired.ClientID)
		require.NoError(t, err)
		require.True(t, revoked.Revoked())
		_, err = s.Authenticate(t.Context(), paired.Token)
		require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
		again, err := s.ClientRevoke(t.Context(), paired.ClientID)
		require.NoError(t, err)
		require.Equal(t, revoked.RevokedAt, again.RevokedAt, "revoking twice keeps the first time")
		_, err = s.ClientRevoke(t.Context(), "cli_nobody")
		require.Equal(t, fault.NotFound, fault.CodeOf(err))
	})

	t.Run("Clients", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, func(c *Config) { c.MaxMemoryLimit = 1 << 30 })
		c, err := s.ClientGet(t.Context(), b.admin)
		require.NoError(t, err)
		require.Equal(t, "admin", c.Name)
		_, err = s.ClientGet(t.Context(), "cli_other")
		require.Equal(t, fault.NotFound, fault.CodeOf(err))

		limit := int64(512 << 20)
		c, err = s.ClientUpdate(t.Context(), b.admin, &ClientUpdateParams{MaxMemoryLimit: &limit})
		require.NoError(t, err)
		require.Equal(t, limit, c.MaxMemoryLimit)
		who, err := s.Authenticate(t.Context(), mustAdminToken(t, b))
		require.NoError(t, err)
		require.Equal(t, limit, who.MaxMemoryLimit, "the principal carries the ceiling")
		for _, bad := range []int64{-1, 1<<30 + 1} {
			_, err = s.ClientUpdate(t.Context(), b.admin, &ClientUpdateParams{MaxMemoryLimit: &bad})
			require.Equal(t, fault.Invalid, fault.CodeOf(err), "%d", bad)
			require.Equal(t, "max_memory_limit_bytes", fault.Param(err))
		}
		_, err = s.ClientUpdate(t.Context(), "cli_other", &ClientUpdateParams{MaxMemoryLimit: &limit})
		require.Equal(t, fault.NotFound, fault.CodeOf(err))
	})

	t.Run("Scopes", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name   string
			scopes []string
			scope  string
			want   bool
		}{
			{name: "held", scopes: []string{ScopeTasksRead}, scope: ScopeTasksRead, want: true},
			{name: "not held", scopes: []string{ScopeTasksRead}, scope: ScopeTasksWrite, want: false},
			{name: "admin implies all", scopes: []string{ScopeAdmin}, scope: ScopeModulesWrite, want: true},
			{name: "none", scopes: nil, scope: ScopeModulesRead, want: false},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				p := &Principal{ClientID: "cli_x", Scopes: tc.scopes}
				require.Equal(t, tc.want, p.HasScope(tc.scope))
			})
		}
		require.True(t, (&Principal{Scopes: []string{ScopeAdmin}}).IsAdmin())
		require.False(t, (&Principal{Scopes: DefaultPairingScopes}).IsAdmin())
		var nobody *Principal
		require.False(t, nobody.HasScope(ScopeTasksRead))
		require.False(t, nobody.IsAdmin())
	})
}

// mustAdminToken reads the admin token Bootstrap wrote.
func mustAdminToken(tb testing.TB, b *testBundle) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dir, AdminTokenFile))
	require.NoError(tb, err)
	return strings.TrimSpace(string(raw))
}

// flip returns a different base64url character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// notYetCreated is a store whose ServiceGet still finds no service, as it
// did for a host that read it just before another host created it.
type notYetCreated struct{ store.Store }

func (notYetCreated) ServiceGet(context.Context) (*store.ServiceConfig, error) {
	return nil, store.ErrNotFound
}
