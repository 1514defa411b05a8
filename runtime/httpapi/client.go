package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

func clientDocOf(c *store.Client) *client.PairedClient {
	d := &client.PairedClient{
		ID:        c.ID,
		Object:    "client",
		Name:      c.Name,
		Scopes:    c.Scopes,
		CreatedAt: c.CreatedAt.UTC(),
		RevokedAt: timeOrNil(c.RevokedAt),

		MaxMemoryLimitBytes: c.MaxMemoryLimit,
	}
	if d.Scopes == nil {
		d.Scopes = []string{}
	}
	return d
}

// handlePairingCreate issues a one-time pairing code: POST /v1/pairings
// (admin) answers 201 with the code, its scopes and its expiry. Without
// scopes the code grants access.DefaultPairingScopes; without ttl_seconds it
// lives for the engine's default. Under an Idempotency-Key the code is not
// stored with the key: a replay answers 409 idempotency_secret_not_replayed.
func (s *Server) handlePairingCreate(w http.ResponseWriter, r *http.Request) {
	var q client.PairingRequest
	if err := decodeJSON(r, &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	maxTTL := int64(access.MaxPairingTTL / time.Second)
	if q.TTLSeconds < 0 || q.TTLSeconds > maxTTL {
		s.writeError(w, r, errorf(fault.Invalid, "ttl_seconds", "ttl_seconds must be from 0 to %d", maxTTL))
		return
	}
	p, err := s.clients.PairingCreate(r.Context(), principal(r).ClientID, q.Scopes, time.Duration(q.TTLSeconds)*time.Second)
	if err != nil {
		s.writeError(w, r, renameParam(err, "ttl", "ttl_seconds"))
		return
	}
	if held := heldIdempotencyKey(r); held != nil {
		held.secret = true // the code is shown once and never stored
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusCreated, client.Pairing{Object: "pairing", Code: p.Code, Scopes: p.Scopes, ExpiresAt: p.ExpiresAt.UTC()})
}

// handlePair exchanges a pairing code for a client token: POST /v1/pair needs
// no credential; it answers 201 with the client id, the token (shown only
// this once) and the scopes. Codes are single-use and expire, and attempts
// are rate-limited (429 rate_limited).
func (s *Server) handlePair(w http.ResponseWriter, r *http.Request) {
	var q client.PairRequest
	if err := decodeJSON(r, &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	if q.Code == "" {
		s.writeError(w, r, errorf(fault.Invalid, "code", "code is required"))
		return
	}
	p, err := s.clients.Pair(r.Context(), q.Code, q.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusCreated, client.PairResult{Object: "client_token", ClientID: p.ClientID, Name: p.Name, Token: p.Token, Scopes: p.Scopes})
}

// handleClientList lists the paired clients: GET /v1/clients (admin).
func (s *Server) handleClientList(w http.ResponseWriter, r *http.Request) {
	clients, err := s.clients.ClientList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeKeyedPage(s, w, r, clients, func(c *store.Client) string { return c.ID }, func(c *store.Client) any { return clientDocOf(c) })
}

// handleClientGet returns one client: GET /v1/clients/{id} (admin).
func (s *Server) handleClientGet(w http.ResponseWriter, r *http.Request) {
	c, err := s.clients.ClientGet(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, clientDocOf(c))
}

// handleClientDelete revokes a client: DELETE /v1/clients/{id} (admin)
// answers 200 with the revoked client; its token fails from the next request
// on. Revoking twice keeps the first revocation time.
func (s *Server) handleClientDelete(w http.ResponseWriter, r *http.Request) {
	c, err := s.clients.ClientRevoke(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, clientDocOf(c))
}

// handleClientUpdate changes a client's settings: PATCH /v1/clients/{id}
// (admin) with {"max_memory_limit_bytes": N} sets the client's ceiling on
// the memory limits of its tasks (0: the daemon's default) and answers 200
// with the client.
func (s *Server) handleClientUpdate(w http.ResponseWriter, r *http.Request) {
	var q client.ClientUpdateRequest
	if err := decodeJSON(r, &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.clients.ClientUpdate(r.Context(), chi.URLParam(r, "id"), &access.ClientUpdateParams{MaxMemoryLimit: q.MaxMemoryLimitBytes})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, clientDocOf(c))
}
