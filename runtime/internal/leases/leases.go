package leases

import (
	"context"
	"sync"
	"time"

	"github.com/weft-run/weft/store"
)

// Key names one lease: a task and the token its claim gave. The zero Key
// names none.
type Key struct {
	ID    string
	Token int64
}

// held is a lease this host holds for a run in progress.
type held struct {
	// expires is when the lease runs out by this host's clock, counted
	// from before the claim or renewal that set it, so never later than
	// the store's.
	expires time.Time
	// cancel stops the run's call; nil until the call starts.
	cancel context.CancelCauseFunc
	// lost is set once the lease is known lost: the run writes nothing
	// more.
	lost bool
	refs int
}

// Table holds the leases of the runs in progress on this host, for the
// heartbeat to renew. Runs register their lease (Hold) and give it up when
// they end (Release). The zero Table is ready; it is safe for concurrent
// use.
type Table struct {
	mu sync.Mutex
	m  map[Key]*held
}

// Hold registers the lease of t when host holds it and returns its key (the
// zero Key for none). since is when the claim that gave it began, and ttl
// the lease's length.
func (lt *Table) Hold(t *store.Task, host string, ttl time.Duration, since time.Time) Key {
	if t == nil || !t.Lease.Held() || t.Lease.Host != host {
		return Key{}
	}
	k := Key{t.ID, t.Lease.Token}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.m == nil {
		lt.m = make(map[Key]*held)
	}
	h := lt.m[k]
	if h == nil {
		h = &held{expires: since.Add(ttl)}
		lt.m[k] = h
	}
	h.refs++
	return k
}

// Release gives up one registration of k.
func (lt *Table) Release(k Key) {
	if k.ID == "" {
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if h := lt.m[k]; h != nil {
		if h.refs--; h.refs <= 0 {
			delete(lt.m, k)
		}
	}
}

// SetCancel records the function that stops the call of k, and returns
// false when the lease is already lost (the call must not start).
func (lt *Table) SetCancel(k Key, cancel context.CancelCauseFunc) bool {
	if k.ID == "" {
		return true
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	h := lt.m[k]
	if h == nil {
		return true
	}
	h.cancel = cancel
	return !h.lost
}

// Lose marks k lost and stops its call with cause; it reports whether k
// was not marked before (the caller then logs it).
func (lt *Table) Lose(k Key, cause error) bool {
	lt.mu.Lock()
	h := lt.m[k]
	if h == nil || h.lost {
		lt.mu.Unlock()
		return h == nil
	}
	h.lost = true
	cancel := h.cancel
	lt.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	return true
}

// IsLost reports whether k is known lost.
func (lt *Table) IsLost(k Key) bool {
	if k.ID == "" {
		return false
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	h := lt.m[k]
	return h != nil && h.lost
}

// Snapshot returns the leases to renew, and the ones whose expiry passed.
func (lt *Table) Snapshot(now time.Time) (renew []store.LeaseHeld, expired []Key) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for k, h := range lt.m {
		if h.lost {
			continue
		}
		if !now.Before(h.expires) {
			expired = append(expired, k)
		}
		renew = append(renew, store.LeaseHeld{TaskID: k.ID, Token: k.Token})
	}
	return renew, expired
}

// Renewed moves the expiry of the leases of held that were renewed to
// until, unless lost.
func (lt *Table) Renewed(held []store.LeaseHeld, lost []string, until time.Time) {
	gone := make(map[string]bool, len(lost))
	for _, id := range lost {
		gone[id] = true
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for _, l := range held {
		if gone[l.TaskID] {
			continue
		}
		if h := lt.m[Key{l.TaskID, l.Token}]; h != nil && until.After(h.expires) {
			h.expires = until
		}
	}
}
