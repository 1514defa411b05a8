package access

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
)

func TestPairing(t *testing.T) {
	t.Parallel()

	t.Run("SingleUse", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, nil)
		p, err := s.PairingCreate(t.Context(), b.admin, []string{ScopeTasksWrite, ScopeTasksRead, ScopeTasksRead}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{ScopeTasksRead, ScopeTasksWrite}, p.Scopes)
		paired, err := s.Pair(t.Context(), p.Code, "laptop")
		require.NoError(t, err)
		require.Equal(t, "laptop", paired.Name)
		require.Equal(t, p.Scopes, paired.Scopes)
		who, err := s.Authenticate(t.Context(), paired.Token)
		require.NoError(t, err)
		require.Equal(t, paired.ClientID, who.ClientID)

		_, err = s.Pair(t.Context(), p.Code, "thief")
		require.Equal(t, fault.PairingUsed, fault.CodeOf(err))
		clients, err := s.ClientList(t.Context())
		require.NoError(t, err)
		require.Len(t, clients, 2, "the admin and one paired client: the second attempt created none")
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		s, b := setup(t, func(c *Config) { c.Now = clock.Now })
		p, err := s.PairingCreate(t.Context(), b.admin, nil, time.Minute)
		require.NoError(t, err)
		require.Equal(t, DefaultPairingScopes, p.Scopes)
		require.WithinDuration(t, clock.Now().Add(time.Minute), p.ExpiresAt, time.Millisecond)
		clock.Add(2 * time.Minute)
		_, err = s.Pair(t.Context(), p.Code, "late")
		require.Equal(t, fault.PairingExpired, fault.CodeOf(err))
	})

	t.Run("DefaultTTL", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		s, b := setup(t, func(c *Config) { c.Now = clock.Now; c.PairingTTL = 3 * time.Minute })
		p, err := s.PairingCreate(t.Context(), b.admin, nil, 0)
		require.NoError(t, err)
		require.WithinDuration(t, clock.Now().Add(3*time.Minute), p.ExpiresAt, time.Millisecond)
	})

	t.Run("RateLimited", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		s, b := setup(t, func(c *Config) { c.Now = clock.Now; c.PairingRate = 3 })
		for range 3 {
			_, err := s.Pair(t.Context(), PairingCodePrefix+"GUESS", "guesser")
			require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
		}
		p, err := s.PairingCreate(t.Context(), b.admin, nil, time.Hour)
		require.NoError(t, err)
		_, err = s.Pair(t.Context(), p.Code, "honest")
		require.Equal(t, fault.RateLimited, fault.CodeOf(err), "even a good code waits once the budget is spent")
		require.Equal(t, 20*time.Second, fault.RetryAfterOf(err), "one attempt comes back every 20 s")
		clock.Add(20 * time.Second) // one attempt earned back
		_, err = s.Pair(t.Context(), p.Code, "honest")
		require.NoError(t, err)
		_, err = s.Pair(t.Context(), PairingCodePrefix+"GUESS", "guesser")
		require.Equal(t, fault.RateLimited, fault.CodeOf(err))
	})

	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t, nil)
		_, err := s.PairingCreate(t.Context(), b.admin, []string{"root"}, 0)
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		require.Equal(t, "scopes", fault.Param(err))
		_, err = s.PairingCreate(t.Context(), b.admin, nil, 48*time.Hour)
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		require.Equal(t, "ttl", fault.Param(err))
		p, err := s.PairingCreate(t.Context(), b.admin, nil, 0)
		require.NoError(t, err)
		_, err = s.Pair(t.Context(), p.Code, "  ")
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		_, err = s.Pair(t.Context(), "weft_not_a_code", "x")
		require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
	})
}
