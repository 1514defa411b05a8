package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
)

// principalKey is the context key of the authenticated caller.
type principalKey struct{}

// principal returns the caller that authorize put in the request context,
// nil on a route that takes no credential.
func principal(r *http.Request) *access.Principal {
	p, _ := r.Context().Value(principalKey{}).(*access.Principal)
	return p
}

// caller is what the engine needs to know of the authenticated caller: whose
// tasks it may see (its own, or every client's with the admin scope).
func caller(r *http.Request) runtime.Caller {
	p := principal(r)
	return runtime.Caller{ClientID: p.ClientID, All: p.IsAdmin()}
}

// authorize is the one check of every authenticated route: it requires
// "Authorization: Bearer <token>", resolves the token through the Auth
// service on every request, so a revoked token fails on the very next one,
// and answers 403 insufficient_scope unless the caller holds scope (admin
// holds every scope). No header (or an empty token) is 401
// missing_credential; any other scheme or an unknown or revoked token is
// 401 invalid_credential.
func (s *Server) authorize(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			header := strings.TrimSpace(r.Header.Get("Authorization"))
			if header == "" {
				s.writeError(w, r, errorf(fault.MissingCredential, "", "missing Authorization header: send Authorization: Bearer <token>"))
				return
			}
			scheme, token, _ := strings.Cut(header, " ")
			token = strings.TrimSpace(token)
			if !strings.EqualFold(scheme, "Bearer") {
				s.writeError(w, r, errorf(fault.InvalidCredential, "", "unsupported authorization scheme: use Bearer"))
				return
			}
			if token == "" {
				s.writeError(w, r, errorf(fault.MissingCredential, "", "empty bearer token"))
				return
			}
			p, err := s.auth.Authenticate(r.Context(), token)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if !p.HasScope(scope) {
				s.writeError(w, r, errorf(fault.InsufficientScope, "", "this request needs the %s scope", scope))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		})
	}
}
