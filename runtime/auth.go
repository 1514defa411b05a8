package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/atomicfile"
)

// The scopes a client can hold (BRIEF §3.3). Admin implies every other
// scope.
const (
	ScopeAdmin        = "admin"
	ScopeModulesRead  = "modules:read"
	ScopeModulesWrite = "modules:write"
	ScopeTasksRead    = "tasks:read"
	ScopeTasksWrite   = "tasks:write"
)

// Scopes lists every scope.
var Scopes = []string{ScopeAdmin, ScopeModulesRead, ScopeModulesWrite, ScopeTasksRead, ScopeTasksWrite}

// TokenPrefix starts every bearer token, so a leaked token is recognisable
// (secret scanners) and a pasted pairing code is told from a token.
const TokenPrefix = "weft_"

// AdminTokenFile is the name of the file, in the data directory, that holds
// the admin token written on first start (mode 0600).
const AdminTokenFile = "admin.token"

// adminClientName names the client created on first start.
const adminClientName = "admin"

// Principal is an authenticated client: who is calling, and with which
// scopes.
type Principal struct {
	// ClientID is the client's id.
	ClientID string
	// Name is the client's name.
	Name string
	// Scopes are the client's scopes.
	Scopes []string
	// MaxMemoryLimit is the client's own ceiling on the memory limits of
	// its tasks; zero means Config.ClientMemoryLimit.
	MaxMemoryLimit int64
}

// IsAdmin reports whether p holds the admin scope. A nil Principal is not
// an admin.
func (p *Principal) IsAdmin() bool { return p != nil && slices.Contains(p.Scopes, ScopeAdmin) }

// HasScope reports whether p holds scope; admin implies every scope.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && (slices.Contains(p.Scopes, scope) || slices.Contains(p.Scopes, ScopeAdmin))
}

// Require returns nil when p holds scope, fault.MissingCredential for a nil
// Principal, and fault.InsufficientScope otherwise.
func (p *Principal) Require(scope string) error {
	if p == nil {
		return fault.Errorf(fault.MissingCredential, "authentication required")
	}
	if !p.HasScope(scope) {
		return fault.Errorf(fault.InsufficientScope, "this operation needs the %s scope", scope)
	}
	return nil
}

// owns reports whether p may see an object owned by clientID: its own
// objects, and everything for an admin.
func (p *Principal) owns(clientID string) bool {
	return p != nil && (p.ClientID == clientID || p.IsAdmin())
}

// newToken returns a fresh bearer token (TokenPrefix and 32 random bytes,
// unpadded base64url) and its SHA-256 hash, the only form stored.
func newToken() (string, []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return tok, hashSecret(tok)
}

// hashSecret returns the SHA-256 hash of a token or pairing code.
func hashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// tokenLen is the length of every token newToken makes.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(32)

// Authenticate returns the client a bearer token belongs to. The token is
// looked up by its SHA-256 hash and the hash compared in constant time; a
// revoked client is refused on its next request. It returns
// fault.MissingCredential for an empty token and fault.InvalidCredential for a
// malformed, unknown or revoked one.
func (e *Engine) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, fault.Errorf(fault.MissingCredential, "a bearer token is required")
	}
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return nil, fault.Errorf(fault.InvalidCredential, "the bearer token is not valid")
	}
	hash := hashSecret(token)
	c, err := e.store.ClientGetByTokenHash(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrRevoked):
		return nil, fault.Errorf(fault.InvalidCredential, "the bearer token is not valid")
	case err != nil:
		return nil, fault.Wrap("authenticate", err)
	}
	if subtle.ConstantTimeCompare(c.TokenHash, hash) != 1 || c.Revoked() {
		return nil, fault.Errorf(fault.InvalidCredential, "the bearer token is not valid")
	}
	return &Principal{ClientID: c.ID, Name: c.Name, Scopes: c.Scopes, MaxMemoryLimit: c.MaxMemoryLimit}, nil
}

