package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
)

// scopeTable is the scope of every route under /v1 as the API documents it
// (docs/http-api.md), written out independently of routeTable: a route
// whose declared scope drifts from it fails TestRouteScopes.
var scopeTable = []struct {
	method, pattern, path, scope string
}{
	{"PUT", "/v1/modules/{name}", "/v1/modules/m", access.ScopeModulesWrite},
	{"GET", "/v1/modules", "/v1/modules", access.ScopeModulesRead},
	{"GET", "/v1/modules/{name}", "/v1/modules/m", access.ScopeModulesRead},
	{"DELETE", "/v1/modules/{name}", "/v1/modules/m", access.ScopeModulesWrite},
	{"POST", "/v1/tasks", "/v1/tasks", access.ScopeTasksWrite},
	{"GET", "/v1/tasks", "/v1/tasks", access.ScopeTasksRead},
	{"GET", "/v1/tasks/{id}", "/v1/tasks/task_x", access.ScopeTasksRead},
	{"POST", "/v1/tasks/{id}/cancel", "/v1/tasks/task_x/cancel", access.ScopeTasksWrite},
	{"POST", "/v1/tasks/{id}/terminate", "/v1/tasks/task_x/terminate", access.ScopeTasksWrite},
	{"POST", "/v1/tasks/{id}/signals/{name}", "/v1/tasks/task_x/signals/go", access.ScopeTasksWrite},
	{"GET", "/v1/tasks/{id}/events", "/v1/tasks/task_x/events", access.ScopeTasksRead},
	{"GET", "/v1/tasks/{id}/queries/{name}", "/v1/tasks/task_x/queries/state", access.ScopeTasksRead},
	{"POST", "/v1/tasks/{id}/queries/{name}", "/v1/tasks/task_x/queries/state", access.ScopeTasksRead},
	{"GET", "/v1/workflows/{workflow_id}", "/v1/workflows/order-1", access.ScopeTasksRead},
	{"POST", "/v1/workflows/{workflow_id}/cancel", "/v1/workflows/order-1/cancel", access.ScopeTasksWrite},
	{"POST", "/v1/workflows/{workflow_id}/terminate", "/v1/workflows/order-1/terminate", access.ScopeTasksWrite},
	{"POST", "/v1/workflows/{workflow_id}/signals/{name}", "/v1/workflows/order-1/signals/go", access.ScopeTasksWrite},
	{"GET", "/v1/workflows/{workflow_id}/queries/{name}", "/v1/workflows/order-1/queries/state", access.ScopeTasksRead},
	{"POST", "/v1/workflows/{workflow_id}/queries/{name}", "/v1/workflows/order-1/queries/state", access.ScopeTasksRead},
	{"POST", "/v1/schedules", "/v1/schedules", access.ScopeTasksWrite},
	{"GET", "/v1/schedules", "/v1/schedules", access.ScopeTasksRead},
	{"GET", "/v1/schedules/{id}", "/v1/schedules/nightly", access.ScopeTasksRead},
	{"DELETE", "/v1/schedules/{id}", "/v1/schedules/nightly", access.ScopeTasksWrite},
	{"POST", "/v1/schedules/{id}/pause", "/v1/schedules/nightly/pause", access.ScopeTasksWrite},
	{"POST", "/v1/schedules/{id}/resume", "/v1/schedules/nightly/resume", access.ScopeTasksWrite},
	{"POST", "/v1/schedules/{id}/trigger", "/v1/schedules/nightly/trigger", access.ScopeTasksWrite},
	{"POST", "/v1/responses", "/v1/responses", access.ScopeTasksWrite},
	{"GET", "/v1/responses/{id}", "/v1/responses/resp_x", access.ScopeTasksRead},
	{"POST", "/v1/pairings", "/v1/pairings", access.ScopeAdmin},
	{"GET", "/v1/clients", "/v1/clients", access.ScopeAdmin},
	{"GET", "/v1/clients/{id}", "/v1/clients/cli_x", access.ScopeAdmin},
	{"DELETE", "/v1/clients/{id}", "/v1/clients/cli_x", access.ScopeAdmin},
	{"PATCH", "/v1/clients/{id}", "/v1/clients/cli_x", access.ScopeAdmin},
}

// TestRouteScopes checks the scope of every route: a token with every scope
// but the route's (and not admin) is 403 insufficient_scope before any
// service is called; a token with only the route's scope gets past the
// check and reaches its service; admin gets past every check; and no
// authenticated route is missing from the table.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	f := &fakeEngine{
		// A token names its scopes: "scopes:tasks:read,modules:read".
		AuthenticateFunc: func(_ context.Context, token string) (*access.Principal, error) {
			scopes := strings.Split(strings.TrimPrefix(token, "scopes:"), ",")
			return &access.Principal{ClientID: "cli_t", Scopes: scopes}, nil
		},
	}
	s, err := New(Config{Engine: f, Modules: f, Access: f, Logger: testLogger(t)})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	var declared []string
	for _, rt := range s.routeTable() {
		if rt.scope != noCredential {
			declared = append(declared, rt.method+" "+rt.pattern)
		}
	}
	var listed []string
	for _, rt := range scopeTable {
		listed = append(listed, rt.method+" "+rt.pattern)
	}
	slices.Sort(declared)
	slices.Sort(listed)
	require.Equal(t, listed, declared, "every authenticated route is in the scope table")

	body := func(method, path string) string {
		switch {
		case method == "GET" || method == "DELETE":
			return ""
		case path == "/v1/tasks" || path == "/v1/responses":
			return `{"module":"m","function":"f"}`
		case path == "/v1/schedules":
			return `{"spec":{"interval_ms":1000},"action":{"module":"m","function":"f"}}`
		}
		return "{}"
	}
	for _, rt := range scopeTable {
		t.Run(rt.method+" "+rt.pattern, func(t *testing.T) {
			var others []string
			for _, sc := range access.Scopes {
				if sc != rt.scope && sc != access.ScopeAdmin {
					others = append(others, sc)
				}
			}
			before := f.calls.Load()
			resp := doToken(t, "scopes:"+strings.Join(others, ","), rt.method, ts.URL+rt.path, body(rt.method, rt.path), nil)
			e := MustError(t, resp, http.StatusForbidden, string(fault.InsufficientScope))
			require.Contains(t, e.Error.Message, rt.scope)
			require.Equal(t, `Bearer realm="weft", error="insufficient_scope"`, resp.Header.Get("WWW-Authenticate"))
			require.Equal(t, before, f.calls.Load(), "no engine service is called without the scope")

			for _, token := range []string{"scopes:" + rt.scope, "scopes:" + access.ScopeAdmin} {
				before := f.calls.Load()
				resp = doToken(t, token, rt.method, ts.URL+rt.path, body(rt.method, rt.path), nil)
				raw := MustReadBody(t, resp)
				require.NotEqual(t, http.StatusForbidden, resp.StatusCode, "%s: %s", token, raw)
				require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", token, raw)
				require.Greater(t, f.calls.Load(), before, "%s: the request reached its service", token)
			}
		})
	}
}
