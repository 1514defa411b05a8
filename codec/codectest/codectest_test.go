package codectest_test

import (
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	"github.com/weft-run/weft/codec/codectest"
)

// TestManifestCoversEveryFile checks that the manifest lists exactly the
// files of the conformance folder, each with the SHA-256 of its bytes.
func TestManifestCoversEveryFile(t *testing.T) {
	dir := codectest.Dir(t)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel != codectest.ManifestFile {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest := codectest.Manifest(t)
	listed := make([]string, 0, len(manifest))
	for name := range manifest {
		listed = append(listed, name)
	}
	sort.Strings(files)
	sort.Strings(listed)
	if len(files) == 0 || len(files) != len(listed) {
		t.Fatalf("the folder holds %d files %v, the manifest lists %d %v", len(files), files, len(listed), listed)
	}
	for i := range files {
		if files[i] != listed[i] {
			t.Fatalf("the folder holds %q where the manifest lists %q", files[i], listed[i])
		}
		codectest.ReadFile(t, files[i]) // checks the digest
	}
}
