package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// TestE2ECrossHostAccess holds pairing, revocation and idempotency keys to
// the database the hosts share, not to the host that saw a request: a code
// made on host A is redeemed on B and spent for C too; the client's token
// works on every host until B revokes it, and from the next request on no
// host takes it; a keyed create repeated on another host answers with the
// first host's task, and the same key with another body is refused there.
func TestE2ECrossHostAccess(t *testing.T) {
	dsn := MustOwnedDatabase(t)
	hosts := MustRunHosts(t, 3, dsn, "--lease-ttl", multiHostTTL.String())
	a, b, c := hosts[0], hosts[1], hosts[2]
	a.MustDeployTestkit()

	var pairing struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.MustCLI("clients", "pair", "--json", "--scope", "tasks:read", "--scope", "tasks:write")), &pairing))
	var redeemed struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.MustCLI("clients", "pair", "--redeem", pairing.Code, "--name", "roaming", "--json")), &redeemed))
	res := c.CLI("clients", "pair", "--redeem", pairing.Code, "--name", "again")
	require.Equal(t, 1, res.Code, "a code redeemed on one host is spent on all")
	require.Contains(t, res.Stderr, "pairing_code_used")

	for _, h := range hosts {
		status, err := h.DoToken(t.Context(), redeemed.Token, http.MethodGet, "/v1/tasks", nil, nil)
		require.NoError(t, err, "host %s", h.HostID())
		require.Equal(t, http.StatusOK, status)
	}
	require.Equal(t, "revoked "+redeemed.ClientID+"\n", b.MustCLI("clients", "revoke", redeemed.ClientID))
	for _, h := range []*Daemon{a, c, b} {
		status, _ := h.DoToken(t.Context(), redeemed.Token, http.MethodGet, "/v1/tasks", nil, nil)
		require.Equal(t, http.StatusUnauthorized, status, "host %s still takes a revoked token", h.HostID())
	}

	env, err := codec.EncodeEnvelope(codec.String("once"))
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"module": "testkit", "function": "echo", "input": env})
	require.NoError(t, err)
	first := keyedRequest{path: "/v1/tasks", key: "cross-host-1", body: body}.send(t.Context(), a)
	require.Equal(t, http.StatusAccepted, first.status)
	require.NotEmpty(t, first.taskID)
	again := keyedRequest{path: "/v1/tasks", key: "cross-host-1", body: body}.send(t.Context(), c)
	require.Equal(t, first, again, "the key's answer comes from the database, whichever host asks")
	other, err := json.Marshal(map[string]any{"module": "testkit", "function": "echo", "input": env, "timeout_ms": 5000})
	require.NoError(t, err)
	reused := keyedRequest{path: "/v1/tasks", key: "cross-host-1", body: other}.send(t.Context(), b)
	require.Equal(t, http.StatusUnprocessableEntity, reused.status, "the key was used for another request")
	require.Len(t, a.MustListTasks(""), 1, "one task for the key")
}
