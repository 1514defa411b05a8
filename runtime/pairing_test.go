package runtime

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weft-run/weft/runtime/fault"
)

// fakeClock is a settable clock for expiries.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestPairing(t *testing.T) {
	t.Parallel()

	t.Run("SingleUse", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		p, err := e.PairingCreate(t.Context(), b.admin, []string{ScopeTasksWrite, ScopeTasksRead, ScopeTasksRead}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{ScopeTasksRead, ScopeTasksWrite}, p.Scopes)
		paired, err := e.Pair(t.Context(), p.Code, "laptop")
		require.NoError(t, err)
		require.Equal(t, "laptop", paired.Name)
		require.Equal(t, p.Scopes, paired.Scopes)
		who, err := e.Authenticate(t.Context(), paired.Token)
		require.NoError(t, err)
		require.Equal(t, paired.ClientID, who.ClientID)

		_, err = e.Pair(t.Context(), p.Code, "thief")
		require.Equal(t, fault.PairingUsed, fault.CodeOf(err))
		clients, err := e.ClientList(t.Context(), b.admin)
		require.NoError(t, err)
		require.Len(t, clients, 1, "the second attempt created no client")
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		e, b := setup(t, echo, func(c *Config) { c.Now = clock.Now })
		p, err := e.PairingCreate(t.Context(), b.admin, nil, time.Minute)
		require.NoError(t, err)
		require.Equal(t, DefaultPairingScopes, p.Scopes)
		require.WithinDuration(t, clock.Now().Add(time.Minute), p.ExpiresAt, time.Millisecond)
		clock.Add(2 * time.Minute)
		_, err = e.Pair(t.Context(), p.Code, "late")
		require.Equal(t, fault.PairingExpired, fault.CodeOf(err))
	})

	t.Run("RateLimited", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Now()}
		e, b := setup(t, echo, func(c *Config) { c.Now = clock.Now; c.PairingRate = 3 })
		for range 3 {
			_, err := e.Pair(t.Context(), PairingCodePrefix+"GUESS", "guesser")
			require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
		}
		p, err := e.PairingCreate(t.Context(), b.admin, nil, time.Hour)
		require.NoError(t, err)
		_, err = e.Pair(t.Context(), p.Code, "honest")
		require.Equal(t, fault.RateLimited, fault.CodeOf(err), "even a good code waits once the budget is spent")
		clock.Add(20 * time.Second) // one attempt earned back
		_, err = e.Pair(t.Context(), p.Code, "honest")
		require.NoError(t, err)
		_, err = e.Pair(t.Context(), PairingCodePrefix+"GUESS", "guesser")
		require.Equal(t, fault.RateLimited, fault.CodeOf(err))
	})

	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		_, err := e.PairingCreate(t.Context(), b.admin, []string{"root"}, 0)
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		_, err = e.PairingCreate(t.Context(), b.admin, nil, 48*time.Hour)
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		p, err := e.PairingCreate(t.Context(), b.admin, nil, 0)
		require.NoError(t, err)
		_, err = e.Pair(t.Context(), p.Code, "  ")
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		_, err = e.Pair(t.Context(), "weft_not_a_code", "x")
		require.Equal(t, fault.InvalidCredential, fault.CodeOf(err))
	})
}
