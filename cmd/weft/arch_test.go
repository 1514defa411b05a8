package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/weft-run/weft"

// listDeps returns, for every package of the module matched by patterns, its
// transitive imports, as listed by `go list` for the given GOOS/GOARCH.
func listDeps(t *testing.T, goos, goarch string, patterns ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch)
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		deps[fields[0]] = fields[1:]
	}
	return deps
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, modulePath), "/")
}

// under reports whether path is the module's package dir or one below it.
func under(path, dir string) bool {
	if path != modulePath && !strings.HasPrefix(path, modulePath+"/") {
		return false
	}
	r := rel(path)
	return r == dir || strings.HasPrefix(r, dir+"/")
}

// wires reports whether path is a concrete implementation that only the
// commands wire in: the wasm host, the SQLite store, the module files.
func wires(path string) bool {
	return under(path, "host") || under(path, "store/sqlite") || under(path, "store/blob")
}

// TestDependencyDirection enforces the import arrows of the layout: leaves stay
// leaves, the engine (and its end-to-end suite, runtime/enginetest) never
// reaches for an adapter, access and the engine never import each other, the
// journal and the module registry never import the engine, the API client reaches for nothing but the codec, only the commands (cmd/weft,
// cmd/internal/...) wire concrete implementations, the backends' shared
// helpers (store/internal/...) import nothing of the module but the store
// contract, and guest code never imports host-side packages.
func TestDependencyDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the whole module")
	}
	host := listDeps(t, "linux", "amd64", "./...")
	guest := listDeps(t, "wasip1", "wasm", "./codec", "./sdk-wasm/...", "./plugins/...", "./examples/...")
	require.Contains(t, host, modulePath+"/codec", "go list found the module's packages")
	require.Contains(t, guest, modulePath+"/codec", "go list found the guest packages")

	forbid := func(pkg string, deps []string, why string, bad func(dep string) bool) {
		for _, d := range deps {
			if bad(d) {
				t.Errorf("%s imports %s: %s", rel(pkg), d, why)
			}
		}
	}
	for pkg, deps := range host {
		if !under(pkg, "cmd") && !wires(pkg) {
			forbid(pkg, deps, "only cmd/weft and cmd/internal/... wire concrete implementations", func(d string) bool {
				return wires(d) || under(d, "cmd")
			})
		}
		switch {
		case under(pkg, "runtime/httpapi/client"):
			forbid(pkg, deps, "the API client imports the standard library and codec only (no engine, host or store)", func(d string) bool {
				return !isStd(d) && rel(d) != "codec" && !under(d, "runtime/httpapi/client")
			})
		case rel(pkg) == "codec" || under(pkg, "sdk-wasm/abi") || rel(pkg) == "store/atomicfile":
			forbid(pkg, deps, "a leaf imports the standard library only", func(d string) bool { return !isStd(d) })
		case rel(pkg) == "store":
			forbid(pkg, deps, "the store contract imports nothing of the module", func(d string) bool { return strings.HasPrefix(d, modulePath) })
		case under(pkg, "store/internal"):
			forbid(pkg, deps, "the backends' shared helpers import nothing of the module but the store contract", func(d string) bool {
				return strings.HasPrefix(d, modulePath) && rel(d) != "store"
			})
		case rel(pkg) == "runtime/fault":
			forbid(pkg, deps, "the error codes import codec and the store contract only", func(d string) bool {
				return strings.HasPrefix(d, modulePath) && rel(d) != "codec" && rel(d) != "store"
			})
		case under(pkg, "runtime"):
			forbid(pkg, deps, "runtime never imports an adapter", func(d string) bool {
				return under(d, "host") || under(d, "store/sqlite") || under(d, "store/postgres") ||
					strings.HasPrefix(d, "github.com/tetratelabs/wazero")
			})
			if !under(pkg, "runtime/httpapi") {
				forbid(pkg, deps, "the engine never imports chi, database/sql or pgx", func(d string) bool {
					return strings.HasPrefix(d, "github.com/go-chi/") || d == "database/sql" || strings.HasPrefix(d, "github.com/jackc/pgx/")
				})
			}
			if under(pkg, "runtime/access") {
				forbid(pkg, deps, "access never imports runtime; they meet in runtime/httpapi and cmd/weft", func(d string) bool {
					return d == modulePath+"/runtime"
				})
			} else if !under(pkg, "runtime/httpapi") && !under(pkg, "runtime/enginetest") {
				forbid(pkg, deps, "the engine never imports access; the HTTP layer checks scopes", func(d string) bool {
					return under(d, "runtime/access")
				})
			}
			if under(pkg, "runtime/modules") {
				forbid(pkg, deps, "the module registry never imports the engine or the HTTP layer; the engine holds a registry", func(d string) bool {
					return d == modulePath+"/runtime" || under(d, "runtime/httpapi")
				})
			}
			if under(pkg, "runtime/journal") {
				forbid(pkg, deps, "the journal never imports the engine; the engine uses the journal", func(d string) bool {
					return d == modulePath+"/runtime" || under(d, "runtime/httpapi")
				})
			}
		case under(pkg, "host"):
			forbid(pkg, deps, "host never imports runtime or store", func(d string) bool {
				return under(d, "runtime") || under(d, "store")
			})
		}
		if rel(pkg) == "runtime/enginetest" {
			forbid(pkg, deps, "the engine suite gets the store, module files and executor from its harness", func(d string) bool {
				return under(d, "host") || under(d, "cmd") || under(d, "runtime/httpapi") ||
					(under(d, "store") && rel(d) != "store" && rel(d) != "store/atomicfile") ||
					strings.HasPrefix(d, "github.com/tetratelabs/wazero")
			})
		}
	}
	for pkg, deps := range guest {
		forbid(pkg, deps, "guest code never imports host-side packages", func(d string) bool {
			return under(d, "host") || under(d, "runtime") || under(d, "store") || under(d, "cmd") ||
				strings.HasPrefix(d, "github.com/tetratelabs/wazero") || strings.HasPrefix(d, "github.com/hamba/avro")
		})
		if rel(pkg) == "codec" || under(pkg, "sdk-wasm/abi") {
			forbid(pkg, deps, "a leaf imports the standard library only", func(d string) bool { return !isStd(d) })
		}
	}
}
