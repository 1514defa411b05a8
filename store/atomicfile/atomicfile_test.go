package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store/atomicfile"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	require.NoError(t, atomicfile.WriteFile(path, []byte("one\n"), 0o600))
	require.NoError(t, atomicfile.WriteFile(path, []byte("two\n"), 0o640))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
}

func TestWriteFailureLeavesTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(path, []byte("kept"), 0o600))
	boom := errors.New("boom")
	err := atomicfile.Write(dir, ".tmp-*", 0o600, func(w io.Writer) (string, error) {
		_, _ = w.Write([]byte("partial"))
		return path, boom
	})
	require.ErrorIs(t, err, boom)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "kept", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is removed")

	err = atomicfile.Write(dir, ".tmp-*", 0o600, func(io.Writer) (string, error) {
		return filepath.Join(dir, "missing", "file"), nil
	})
	require.Error(t, err, "a rename into a missing directory fails")
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is removed after a failed rename")
}
