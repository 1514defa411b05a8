package host_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// goBuilds are the committed Go guests and the packages they are built
// from (scripts/build-wasm.sh, make wasm).
var goBuilds = []struct {
	name, wasm, pkg string
}{
	{name: "testkit", wasm: testkitPath, pkg: "./plugins/testkit"},
	{name: "hostile", wasm: hostilePath, pkg: "./host/testdata/hostile"},
	{name: "wfkit", wasm: wfkitPath, pkg: "./host/testdata/wfkit"},
	{name: "hello-go", wasm: "../examples/hello-go/hello.wasm", pkg: "./examples/hello-go"},
	{name: "deploy-pipeline-go", wasm: "../examples/deploy-pipeline/go/pipeline.wasm", pkg: "./examples/deploy-pipeline/go"},
	{name: "wfbench", wasm: "../cmd/weft/testdata/wfbench.wasm", pkg: "./cmd/weft/testdata/wfbench"},
	{name: "wftimeouts", wasm: "../cmd/weft/testdata/wftimeouts.wasm", pkg: "./cmd/weft/testdata/wftimeouts"},
}

// TestGoBuildsAreUpToDate rebuilds every committed Go guest with the
// command of scripts/build-wasm.sh and requires the same bytes, so a change
// to the SDK, the codec or a guest cannot leave a stale .wasm behind. Go
// builds are reproducible for one Go version; a guest committed by another
// version is skipped.
func TestGoBuildsAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every Go guest")
	}
	t.Parallel()
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			committed := MustReadWasm(t, b.wasm)
			if !bytes.Contains(committed, []byte(runtime.Version())) {
				t.Skipf("%s was built by another Go version than %s", b.wasm, runtime.Version())
			}
			out := filepath.Join(t.TempDir(), b.name+".wasm")
			cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, b.pkg)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, string(msg))
			built, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Equal(built, committed), "%s is stale: rebuild it with make wasm", b.wasm)
		})
	}
}
