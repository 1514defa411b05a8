package host_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// cBuilds are the committed C guests with the commands that build them:
// scripts/build-wasm-c.sh for the testkit, examples/hello-c/README.md for
// the example, each run in dir (relative to this package).
var cBuilds = []struct {
	name, dir, wasm string
	args            []string
}{
	{
		name: "testkit-c", dir: "..", wasm: testkitCPath,
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "plugins/testkit-c/testkit.c", "sdk-wasm/c/weft.c",
		},
	},
	{
		name: "hello-c", dir: "../examples/hello-c", wasm: helloCPath,
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-I", "../../sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "hello.c", "../../sdk-wasm/c/weft.c",
		},
	},
	{
		name: "deploy-pipeline-c", dir: "..", wasm: "../examples/deploy-pipeline/c/pipeline.wasm",
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "examples/deploy-pipeline/c/pipeline.c", "sdk-wasm/c/weft.c",
		},
	},
	{
		name: "wfbench-c", dir: "..", wasm: "../cmd/weft/testdata/wfbench-c.wasm",
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "cmd/weft/testdata/wfbench-c/wfbench.c", "sdk-wasm/c/weft.c",
		},
	},
}

// TestCBuildsAreUpToDate rebuilds each committed C guest with its
// documented command and requires the committed file to be the same bytes
// (the build is reproducible). It skips when no clang here builds for
// wasm32-wasi: make test needs only Go, and make wasm-c installs clang.
func TestCBuildsAreUpToDate(t *testing.T) {
	t.Parallel()
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("no clang: make wasm-c installs the C toolchain")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.c")
	require.NoError(t, os.WriteFile(probe, []byte("#include <stdlib.h>\nvoid *f(void) { return malloc(1); }\n"), 0o600))
	if out, err := exec.Command(clang, "--target=wasm32-wasi", "-c", "-o", filepath.Join(dir, "probe.o"), probe).CombinedOutput(); err != nil {
		t.Skipf("clang cannot build for wasm32-wasi (make wasm-c installs wasi-libc): %s", out)
	}
	for _, b := range cBuilds {
		t.Run(b.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), b.name+".wasm")
			cmd := exec.Command(clang, append(b.args, "-o", out)...)
			cmd.Dir = b.dir
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, string(msg))
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, MustReadWasm(t, b.wasm)), "%s is stale: rebuild it with make wasm-c", b.wasm)
		})
	}
}

// TestCHelloExample follows examples/hello-c/README.md from its deploy
// step: the committed hello.wasm deployed to a host and called. It greets
// like examples/hello-go.
func TestCHelloExample(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	info, err := h.Compile(t.Context(), MustReadWasm(t, helloCPath))
	require.NoError(t, err)
	require.Equal(t, []host.Function{{Name: "hello", Kind: abi.KindActivity}}, info.Functions)
	tests := []struct {
		name     string
		input    string // the typed JSON projection of the input
		greeting string // the expected greeting, or "" for an error
		errType  string
		log      string
	}{
		{name: "Greets", input: `{"name":"Ada"}`, greeting: "hello, Ada!", log: "greeting name=Ada"},
		{name: "TrimsSpaces", input: `{"name":"  Ada Lovelace\n"}`, greeting: "hello, Ada Lovelace!", log: "greeting name=Ada Lovelace"},
		{name: "KeepsUTF8", input: `{"name":"Grace ✓"}`, greeting: "hello, Grace ✓!", log: "greeting name=Grace ✓"},
		{name: "EmptyName", input: `{"name":" "}`, errType: "invalid_name"},
		{name: "NoName", input: `{}`, errType: "invalid_name"},
		{name: "NameNotAString", input: `{"name":5}`, errType: "weft.invalid_input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := codec.ParseProjection([]byte(tc.input))
			require.NoError(t, err)
			var logs []host.LogEntry
			res, err := h.Call(t.Context(), &host.CallRequest{
				Digest: info.Digest, Function: "hello", Input: MustFrame(t, in),
				Log: func(e host.LogEntry) { logs = append(logs, e) },
			})
			require.NoError(t, err)
			if tc.errType != "" {
				require.Equal(t, abi.StatusError, res.Status)
				require.Equal(t, tc.errType, res.Error.Type)
				require.True(t, res.Error.NonRetryable)
				require.Empty(t, logs)
				return
			}
			require.Equal(t, abi.StatusOK, res.Status, "error: %v", res.Error)
			require.Equal(t, MustFrame(t, obj("greeting", tc.greeting)), res.Output)
			require.Equal(t, []host.LogEntry{{Level: abi.LevelInfo, Source: host.SourceLog, Message: tc.log}}, logs)
		})
	}
}
