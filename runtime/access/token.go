package access

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
	"strings"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/atomicfile"
)

// TokenPrefix starts every bearer token, so a leaked token is recognisable
// (secret scanners) and a pasted pairing code is told from a token.
const TokenPrefix = "weft_"

// AdminTokenFile is the name of the file, in the data directory, that holds
// the admin token written on first start (mode 0600).
const AdminTokenFile = "admin.token"

// adminClientName names the client created on first start.
const adminClientName = "admin"

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
// fault.MissingCredential for an empty token and fault.InvalidCredential for
// a malformed, unknown or revoked one.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, fault.Errorf(fault.MissingCredential, "a bearer token is required")
	}
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return nil, fault.Errorf(fault.InvalidCredential, "the bearer token is not valid")
	}
	hash := hashSecret(token)
	c, err := s.store.ClientGetByTokenHash(ctx, hash)
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
// recovered. When another host of a shared store creates the service in
// between, the token file written here is removed again.
func (s *Service) Bootstrap(ctx context.Context, dataDir string) (token string, created bool, err error) {
	if _, err := s.store.ServiceGet(ctx); err == nil {
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
	res, err := s.store.ServiceInit(ctx, &store.ServiceInitParams{
		AdminClient: &store.ClientInsertParams{Name: adminClientName, TokenHash: hash, Scopes: []string{ScopeAdmin}},
	})
	if err != nil {
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	if !res.Created {
		// Another host of a shared store created the service first: the
		// token just written belongs to no client.
		if err := os.Remove(path); err != nil {
			s.log.Warn("remove the unused admin token", "path", path, "error", err)
		}
		return "", false, nil
	}
	s.log.Info("service created", "service_id", res.Config.ID, "admin_token_file", path)
	return tok, true, nil
}
