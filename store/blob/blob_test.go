package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store/blob"
)

func mustNew(tb testing.TB) (*blob.Store, string) {
	tb.Helper()
	dir := tb.TempDir()
	s, err := blob.New(blob.Config{Dir: dir})
	require.NoError(tb, err)
	return s, dir
}

func TestStore(t *testing.T) {
	t.Run("PutGet", func(t *testing.T) {
		s, dir := mustNew(t)
		ctx := t.Context()
		data := []byte("\x00asm\x01\x00\x00\x00 a module")
		digest, err := s.Put(ctx, data)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), digest)
		require.Equal(t, digest, blob.Digest(data))

		path := filepath.Join(dir, "sha256", hex.EncodeToString(sum[:]))
		onDisk, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, data, onDisk)
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		got, err := s.Path(digest)
		require.NoError(t, err)
		require.Equal(t, path, got)

		back, err := s.Get(ctx, digest)
		require.NoError(t, err)
		require.Equal(t, data, back)
		ok, err := s.Has(digest)
		require.NoError(t, err)
		require.True(t, ok)

		again, err := s.Put(ctx, data)
		require.NoError(t, err)
		require.Equal(t, digest, again)
		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temporary file is left")
	})

	t.Run("PutReader", func(t *testing.T) {
		s, _ := mustNew(t)
		data := bytes.Repeat([]byte("0123456789"), 200_000) // 2 MB, streamed
		digest, size, err := s.PutReader(t.Context(), bytes.NewReader(data))
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), size)
		require.Equal(t, blob.Digest(data), digest)
		back, err := s.Get(t.Context(), digest)
		require.NoError(t, err)
		require.Equal(t, data, back)
	})

	t.Run("DigestMismatch", func(t *testing.T) {
		tests := []struct {
			name   string
			damage func(t *testing.T, path string)
		}{
			{"FlippedByte", func(t *testing.T, path string) {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				b[3] ^= 0xff
				require.NoError(t, os.WriteFile(path, b, 0o600))
			}},
			{"Truncated", func(t *testing.T, path string) {
				require.NoError(t, os.Truncate(path, 5))
			}},
			{"Empty", func(t *testing.T, path string) {
				require.NoError(t, os.Truncate(path, 0))
			}},
			{"OtherModule", func(t *testing.T, path string) {
				require.NoError(t, os.WriteFile(path, []byte("another module"), 0o600))
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s, _ := mustNew(t)
				ctx := t.Context()
				data := []byte("the real module bytes")
				digest, err := s.Put(ctx, data)
				require.NoError(t, err)
				path, err := s.Path(digest)
				require.NoError(t, err)
				tc.damage(t, path)

				_, err = s.Get(ctx, digest)
				require.ErrorIs(t, err, blob.ErrDigestMismatch)
				require.ErrorContains(t, err, path)

				// Storing the right bytes again repairs the file.
				_, err = s.Put(ctx, data)
				require.NoError(t, err)
				back, err := s.Get(ctx, digest)
				require.NoError(t, err)
				require.Equal(t, data, back)
			})
		}
	})

	t.Run("BadDigests", func(t *testing.T) {
		s, _ := mustNew(t)
		tests := []struct {
			name   string
			digest string
		}{
			{"empty", ""},
			{"no prefix", strings.Repeat("a", 64)},
			{"other algorithm", "sha512:" + strings.Repeat("a", 64)},
			{"short", "sha256:abc"},
			{"upper case", "sha256:" + strings.Repeat("A", 64)},
			{"path traversal", "sha256:../../../../etc/passwd" + strings.Repeat("a", 36)},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Get(t.Context(), tc.digest)
				require.ErrorIs(t, err, blob.ErrInvalidDigest)
				_, err = s.Has(tc.digest)
				require.ErrorIs(t, err, blob.ErrInvalidDigest)
				require.ErrorIs(t, s.Delete(t.Context(), tc.digest), blob.ErrInvalidDigest)
			})
		}
	})

	t.Run("NotFoundAndDelete", func(t *testing.T) {
		s, _ := mustNew(t)
		ctx := t.Context()
		missing := blob.Digest([]byte("never stored"))
		_, err := s.Get(ctx, missing)
		require.ErrorIs(t, err, blob.ErrNotFound)
		ok, err := s.Has(missing)
		require.NoError(t, err)
		require.False(t, ok)

		digest, err := s.Put(ctx, []byte("m"))
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, digest))
		_, err = s.Get(ctx, digest)
		require.ErrorIs(t, err, blob.ErrNotFound)
		require.ErrorIs(t, s.Delete(ctx, digest), blob.ErrNotFound)
	})

	t.Run("CancelledWriteLeavesNothing", func(t *testing.T) {
		s, dir := mustNew(t)
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelAfter{r: bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), n: 3, cancel: cancel}
		_, _, err := s.PutReader(ctx, r)
		require.ErrorIs(t, err, context.Canceled)
		entries, err := os.ReadDir(filepath.Join(dir, "sha256"))
		require.NoError(t, err)
		require.Empty(t, entries)
	})

	t.Run("LeftoverTempFiles", func(t *testing.T) {
		dir := t.TempDir()
		files := filepath.Join(dir, "sha256")
		require.NoError(t, os.MkdirAll(files, 0o700))
		old := filepath.Join(files, ".tmp-0001")
		fresh := filepath.Join(files, ".tmp-0002")
		require.NoError(t, os.WriteFile(old, []byte("half"), 0o600))
		require.NoError(t, os.WriteFile(fresh, []byte("being written"), 0o600))
		past := time.Now().Add(-2 * time.Hour)
		require.NoError(t, os.Chtimes(old, past, past))
		_, err := blob.New(blob.Config{Dir: dir})
		require.NoError(t, err)
		_, err = os.Stat(old)
		require.ErrorIs(t, err, os.ErrNotExist, "a crash's leftover is removed")
		_, err = os.Stat(fresh)
		require.NoError(t, err, "a file another process may be writing stays")
	})

	t.Run("NoDir", func(t *testing.T) {
		_, err := blob.New(blob.Config{})
		require.Error(t, err)
	})
}

// cancelAfter cancels its context after n reads.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	c.n--
	if c.n == 0 {
		c.cancel()
	}
	return c.r.Read(p[:min(len(p), 1024)])
}