// Bootstrap creates, on first start, the service identity and the admin
// client in one transaction, and writes the admin token to
// dataDir/admin.token with mode 0600 (BRIEF §3.3). The file is written
// (temporary file, fsync, rename) before the client exists, so a crash in
// between leaves a token file that the next start replaces. On later starts
// it creates nothing and returns created false and an empty token: only the
// token's hash is stored, so a lost token is replaced through pairing, not
// recovered.
func (e *Engine) Bootstrap(ctx context.Context, dataDir string) (token string, created bool, err error) {
	if _, err := e.store.ServiceGet(ctx); err == nil {
		return "", false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	tok, hash := newToken()
	path := filepath.Join(dataDir, AdminTokenFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("bootstrap: write admin token: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("bootstrap: write admin token: %w", err)
	}
	res, err := e.store.ServiceInit(ctx, &store.ServiceInitParams{
		AdminClient: &store.ClientInsertParams{Name: adminClientName, TokenHash: hash, Scopes: []string{ScopeAdmin}},
	})
	if err != nil {
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	if !res.Created {
		return "", false, nil
	}
	e.log.Info("service created", "service_id", res.Config.ID, "admin_token_file", path)
	return tok, true, nil
}

// ClientList returns every client, oldest first, revoked ones included. It
// needs the admin scope.
func (e *Engine) ClientList(ctx context.Context, who *Principal) ([]*store.Client, error) {
	if err := who.Require(ScopeAdmin); err != nil {
		return nil, err
	}
	cs, err := e.store.ClientList(ctx)
	if err != nil {
		return nil, fault.Wrap("list clients", err)
	}
	return cs, nil
}

// ClientGet returns a client. Admins may read any client, others only
// themselves; anything else is fault.NotFound.
func (e *Engine) ClientGet(ctx context.Context, who *Principal, id string) (*store.Client, error) {
	if who == nil {
		return nil, fault.Errorf(fault.MissingCredential, "authentication required")
	}
	if !who.owns(id) {
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	}
	c, err := e.store.ClientGet(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("get client", err)
	}
	return c, nil
}

// ClientRevoke revokes a client at once: its token fails from the next
// request on. Revoking twice keeps the first time. It needs the admin scope
// and returns fault.NotFound for an unknown id.
func (e *Engine) ClientRevoke(ctx context.Context, who *Principal, id string) (*store.Client, error) {
	if err := who.Require(ScopeAdmin); err != nil {
		return nil, err
	}
	c, err := e.store.ClientRevoke(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("revoke client", err)
	}
	e.log.Info("client revoked", "client_id", id)
	return c, nil
}

// ClientUpdateParams are the params of Engine.ClientUpdate.
type ClientUpdateParams struct {
	// MaxMemoryLimit sets the client's ceiling on memory_limit_bytes, at
	// most MaxMemoryLimit; zero restores the daemon's default. Defaults to
	// nil (unchanged).
	MaxMemoryLimit *int64
}

// ClientUpdate changes a client's settings: its ceiling on the memory
// limits of its tasks. It needs the admin scope and returns fault.NotFound
// for an unknown id and fault.Invalid (param max_memory_limit_bytes) for a
// limit out of range.
func (e *Engine) ClientUpdate(ctx context.Context, who *Principal, id string, p *ClientUpdateParams) (*store.Client, error) {
	if err := who.Require(ScopeAdmin); err != nil {
		return nil, err
	}
	if m := p.MaxMemoryLimit; m != nil && (*m < 0 || *m > MaxMemoryLimit) {
		return nil, fault.ParamErrorf("max_memory_limit_bytes", "max_memory_limit_bytes must be between 0 and %d", int64(MaxMemoryLimit))
	}
	c, err := e.store.ClientUpdate(ctx, &store.ClientUpdateParams{ID: id, MaxMemoryLimit: p.MaxMemoryLimit})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("update client", err)
	}
	e.log.Info("client updated", "client_id", id, "max_memory_limit", c.MaxMemoryLimit)
	return c, nil
}
