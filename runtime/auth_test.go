package runtime

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-run/weft/runtime/fault"
)

func TestAuth(t *testing.T) {
	t.Parallel()

	t.Run("BootstrapWritesTheAdminToken", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		dataDir := filepath.Join(b.dir, "data")
		token, created, err := e.Bootstrap(t.Context(), dataDir)
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

		who, err := e.Authenticate(t.Context(), token)
		require.NoError(t, err)
		require.True(t, who.IsAdmin())
		require.Equal(t, "admin", who.Name)

		// A second start creates nothing and leaves the file alone.
		again, created, err := e.Bootstrap(t.Context(), dataDir)
		require.NoError(t, err)
		require.False(t, created)
		require.Empty(t, again)
		content2, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, content, content2)
	})

	t.Run("OnlyTheHashIsStored", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		token, _, err := e.Bootstrap(t.Context(), b.dir)
		require.NoError(t, err)
		p, err := e.PairingCreate(t.Context(), b.admin, nil, 0)
		require.NoError(t, err)
		paired, err := e.Pair(t.Context(), p.Code, "laptop")
		require.NoError(t, err)

		clients, err := e.ClientList(t.Context(), b.admin)
		require.NoError(t, err)
		require.Len(t, clients, 2)
		for _, c := range clients {
			require.Len(t, c.TokenHash, sha256.Size)
		}
		sum := sha256.Sum256([]byte(paired.Token))
		require.Equal(t, sum[:], clients[1].TokenHash)

		// No token or code is anywhere in the database files.
		require.NoError(t, e.Close(t.Context()))
		require.NoError(t, b.db.Close(t.Context()))
		files, err := filepath.Glob(filepath.Join(b.dir, "weft.db*"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, secret := range []string{token, paired.Token, p.Code} {
				require.False(t, bytes.Contains(raw, []byte(secret)), "%s holds a secret in clear", f)
			}
		}
	})

	t.Run("BadTokens", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		token, _, err := e.Bootstrap(t.Context(), b.dir)
		require.NoError(t, err)
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
				_, err := e.Authenticate(t.Context(), tc.token)
				require.Equal(t, tc.code, fault.CodeOf(err))
			})
		}
	})

	t.Run("RevokedOnTheNextRequest", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		p, err := e.PairingCreate(t.Context(), b.admin, []string{ScopeTasksRead}, 0)
		require.NoError(t, err)
		paired, err := e.Pair(t.Context(), p.Code, "phone")
		require.NoError(t, err)
		who, err := e.Authenticate(t.Context(), paired.Token)
		require.NoError(t, err)
		require.Equal(t, paired.ClientID, who.ClientID)
		require.Equal(t, []string{ScopeTasksRead}, who.Scopes)

		_, err = e.ClientRevoke(t.Context(), who, paired.ClientID)
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err), "only admins revoke")
		revoked, err := e.ClientRevoke(t.Context(), b.admin, paired.ClientID)
		require.NoError(t, err)
		require.True(t, revoked.Revoked())
		_, err = e.Authenticate(t.Context(), paired.Token)
		require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
		_, err = e.ClientRevoke(t.Context(), b.admin, "cli_nobody")
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
				if tc.want {
					require.NoError(t, p.Require(tc.scope))
				} else {
					require.Equal(t, fault.InsufficientScope, fault.CodeOf(p.Require(tc.scope)))
				}
			})
		}
		var nobody *Principal
		require.False(t, nobody.HasScope(ScopeTasksRead))
		require.Equal(t, fault.MissingCredential, fault.CodeOf(nobody.Require(ScopeTasksRead)))
	})

	t.Run("ScopesAreEnforcedByTaskMethods", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		modulesOnly := &Principal{ClientID: "cli_m", Scopes: []string{ScopeModulesRead}}
		task := mustCreate(t, e, TaskCreateParams{ClientID: modulesOnly.ClientID, Function: "echo"})
		_, err := e.TaskGet(t.Context(), modulesOnly, task.ID)
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err))
		_, _, err = e.TaskList(t.Context(), modulesOnly, &TaskListParams{})
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err))
		_, err = e.EventSubscribe(t.Context(), modulesOnly, task.ID, -1)
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err))
		_, err = e.ClientList(t.Context(), modulesOnly)
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err))
		_, err = e.PairingCreate(t.Context(), modulesOnly, nil, 0)
		require.Equal(t, fault.InsufficientScope, fault.CodeOf(err))
		// A client may read itself, not others.
		_, err = e.ClientGet(t.Context(), modulesOnly, "cli_other")
		require.Equal(t, fault.NotFound, fault.CodeOf(err))
		_, err = e.ClientGet(t.Context(), b.admin, "cli_other")
		require.Equal(t, fault.NotFound, fault.CodeOf(err))
	})
}

// flip returns a different base64url character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}
