//go:build unix

package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// testkitWasm is the stock test plugin, relative to this package.
var testkitWasm = filepath.Join("..", "..", "..", "plugins", "testkit", "testkit.wasm")

// TestMain makes the test binary its own compile child: the daemons of
// these tests run it as `TEST_BINARY internal compile --job JOB`, as the weft
// binary runs itself.
func TestMain(m *testing.M) {
	CompileChildMain(os.Args[1:])
	os.Exit(m.Run())
}

// testBin is this test binary, the compile child of the tests' daemons.
func testBin(tb testing.TB) string {
	tb.Helper()
	bin, err := os.Executable()
	require.NoError(tb, err)
	return bin
}

// testLogWriter writes the daemon's log through t.Log.
type testLogWriter struct{ tb testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// MustRunMain runs the daemon in this process on dir with the `weft serve`
// arguments args, as `weft serve --data dir --addr 127.0.0.1:0` runs it,
// and returns it once it serves, with an admin client of it and what it
// printed. It is closed when the test ends, if the test has not closed it.
func MustRunMain(tb testing.TB, dir string, args ...string) (*Main, *client.Client, string) {
	tb.Helper()
	cfg, err := ParseFlags(append([]string{"--data", dir, "--addr", "127.0.0.1:0"}, args...))
	require.NoError(tb, err)
	cfg.CompileBin = testBin(tb)
	var stdout bytes.Buffer
	m := New(cfg, &stdout, testLogWriter{tb})
	require.NoError(tb, m.Run(tb.Context()))
	tb.Cleanup(func() { _ = m.Close(context.Background()) })
	token, err := os.ReadFile(filepath.Join(dir, AdminTokenFile))
	require.NoError(tb, err)
	c, err := client.New(client.Config{BaseURL: m.Addr(), Token: strings.TrimSpace(string(token))})
	require.NoError(tb, err)
	return m, c, stdout.String()
}

// mustSubmit starts function of testkit with the JSON input projection
// and on_restart policy.
func mustSubmit(tb testing.TB, c *client.Client, function, input, onRestart string) *client.Task {
	tb.Helper()
	v, err := codec.ParseProjection([]byte(input))
	require.NoError(tb, err)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(tb, err)
	t, err := c.TaskCreate(tb.Context(), &client.TaskRequest{Module: "testkit", Function: function, Input: client.InputOf(env), OnRestart: onRestart})
	require.NoError(tb, err)
	return t
}

// mustWaitStatus polls task id until its status is want.
func mustWaitStatus(tb testing.TB, c *client.Client, id, want string) *client.Task {
	tb.Helper()
	var t *client.Task
	require.Eventually(tb, func() bool {
		var err error
		t, err = c.TaskGet(tb.Context(), id)
		require.NoError(tb, err)
		return t.Status == want
	}, 30*time.Second, 20*time.Millisecond, "task %s never became %s", id, want)
	return t
}

// storedStatus reads the status of task id from a copy of the store on
// dir, as a daemon that is not running left it.
func storedStatus(tb testing.TB, dir, id string) store.Status {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), sqlite.Config{Path: filepath.Join(dir, sqlite.FileName), ReadOnly: true})
	require.NoError(tb, err)
	defer func() { _ = db.Close(context.Background()) }()
	t, err := db.TaskGet(tb.Context(), id)
	require.NoError(tb, err)
	return t.Status
}

