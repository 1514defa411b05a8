package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAuth covers credentials, scopes, ownership, pairing and revocation
// against the real engine.
func TestAuth(t *testing.T) {
	t.Parallel()

	t.Run("Credentials", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tests := []struct {
			name   string
			header string
			code   string
			www    string
		}{
			{name: "no header", header: "", code: "missing_credential", www: `Bearer realm="weft"`},
			{name: "empty bearer", header: "Bearer ", code: "missing_credential", www: `Bearer realm="weft"`},
			{name: "basic scheme", header: "Basic YWRtaW46YWRtaW4=", code: "invalid_credential", www: `Bearer realm="weft", error="invalid_token"`},
			{name: "unknown token", header: "Bearer weft_" + strings.Repeat("A", 43), code: "invalid_credential", www: `Bearer realm="weft", error="invalid_token"`},
			{name: "malformed token", header: "Bearer nope", code: "invalid_credential", www: `Bearer realm="weft", error="invalid_token"`},
			{name: "admin token one char off", header: "Bearer " + b.admin[:len(b.admin)-1] + flip(b.admin[len(b.admin)-1]), code: "invalid_credential", www: `Bearer realm="weft", error="invalid_token"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				resp := doToken(t, "", "GET", b.url+"/v1/tasks", "", hdr("Authorization", tc.header))
				e := MustError(t, resp, 401, tc.code)
				require.Equal(t, "authentication_error", e.Error.Type)
				require.Equal(t, tc.www, resp.Header.Get("WWW-Authenticate"))
			})
		}
		// Lower-case scheme is accepted.
		resp := doToken(t, "", "GET", b.url+"/v1/tasks", "", hdr("Authorization", "bearer "+b.admin))
		MustDecode[listDoc[task]](t, resp, 200)
		// Unauthenticated routes need nothing.
		MustDecode[map[string]string](t, doToken(t, "", "GET", b.url+"/healthz", "", nil), 200)
	})

	t.Run("Scopes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		_, reader := b.pair(t, "reader", "tasks:read", "modules:read")
		_, writer := b.pair(t, "writer", "tasks:write")
		tests := []struct {
			name   string
			token  string
			method string
			path   string
			body   string
			status int
		}{
			{name: "reader lists tasks", token: reader, method: "GET", path: "/v1/tasks", status: 200},
			{name: "reader lists modules", token: reader, method: "GET", path: "/v1/modules", status: 200},
			{name: "reader creates task", token: reader, method: "POST", path: "/v1/tasks", body: taskBody(t, "echo"), status: 403},
			{name: "reader runs response", token: reader, method: "POST", path: "/v1/responses", body: taskBody(t, "echo"), status: 403},
			{name: "reader deploys", token: reader, method: "PUT", path: "/v1/modules/x", body: string(fakeModule("a:activity")), status: 403},
			{name: "reader deletes module", token: reader, method: "DELETE", path: "/v1/modules/m", status: 403},
			{name: "reader lists clients", token: reader, method: "GET", path: "/v1/clients", status: 403},
			{name: "reader pairs", token: reader, method: "POST", path: "/v1/pairings", body: `{}`, status: 403},
			{name: "writer creates task", token: writer, method: "POST", path: "/v1/tasks", body: taskBody(t, "echo"), status: 202},
			{name: "writer lists tasks", token: writer, method: "GET", path: "/v1/tasks", status: 403},
			{name: "writer reads modules", token: writer, method: "GET", path: "/v1/modules/m", status: 403},
			{name: "admin lists clients", token: b.admin, method: "GET", path: "/v1/clients", status: 200},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				resp := doToken(t, tc.token, tc.method, b.url+tc.path, tc.body, nil)
				if tc.status == 403 {
					e := MustError(t, resp, 403, "insufficient_scope")
					require.Equal(t, "permission_error", e.Error.Type)
					return
				}
				require.Equal(t, tc.status, resp.StatusCode, "%s", MustReadBody(t, resp))
			})
		}
	})

	t.Run("Ownership", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		aliceID, alice := b.pair(t, "alice", "tasks:read", "tasks:write")
		_, bob := b.pair(t, "bob", "tasks:read", "tasks:write")

		resp := doToken(t, alice, "POST", b.url+"/v1/tasks", taskBody(t, "block"), nil)
		tk := MustDecode[task](t, resp, 202)
		require.Equal(t, aliceID, tk.ClientID)

		// Bob cannot tell alice's task from a missing one.
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/tasks/" + tk.ID},
			{"GET", "/v1/tasks/" + tk.ID + "/events"},
			{"POST", "/v1/tasks/" + tk.ID + "/cancel"},
			{"POST", "/v1/tasks/" + tk.ID + "/signals/x"},
			{"GET", "/v1/responses/" + tk.ResponseID},
		} {
			MustError(t, doToken(t, bob, r.method, b.url+r.path, "", nil), 404, "not_found")
		}
		MustError(t, doToken(t, bob, "GET", b.url+"/v1/tasks/"+tk.ID+"/events", "", hdr("Accept", "text/event-stream")), 404, "not_found")
		require.Empty(t, MustDecode[listDoc[task]](t, doToken(t, bob, "GET", b.url+"/v1/tasks", "", nil), 200).Data)

		// Alice and the admin see it.
		MustDecode[task](t, doToken(t, alice, "GET", b.url+"/v1/tasks/"+tk.ID, "", nil), 200)
		require.Len(t, MustDecode[listDoc[task]](t, doToken(t, alice, "GET", b.url+"/v1/tasks", "", nil), 200).Data, 1)
		MustDecode[task](t, b.do(t, "GET", "/v1/tasks/"+tk.ID, "", nil), 200)
		require.Equal(t, "running", b.waitStatus(t, tk.ID, "running").Status, "bob's attempts changed nothing")
	})

	t.Run("PairingAndClients", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		resp := b.do(t, "POST", "/v1/pairings", `{"scopes":["tasks:read"],"ttl_seconds":60}`, nil)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		p := MustDecode[map[string]any](t, resp, 201)
		require.Equal(t, []any{"tasks:read"}, p["scopes"])
		expires, err := time.Parse(time.RFC3339, p["expires_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(time.Minute), expires, 10*time.Second)
		code := p["code"].(string)

		resp = doToken(t, "", "POST", b.url+"/v1/pair", `{"code":"`+code+`","name":"phone"}`, nil)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		c := MustDecode[map[string]any](t, resp, 201)
		id, tok := c["client_id"].(string), c["token"].(string)
		require.True(t, strings.HasPrefix(id, "cli_"))
		require.Equal(t, []any{"tasks:read"}, c["scopes"])
		MustDecode[listDoc[task]](t, doToken(t, tok, "GET", b.url+"/v1/tasks", "", nil), 200)

		e := MustError(t, doToken(t, "", "POST", b.url+"/v1/pair", `{"code":"`+code+`","name":"again"}`, nil), 409, "pairing_code_used")
		require.Equal(t, "code", e.param())
		MustError(t, doToken(t, "", "POST", b.url+"/v1/pair", `{"code":"weftpair-NOPE","name":"x"}`, nil), 401, "invalid_credential")
		e = MustError(t, doToken(t, "", "POST", b.url+"/v1/pair", `{"name":"x"}`, nil), 400, "invalid_request")
		require.Equal(t, "code", e.param())
		e = MustError(t, b.do(t, "POST", "/v1/pairings", `{"scopes":["root"]}`, nil), 400, "invalid_request")
		require.Equal(t, "scopes", e.param())
		e = MustError(t, b.do(t, "POST", "/v1/pairings", `{"ttl_seconds":-1}`, nil), 400, "invalid_request")
		require.Equal(t, "ttl_seconds", e.param())
		e = MustError(t, b.do(t, "POST", "/v1/pairings", `{"scopes":"admin"}`, nil), 400, "invalid_request")
		require.Equal(t, "scopes", e.param())

		list := MustDecode[listDoc[map[string]any]](t, b.do(t, "GET", "/v1/clients", "", nil), 200)
		require.Len(t, list.Data, 2)
		for _, cl := range list.Data {
			require.NotContains(t, cl, "token")
			require.NotContains(t, cl, "token_hash")
		}
		got := MustDecode[map[string]any](t, b.do(t, "GET", "/v1/clients/"+id, "", nil), 200)
		require.Equal(t, "phone", got["name"])
		require.Nil(t, got["revoked_at"])

		// Revocation takes effect on the very next request.
		revoked := MustDecode[map[string]any](t, b.do(t, "DELETE", "/v1/clients/"+id, "", nil), 200)
		require.NotNil(t, revoked["revoked_at"])
		MustError(t, doToken(t, tok, "GET", b.url+"/v1/tasks", "", nil), 401, "invalid_credential")
		MustError(t, b.do(t, "GET", "/v1/clients/cli_01JAAAAAAAAAAAAAAAAAAAAAAA", "", nil), 404, "not_found")
		MustError(t, b.do(t, "DELETE", "/v1/clients/cli_01JAAAAAAAAAAAAAAAAAAAAAAA", "", nil), 404, "not_found")
	})

	t.Run("PairRateLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{}) // PairingRate 5 per minute
		limited := 0
		for range 8 {
			resp := doToken(t, "", "POST", b.url+"/v1/pair", `{"code":"weftpair-GUESS","name":"x"}`, nil)
			if resp.StatusCode == 429 {
				e := MustError(t, resp, 429, "rate_limited")
				require.Equal(t, "rate_limit_error", e.Error.Type)
				limited++
				continue
			}
			MustError(t, resp, 401, "invalid_credential")
		}
		require.Equal(t, 3, limited)
	})
}

// flip returns a different base64url character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}
