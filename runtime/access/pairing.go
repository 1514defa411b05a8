package access

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// PairingCodePrefix starts every pairing code.
const PairingCodePrefix = "weftpair-"

// pairingEncoding spells pairing codes: base32 without padding, easy to read
// aloud and to type.
var pairingEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DefaultPairingScopes are the scopes a pairing grants when the admin names
// none: everything but admin.
var DefaultPairingScopes = []string{ScopeModulesRead, ScopeModulesWrite, ScopeTasksRead, ScopeTasksWrite}

// Pairing is a pairing code as PairingCreate returns it: the code itself is
// shown once; only its hash is stored.
type Pairing struct {
	// Code is the one-time code.
	Code string
	// Scopes are the scopes the new client gets.
	Scopes []string
	// ExpiresAt is when the code stops working.
	ExpiresAt time.Time
}

// PairingCreate makes a single-use pairing code that grants scopes (the
// DefaultPairingScopes when empty) until ttl passes (Config.PairingTTL when
// zero; at most MaxPairingTTL). by is the id of the client that asks, for
// the log. It returns fault.Invalid for an unknown scope or a bad ttl.
func (s *Service) PairingCreate(ctx context.Context, by string, scopes []string, ttl time.Duration) (*Pairing, error) {
	if len(scopes) == 0 {
		scopes = DefaultPairingScopes
	}
	for _, sc := range scopes {
		if !slices.Contains(Scopes, sc) {
			return nil, fault.ParamErrorf("scopes", "unknown scope %q", sc)
		}
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	switch {
	case ttl < 0 || ttl > MaxPairingTTL:
		return nil, fault.ParamErrorf("ttl", "the lifetime of a pairing code must be between 0 and %s", MaxPairingTTL)
	case ttl == 0:
		ttl = s.cfg.PairingTTL
	}
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	code := PairingCodePrefix + pairingEncoding.EncodeToString(b[:])
	expires := s.now().Add(ttl).UTC().Truncate(time.Millisecond)
	if _, err := s.store.PairingInsert(ctx, &store.PairingInsertParams{
		CodeHash: hashSecret(code), Scopes: scopes, ExpiresAt: expires,
	}); err != nil {
		return nil, fault.Wrap("create pairing", err)
	}
	s.log.Info("pairing code created", "client_id", by, "scopes", strings.Join(scopes, " "), "expires_at", expires)
	return &Pairing{Code: code, Scopes: scopes, ExpiresAt: expires}, nil
}

// Paired is the client a pairing created, with its token, shown once.
type Paired struct {
	// ClientID is the new client's id.
	ClientID string
	// Name is the new client's name.
	Name string
	// Token is the new client's bearer token.
	Token string
	// Scopes are the new client's scopes.
	Scopes []string
}

// Pair redeems a pairing code: it creates a client named name with the
// code's scopes and returns its token, once. A code works once and until
// it expires. Attempts are rate-limited (Config.PairingRate per minute,
// across all callers) so codes cannot be guessed. It returns
// fault.RateLimited (with a fault.RetryAfter cause), fault.Invalid for a bad
// name, fault.InvalidCredential for an unknown code, fault.PairingUsed and
// fault.PairingExpired.
func (s *Service) Pair(ctx context.Context, code, name string) (*Paired, error) {
	if ok, wait := s.pairing.allow(s.now()); !ok {
		return nil, &fault.Error{
			Code: fault.RateLimited, Err: fault.RetryAfter(wait),
			Message: fmt.Sprintf("too many pairing attempts; try again in %s", wait.Round(time.Second)),
		}
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 128 {
		return nil, fault.ParamErrorf("name", "client name must be 1 to 128 characters")
	}
	if !strings.HasPrefix(code, PairingCodePrefix) {
		return nil, &fault.Error{Code: fault.InvalidCredential, Param: "code", Message: "unknown pairing code"}
	}
	tok, hash := newToken()
	c, err := s.store.PairingRedeem(ctx, &store.PairingRedeemParams{
		CodeHash: hashSecret(code), ClientName: name, TokenHash: hash, Now: s.now(),
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &fault.Error{Code: fault.InvalidCredential, Param: "code", Message: "unknown pairing code"}
	case errors.Is(err, store.ErrUsed):
		return nil, &fault.Error{Code: fault.PairingUsed, Param: "code", Message: "the pairing code was already used"}
	case errors.Is(err, store.ErrExpired):
		return nil, &fault.Error{Code: fault.PairingExpired, Param: "code", Message: "the pairing code has expired"}
	case err != nil:
		return nil, fault.Wrap("pair", err)
	}
	s.log.Info("client paired", "client_id", c.ID, "name", c.Name)
	return &Paired{ClientID: c.ID, Name: c.Name, Token: tok, Scopes: c.Scopes}, nil
}
