// Package blob keeps module files on disk, content-addressed by their
// SHA-256 digest, outside the database (persistence §11.1: model files stay
// outside the database; the database holds metadata and digests).
//
// A file with digest "sha256:<hex>" lives at DIR/sha256/<hex>, DIR being the
// modules directory (the daemon's --modules, by default DATA/modules). It is
// written atomically (a temporary file in the same directory, fsync, rename,
// fsync of the directory), so a crash leaves either the whole file or none,
// and it is verified against its digest every time it is read: a file
// changed on disk gives ErrDigestMismatch, never wrong bytes.
//
// # Usage
//
//	files, err := blob.New(blob.Config{Dir: filepath.Join(dataDir, "modules")})
//	digest, size, err := files.PutReader(ctx, body)
//	wasm, err := files.Get(ctx, digest)
package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/atomicfile"
)

// Sentinel errors of the package.
var (
	// ErrNotFound reports that no file with the digest is stored.
	ErrNotFound = errors.New("blob: not found")
	// ErrDigestMismatch reports a stored file whose content no longer
	// hashes to its digest: it was changed or damaged on disk.
	ErrDigestMismatch = errors.New("blob: content does not match its digest")
	// ErrInvalidDigest reports a digest that is not "sha256:" followed by 64
	// lowercase hex digits.
	ErrInvalidDigest = errors.New("blob: invalid digest")
)

// DigestPrefix starts every digest.
const DigestPrefix = "sha256:"

// tempPrefix starts the names of files being written.
const tempPrefix = ".tmp-"

// staleTemp is the age past which New removes a leftover temporary file.
const staleTemp = time.Hour

// Config configures a Store.
type Config struct {
	// Dir is the modules directory; files live under Dir/sha256. Hosts
	// that share one database share it too. Required.
	Dir string
}

// Store is a directory of content-addressed files. It is safe for
// concurrent use, also by several processes.
type Store struct {
	dir string // DIR/sha256
}

// New creates the directory if needed, removes temporary files that a crash
// left behind, and returns the store.
func New(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("open module files: Config.Dir is required")
	}
	dir := filepath.Join(cfg.Dir, "sha256")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open module files: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open module files: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(dir, e.Name())) // best effort: a leftover of a crash
		}
	}
	return &Store{dir: dir}, nil
}

// Digest returns the digest of data, "sha256:<hex>".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// CheckDigest returns ErrInvalidDigest unless digest is well formed.
func CheckDigest(digest string) error {
	if !store.ValidDigest(digest) {
		return fmt.Errorf("%w: %q", ErrInvalidDigest, digest)
	}
	return nil
}

// Path returns where the file with digest lives.
func (s *Store) Path(digest string) (string, error) {
	if err := CheckDigest(digest); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, strings.TrimPrefix(digest, DigestPrefix)), nil
}

// Put stores data and returns its digest. Storing bytes that are already
// there is cheap and changes nothing; a damaged copy is replaced.
func (s *Store) Put(ctx context.Context, data []byte) (string, error) {
	digest := Digest(data)
	if ok, err := s.intact(ctx, digest); err != nil || ok {
		return digest, err
	}
	_, _, err := s.write(ctx, bytes.NewReader(data), digest)
	if err != nil {
		return "", fmt.Errorf("put module file: %w", err)
	}
	return digest, nil
}

// PutReader stores everything r yields, hashing it on the way, and returns
// its digest and size. The bytes reach their final name only once complete
// and durable.
func (s *Store) PutReader(ctx context.Context, r io.Reader) (digest string, size int64, err error) {
	digest, size, err = s.write(ctx, r, "")
	if err != nil {
		return "", 0, fmt.Errorf("put module file: %w", err)
	}
	return digest, size, nil
}

// write copies r to a temporary file, fsyncs it, renames it to its digest
// and fsyncs the directory. With want set, the content must hash to it.
func (s *Store) write(ctx context.Context, r io.Reader, want string) (string, int64, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}
	var digest string
	var size int64
	err := atomicfile.Write(s.dir, tempPrefix+"*", 0o600, func(w io.Writer) (string, error) {
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), ctxReader{ctx, r})
		if err != nil {
			return "", err
		}
		digest, size = DigestPrefix+hex.EncodeToString(h.Sum(nil)), n
		if want != "" && digest != want {
			return "", fmt.Errorf("%w: wrote %s, expected %s", ErrDigestMismatch, digest, want)
		}
		final, _ := s.Path(digest) // digest is well formed by construction
		return final, nil
	})
	if err != nil {
		return "", 0, err
	}
	return digest, size, nil
}

// intact reports whether the file with digest exists with the right
// content.
func (s *Store) intact(ctx context.Context, digest string) (bool, error) {
	_, err := s.Get(ctx, digest)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrDigestMismatch):
		return false, nil
	}
	return false, err
}

// Get returns the content of the file with digest after checking it
// against the digest. It returns ErrInvalidDigest, ErrNotFound, or
// ErrDigestMismatch for a file changed on disk.
func (s *Store) Get(ctx context.Context, digest string) ([]byte, error) {
	path, err := s.Path(digest)
	if err != nil {
		return nil, fmt.Errorf("get module file: %w", err)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get module file %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get module file: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	data, err := io.ReadAll(io.TeeReader(ctxReader{ctx, f}, h))
	if err != nil {
		return nil, fmt.Errorf("get module file %s: %w", digest, err)
	}
	if got := sum(h); got != digest {
		return nil, fmt.Errorf("get module file %s: %w (the file at %s hashes to %s)", digest, ErrDigestMismatch, path, got)
	}
	return data, nil
}

// Has reports whether a file with digest is stored, without reading it.
func (s *Store) Has(digest string) (bool, error) {
	path, err := s.Path(digest)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the file with digest. Deleting a missing file returns
// ErrNotFound.
func (s *Store) Delete(ctx context.Context, digest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.Path(digest)
	if err != nil {
		return fmt.Errorf("delete module file: %w", err)
	}
	if err := os.Remove(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete module file %s: %w", digest, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("delete module file: %w", err)
	}
	return atomicfile.SyncDir(s.dir)
}

func sum(h hash.Hash) string { return DigestPrefix + hex.EncodeToString(h.Sum(nil)) }

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read fails with the context's error once it ends.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
