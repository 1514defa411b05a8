// Package atomicfile writes files that a crash leaves whole or absent: the
// content goes to a temporary file in the target's directory, is fsynced,
// renamed over the target, and the directory is fsynced so the rename
// lasts. It lives with the store, whose files it writes (module files), and
// imports the standard library only, so that the engine may use it too for
// the files it writes itself (the admin token).
package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write creates a temporary file in dir named after pattern (as
// os.CreateTemp does), with permissions perm, and lets fill write the
// content and name the path it is renamed to, which must be in dir. Once
// the file is fsynced and renamed, dir is fsynced. On any error the
// temporary file is removed and the path fill named is left as it was.
func Write(dir, pattern string, perm fs.FileMode, fill func(w io.Writer) (path string, err error)) error {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			_ = f.Close() // a no-op once closed; the error returned is the one that matters
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	path, err := fill(f)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	return SyncDir(dir)
}

// WriteFile writes data to path with permissions perm through Write, with
// a temporary file named after path's base name.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	return Write(dir, "."+base+".*", perm, func(w io.Writer) (string, error) {
		_, err := w.Write(data)
		return path, err
	})
}

// SyncDir fsyncs directory dir, making a rename or removal in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // read-only: Sync reports what matters
	return d.Sync()
}
