package runtime

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
// zero; at most MaxPairingTTL). It needs the admin scope and returns
// fault.Invalid for an unknown scope or a bad ttl.
func (e *Engine) PairingCreate(ctx context.Context, who *Principal, scopes []string, ttl time.Duration) (*Pairing, error) {
	if err := who.Require(ScopeAdmin); err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = DefaultPairingScopes
	}
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return nil, fault.ParamErrorf("scopes", "unknown scope %q", s)
		}
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	switch {
	case ttl < 0 || ttl > MaxPairingTTL:
		return nil, fault.ParamErrorf("ttl", "the lifetime of a pairing code must be between 0 and %s", MaxPairingTTL)
	case ttl == 0:
		ttl = e.cfg.PairingTTL
	}
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	code := PairingCodePrefix + pairingEncoding.EncodeToString(b[:])
	expires := e.now().Add(ttl).UTC().Truncate(time.Millisecond)
	if _, err := e.store.PairingInsert(ctx, &store.PairingInsertParams{
		CodeHash: hashSecret(code), Scopes: scopes, ExpiresAt: expires,
	}); err != nil {
		return nil, fault.Wrap("create pairing", err)
	}
	e.log.Info("pairing code created", "client_id", who.ClientID, "scopes", strings.Join(scopes, " "), "expires_at", expires)
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
// fault.RateLimited, fault.Invalid for a bad name, fault.InvalidCredential for an
// unknown code, fault.PairingUsed and fault.PairingExpired.
func (e *Engine) Pair(ctx context.Context, code, name string) (*Paired, error) {
	if ok, wait := e.pairing.allow(e.now()); !ok {
		return nil, &fault.Error{
			Code: fault.RateLimited, Err: RetryAfter(wait),
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
	c, err := e.store.PairingRedeem(ctx, &store.PairingRedeemParams{
		CodeHash: hashSecret(code), ClientName: name, TokenHash: hash, Now: e.now(),
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
	e.log.Info("client paired", "client_id", c.ID, "name", c.Name)
	return &Paired{ClientID: c.ID, Name: c.Name, Token: tok, Scopes: c.Scopes}, nil
}

// rateLimiter is a token bucket: rate tokens per period, holding at most
// rate.
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64
	period time.Duration
	tokens float64
	last   time.Time
}

func newRateLimiter(rate int, period time.Duration) *rateLimiter {
	return &rateLimiter{rate: float64(rate), period: period, tokens: float64(rate)}
}

// allow takes a token at time now, and reports whether there was one;
// without one, it also returns how long until the next one, at least a
// second.
func (l *rateLimiter) allow(now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.rate, l.tokens+l.rate*float64(now.Sub(l.last))/float64(l.period))
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens < 1 {
		wait := time.Duration((1 - l.tokens) * float64(l.period) / l.rate)
		return false, max(wait, time.Second)
	}
	l.tokens--
	return true, 0
}
