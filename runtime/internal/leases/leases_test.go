package leases

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

func leased(id, host string, token int64) *store.Task {
	return &store.Task{ID: id, Lease: store.Lease{Host: host, Token: token, ExpiresAt: time.Now().Add(time.Minute)}}
}

// A lease held by this host is renewed until it runs out; one of another
// host, or none, is not registered; a lost lease stops its call once and
// is renewed no more.
func TestTable(t *testing.T) {
	var lt Table
	t0 := time.Unix(1000, 0)
	require.Equal(t, Key{}, lt.Hold(leased("a", "other", 1), "me", time.Second, t0), "another host's lease")
	require.Equal(t, Key{}, lt.Hold(&store.Task{ID: "b"}, "me", time.Second, t0), "no lease")
	k := lt.Hold(leased("c", "me", 7), "me", time.Second, t0)
	require.Equal(t, Key{ID: "c", Token: 7}, k)

	renew, expired := lt.Snapshot(t0.Add(500 * time.Millisecond))
	require.Equal(t, []store.LeaseHeld{{TaskID: "c", Token: 7}}, renew)
	require.Empty(t, expired)
	_, expired = lt.Snapshot(t0.Add(time.Second))
	require.Equal(t, []Key{k}, expired, "the expiry passed without a renewal")
	lt.Renewed(renew, nil, t0.Add(3*time.Second))
	_, expired = lt.Snapshot(t0.Add(2 * time.Second))
	require.Empty(t, expired, "a renewal moves the expiry")

	var cause error
	require.True(t, lt.SetCancel(k, func(err error) { cause = err }))
	lost := errors.New("lost")
	require.True(t, lt.Lose(k, lost))
	require.ErrorIs(t, cause, lost)
	require.False(t, lt.Lose(k, lost), "a lease is lost once")
	require.True(t, lt.IsLost(k))
	require.False(t, lt.SetCancel(k, func(error) {}), "a call whose lease is lost must not start")
	renew, _ = lt.Snapshot(t0)
	require.Empty(t, renew, "a lost lease is renewed no more")

	lt.Release(k)
	require.False(t, lt.IsLost(k), "released")
}