// TestMainRunClose runs the daemon in this process as `weft serve` runs it: it
// serves on a free port and holds the data directory's lock, runs a
// deployed module's task over real HTTP, closes gracefully (interrupting
// a call that outlasts the grace), and opens again on the same directory,
// where start-up recovery applies the interrupted task's policy.
func TestMainRunClose(t *testing.T) {
	dir := t.TempDir()
	m, c, stdout := MustRunMain(t, dir, "--shutdown-grace", "0s")
	_, port, err := net.SplitHostPort(m.Addr())
	require.NoError(t, err)
	require.NotEqual(t, "0", port, "port 0 picks a free port")
	require.Equal(t, "weft listening on http://"+m.Addr()+"\n", stdout)
	addr, err := os.ReadFile(filepath.Join(dir, AddrFile))
	require.NoError(t, err)
	require.Equal(t, m.Addr()+"\n", string(addr))

	// The lock is held: a second daemon on the directory fails to open,
	// and its Done is closed.
	cfg, err := ParseFlags([]string{"--data", dir, "--addr", "127.0.0.1:0"})
	require.NoError(t, err)
	second := New(cfg, &bytes.Buffer{}, testLogWriter{t})
	var inUse *DataDirInUseError
	require.ErrorAs(t, second.Run(t.Context()), &inUse)
	<-second.Done()
	require.NoError(t, second.Wait())

	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(t, err)
	_, err = c.ModuleDeploy(t.Context(), "testkit", wasm, nil)
	require.NoError(t, err, "the compile child (this test binary) admits testkit")
	echo := mustSubmit(t, c, "echo", `{"hello":"world"}`, "")
	done := mustWaitStatus(t, c, echo.ID, "completed")
	require.JSONEq(t, `{"hello":"world"}`, string(done.Output))
	long := mustSubmit(t, c, "sleep", `{"ms":60000}`, "fail")
	mustWaitStatus(t, c, long.ID, "running")

	require.NoError(t, m.Close(t.Context()))
	select {
	case <-m.Done():
	default:
		t.Fatal("Done is closed once Close returns and Serve has ended")
	}
	require.NoError(t, m.Wait(), "a closed daemon stopped serving without error")
	require.NoError(t, m.Close(t.Context()), "Close is idempotent")
	_, err = c.TaskGet(t.Context(), echo.ID)
	require.Error(t, err, "the closed daemon no longer listens")
	require.Equal(t, store.Status("running"), storedStatus(t, dir, long.ID), "the interrupted call is left to recovery")

	// The same directory opens again: the lock was released, the module
	// is loaded from its file, and recovery failed the interrupted task by
	// its policy.
	m2, c2, _ := MustRunMain(t, dir)
	got, err := c2.TaskGet(t.Context(), echo.ID)
	require.NoError(t, err)
	require.Equal(t, "completed", got.Status)
	failed := mustWaitStatus(t, c2, long.ID, "failed")
	require.NotNil(t, failed.Error)
	require.Equal(t, "server_restarted", failed.Error.Code)
	again := mustSubmit(t, c2, "echo", `"again"`, "")
	require.JSONEq(t, `"again"`, string(mustWaitStatus(t, c2, again.ID, "completed").Output))
	require.NoError(t, m2.Close(t.Context()))
	require.NoError(t, m2.Wait())
}

// A module the compile child rejects fails the deploy with module_invalid
// and the child's reason, and the daemon goes on.
func TestMainCompileChildRejects(t *testing.T) {
	_, c, _ := MustRunMain(t, t.TempDir(), "--module-max-functions", "1")
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(t, err)
	_, err = c.ModuleDeploy(t.Context(), "testkit", wasm, nil)
	require.True(t, client.IsCode(err, "module_invalid"), "%v", err)
	require.NoError(t, c.Ready(t.Context()))
}

func TestParseFlags(t *testing.T) {
	def := DefaultConfig()
	require.Equal(t, DefaultDataDir, def.DataDir)
	require.Equal(t, DefaultAddr, def.Addr)
	require.Equal(t, "FULL", def.Synchronous)
	require.Equal(t, 10*time.Second, def.Grace)
	require.NoError(t, def.Validate())

	cfg, err := ParseFlags([]string{"--data", "d", "--memory-limit", "128MiB", "--shutdown-grace", "0s"})
	require.NoError(t, err)
	require.Equal(t, "d", cfg.DataDir)
	require.Equal(t, int64(128<<20), cfg.Admission.MemoryLimit)
	require.Zero(t, cfg.Grace)

	for _, bad := range [][]string{{"--log-format", "xml"}, {"--default-retry-attempts", "0"}, {"--compile-workers", "0"}, {"extra"}, {"--no-such-flag"}} {
		_, err := ParseFlags(bad)
		require.Error(t, err, "%v", bad)
	}
}

// readyHost returns the host GET /readyz names.
func readyHost(tb testing.TB, addr string) string {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	var body struct {
		Status string `json:"status"`
		Host   string `json:"host"`
	}
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(tb, "ready", body.Status)
	return body.Host
}

func TestHostID(t *testing.T) {
	m, _, _ := MustRunMain(t, t.TempDir(), "--host-id", "weft-a.eu", "--lease-ttl", "2s")
	require.Equal(t, "weft-a.eu", readyHost(t, m.Addr()))

	m2, _, _ := MustRunMain(t, t.TempDir())
	generated := readyHost(t, m2.Addr())
	require.True(t, store.ValidHost(generated), generated)
	m3, _, _ := MustRunMain(t, t.TempDir())
	require.NotEqual(t, generated, readyHost(t, m3.Addr()), "generated ids differ")
}
