package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-run/weft/cmd/internal/daemon"
)

// testkitWasm is weft's stock test plugin, relative to this package.
var testkitWasm = filepath.Join("..", "..", "plugins", "testkit", "testkit.wasm")

// TestMain makes the test binary the compile child of the daemons the load
// comparison runs in this process.
func TestMain(m *testing.M) {
	daemon.CompileChildMain(os.Args[1:])
	os.Exit(m.Run())
}
