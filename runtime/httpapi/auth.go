package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
)

// principalKey is the context key of the authenticated caller.
type principalKey struct{}

// principal returns the caller that authenticate put in the request
// context, nil on an unauthenticated route.
func principal(r *http.Request) *runtime.Principal {
	p, _ := r.Context().Value(principalKey{}).(*runtime.Principal)
	return p
}

// authenticate requires "Authorization: Bearer <token>" and resolves the
// token through the engine on every request, so a revoked token fails on the
// very next one. No header (or an empty token) is 401 missing_credential; any
// other scheme or an unknown or revoked token is 401 invalid_credential.
func (s *Server) authenticate(next http.Handler) http.Handler {
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// requireScope answers 403 insufficient_scope unless the caller holds scope
// (admin holds every scope).
func (s *Server) requireScope(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := principal(r)
			if !p.HasScope(scope) {
				s.writeError(w, r, errorf(fault.InsufficientScope, "", "this request needs the %s scope", scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
