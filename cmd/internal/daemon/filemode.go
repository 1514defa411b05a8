package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weft-run/weft/store/sqlite"
)

// daemonFiles are the entries of the data directory that the daemon
// writes; privateDataDir narrows the modes of these only, since the data
// directory may hold other things of the user's.
var daemonFiles = []string{
	sqlite.FileName, sqlite.FileName + "-wal", sqlite.FileName + "-shm", sqlite.FileName + "-journal",
	AdminTokenFile, AddrFile, CacheDirName, "modules",
}

// privateDataDir makes the daemon's files private before it opens any:
// files created from now on are 0600 and directories 0700 at most
// (privateUmask), and the daemon's files and directories left with wider
// modes, by an earlier version say, are narrowed to those. Symbolic links
// are left alone.
func privateDataDir(dir string) error {
	privateUmask()
	for _, name := range daemonFiles {
		if err := privateTree(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("make the data directory private: %w", err)
		}
	}
	return nil
}

// privateTree narrows the modes under root, which may not exist.
func privateTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == root {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := info.Mode().Perm() &^ 0o077
		if info.IsDir() {
			want |= 0o700
		}
		if want == info.Mode().Perm() {
			return nil
		}
		return os.Chmod(path, want)
	})
}
