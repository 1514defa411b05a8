//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// The end-to-end tests run the real weft binary, built once per test run
// without the race detector (it is a separate process; the daemon's own
// packages run their tests under -race).
var (
	weftBuildOnce sync.Once
	weftBuildDir  string
	weftBuildPath string
	weftBuildErr  error
)

// testkitWasm is the stock test plugin, relative to this package.
var testkitWasm = filepath.Join("..", "..", "plugins", "testkit", "testkit.wasm")

// wfbenchWasm is the workflow guest of the benchmarks (testdata/wfbench).
var wfbenchWasm = filepath.Join("testdata", "wfbench.wasm")

// Bounds of the end-to-end helpers.
const (
	daemonStartTimeout = 60 * time.Second
	daemonStopTimeout  = 30 * time.Second
	cliTimeout         = 60 * time.Second
)

func TestMain(m *testing.M) {
	code := m.Run()
	if weftBuildDir != "" {
		_ = os.RemoveAll(weftBuildDir)
	}
	os.Exit(code)
}

// MustBuildWeft returns the path of the weft binary built from this package,
// building it on the first call of the test run.
func MustBuildWeft(tb testing.TB) string {
	tb.Helper()
	weftBuildOnce.Do(func() {
		weftBuildDir, weftBuildErr = os.MkdirTemp("", "weft-e2e-")
		if weftBuildErr != nil {
			return
		}
		weftBuildPath = filepath.Join(weftBuildDir, "weft")
		cmd := exec.Command("go", "build", "-o", weftBuildPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			weftBuildErr = fmt.Errorf("go build ./cmd/weft: %w\n%s", err, out)
		}
	})
	require.NoError(tb, weftBuildErr)
	return weftBuildPath
}

// Daemon is a `weft serve` process on a temporary data directory, started by
// MustRunMain. It is driven by one test goroutine.
type Daemon struct {
	tb testing.TB
	// Bin is the weft binary.
	Bin string
	// DataDir is the data directory, kept across restarts.
	DataDir string
	// Addr is the HOST:PORT the current process listens on.
	Addr string
	// Token is the admin token from DataDir/admin.token.
	Token string
	// Args are extra arguments of `weft serve`.
	Args []string
	// Client is an API client of the current process with the admin
	// token.
	Client *client.Client

	logDir string
	starts int
	cmd    *exec.Cmd
	done   chan struct{}
	exit   error
	http   *http.Client
}

// MustRunMain starts `weft serve --data DIR --addr 127.0.0.1:0` on a fresh
// temporary data directory, with extra serve arguments args, and waits until
// it listens. The process is killed when the test ends.
//
// Unless args name a --cache, the daemons of a test run share one
// compilation cache, so that each module is compiled (and its compile
// child run) once per run rather than once per daemon.
func MustRunMain(tb testing.TB, args ...string) *Daemon {
	tb.Helper()
	d := newDaemon(tb, args...)
	d.start()
	return d
}

// newDaemon is MustRunMain's daemon before its first start.
func newDaemon(tb testing.TB, args ...string) *Daemon {
	tb.Helper()
	bin := MustBuildWeft(tb)
	if !slices.Contains(args, "--cache") {
		args = append([]string{"--cache", filepath.Join(weftBuildDir, "cache")}, args...)
	}
	d := &Daemon{
		tb:      tb,
		Bin:     bin,
		DataDir: tb.TempDir(),
		Args:    args,
		logDir:  tb.TempDir(),
		http:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	tb.Cleanup(func() {
		if d.running() {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if tb.Failed() {
			d.dumpLogs()
		}
	})
	return d
}

// MustRunMainOwnCache is MustRunMain with the daemon's own compilation
// cache, DATA/cache, for the tests that look inside it.
func MustRunMainOwnCache(tb testing.TB, args ...string) *Daemon {
	tb.Helper()
	return MustRunMain(tb, append([]string{"--cache", ""}, args...)...)
}

// start runs a new daemon process on d.DataDir and waits for its address.
func (d *Daemon) start() {
	d.tb.Helper()
	require.False(d.tb, d.running(), "daemon already running")
	d.starts++
	logFile, err := os.Create(filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", d.starts)))
	require.NoError(d.tb, err)
	out := newAddrWatcher()
	args := append([]string{"serve", "--data", d.DataDir, "--addr", "127.0.0.1:0"}, d.Args...)
	cmd := exec.Command(d.Bin, args...)
	cmd.Stdout = out
	cmd.Stderr = logFile
	require.NoError(d.tb, cmd.Start())
	d.cmd, d.done, d.exit = cmd, make(chan struct{}), nil
	go func() {
		d.exit = cmd.Wait()
		_ = logFile.Close()
		close(d.done)
	}()
	select {
	case addr := <-out.ready:
		d.Addr = addr
	case <-d.done:
		d.tb.Fatalf("weft serve exited before listening: %v\n%s", d.exit, d.logTail(40))
	case <-time.After(daemonStartTimeout):
		d.tb.Fatalf("weft serve did not listen within %s\n%s", daemonStartTimeout, d.logTail(40))
	}
	fileAddr, err := os.ReadFile(filepath.Join(d.DataDir, daemon.AddrFile))
	require.NoError(d.tb, err)
	require.Equal(d.tb, d.Addr, strings.TrimSpace(string(fileAddr)), "weft.addr matches the printed address")
	token, err := os.ReadFile(filepath.Join(d.DataDir, adminTokenFile))
	require.NoError(d.tb, err)
	d.Token = strings.TrimSpace(string(token))
	require.NotEmpty(d.tb, d.Token)
	d.Client, err = client.New(client.Config{BaseURL: d.Addr, Token: d.Token, HTTPClient: d.http})
	require.NoError(d.tb, err)
}

func (d *Daemon) running() bool {
	if d.done == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to exit. It returns how long
// the exit took and the process's exit error (nil for status 0).
func (d *Daemon) Stop() (time.Duration, error) {
	d.tb.Helper()
	require.True(d.tb, d.running(), "daemon not running")
	start := time.Now()
	require.NoError(d.tb, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(daemonStopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.tb.Fatalf("weft serve still running %s after SIGTERM", daemonStopTimeout)
	}
	return time.Since(start), d.exit
}

// Kill sends SIGKILL and waits until the process is gone.
func (d *Daemon) Kill() {
	d.tb.Helper()
	require.True(d.tb, d.running(), "daemon not running")
	require.NoError(d.tb, d.cmd.Process.Kill())
	<-d.done
}

// Restart starts the daemon again on the same data directory; the previous
// process must have stopped (Stop or Kill).
func (d *Daemon) Restart() {
	d.tb.Helper()
	d.start()
}

// URL returns the daemon's URL of path.
func (d *Daemon) URL(path string) string { return "http://" + d.Addr + path }

// Do sends a JSON request with the admin token (body nil: none; []byte:
// sent as is) and decodes a JSON answer into out when out is non-nil. It
// returns the status code.
func (d *Daemon) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	return d.DoToken(ctx, d.Token, method, path, body, out)
}

// DoToken is Do with another bearer token.
func (d *Daemon) DoToken(ctx context.Context, token, method, path string, body, out any) (int, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL(path), rd)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s: %w: %s", method, path, err, data)
		}
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

// MustDo is Do that fails the test on any error or non-2xx status.
func (d *Daemon) MustDo(method, path string, body, out any) int {
	d.tb.Helper()
	code, err := d.Do(d.tb.Context(), method, path, body, out)
	require.NoError(d.tb, err)
	return code
}

// MustDeployTestkit deploys the testkit plugin over HTTP.
func (d *Daemon) MustDeployTestkit() {
	d.tb.Helper()
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(d.tb, err)
	require.Equal(d.tb, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/testkit", wasm, nil))
}

// MustSubmit starts function of testkit with the JSON input projection and
// on_restart policy, and returns the 202 task.
func (d *Daemon) MustSubmit(function, input, onRestart string) client.Task {
	d.tb.Helper()
	v, err := codec.ParseProjection([]byte(input))
	require.NoError(d.tb, err)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(d.tb, err)
	t, err := d.Client.TaskCreate(d.tb.Context(), &client.TaskRequest{Module: "testkit", Function: function, Input: client.InputOf(env), OnRestart: onRestart})
	require.NoError(d.tb, err)
	require.True(d.tb, justCreated(t.Status), "status of a new task: %s", t.Status)
	return *t
}

// justCreated reports whether status is one a 202 may show: queued, or
// running when an idle worker started the task in its creating
// transaction.
func justCreated(status string) bool { return status == "queued" || status == "running" }

// taskRequest is the body of POST /v1/tasks for testkit's function.
func taskRequest(tb testing.TB, function, input, onRestart string) map[string]any {
	tb.Helper()
	v, err := codec.ParseProjection([]byte(input))
	require.NoError(tb, err)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(tb, err)
	req := map[string]any{"module": "testkit", "function": function, "input": env}
	if onRestart != "" {
		req["on_restart"] = onRestart
	}
	return req
}

// MustTask returns the task id.
func (d *Daemon) MustTask(id string) client.Task {
	d.tb.Helper()
	t, err := d.Client.TaskGet(d.tb.Context(), id)
	require.NoError(d.tb, err)
	return *t
}

// MustEvents returns the whole event log of task id, page by page.
func (d *Daemon) MustEvents(id string) []client.Event {
	d.tb.Helper()
	var all []client.Event
	for {
		from := int64(0)
		if len(all) > 0 {
			from = all[len(all)-1].SequenceNumber + 1
		}
		page, err := d.Client.EventList(d.tb.Context(), id, client.EventListParams{From: from, Limit: 1000})
		require.NoError(d.tb, err)
		all = append(all, page.Data...)
		if !page.HasMore || len(page.Data) == 0 {
			return all
		}
	}
}

// MustListTasks returns every task (admin sees all), following cursors.
func (d *Daemon) MustListTasks(status string) []client.Task {
	d.tb.Helper()
	var all []client.Task
	cursor := ""
	for {
		page, err := d.Client.TaskList(d.tb.Context(), &client.TaskListParams{Status: status, Cursor: cursor, Limit: 1000, Payloads: true})
		require.NoError(d.tb, err)
		all = append(all, page.Data...)
		if !page.HasMore {
			return all
		}
		require.NotEmpty(d.tb, page.NextCursor, "has_more without next_cursor")
		cursor = page.NextCursor
	}
}

// MustWaitStatus polls task id until its status is one of want, or fails
// after timeout.
func (d *Daemon) MustWaitStatus(id string, timeout time.Duration, want ...string) client.Task {
	d.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		t := d.MustTask(id)
		for _, w := range want {
			if t.Status == w {
				return t
			}
		}
		if time.Now().After(deadline) {
			d.tb.Fatalf("task %s is %s after %s, want one of %v", id, t.Status, timeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cliResult is the outcome of one CLI invocation.
type cliResult struct {
	Code   int
	Stdout string
	Stderr string
}

// CLI runs the weft binary with args against the daemon (WEFT_ADDR and
// WEFT_DATA set, WEFT_TOKEN unset) and returns its exit status and output.
func (d *Daemon) CLI(args ...string) cliResult {
	d.tb.Helper()
	return d.CLIStdin("", args...)
}

// CLIStdin is CLI with stdin.
func (d *Daemon) CLIStdin(stdin string, args ...string) cliResult {
	d.tb.Helper()
	ctx, cancel := context.WithTimeout(d.tb.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Bin, args...)
	env := []string{"WEFT_ADDR=" + d.Addr, "WEFT_DATA=" + d.DataDir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WEFT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		res.Code = ee.ExitCode()
	default:
		d.tb.Fatalf("weft %s: %v (stderr %q)", strings.Join(args, " "), err, stderr.String())
	}
	return res
}

// MustCLI runs the CLI and requires exit status 0; it returns stdout.
func (d *Daemon) MustCLI(args ...string) string {
	d.tb.Helper()
	res := d.CLI(args...)
	require.Equal(d.tb, 0, res.Code, "weft %s: stderr %q", strings.Join(args, " "), res.Stderr)
	return res.Stdout
}

// logTail returns the last n lines of the current process's log.
func (d *Daemon) logTail(n int) string {
	data, err := os.ReadFile(filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", d.starts)))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// dumpLogs writes the tail of every process's log to the test log.
func (d *Daemon) dumpLogs() {
	for i := 1; i <= d.starts; i++ {
		data, err := os.ReadFile(filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", i)))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		d.tb.Logf("daemon start %d, last log lines:\n%s", i, strings.Join(lines, "\n"))
	}
}

// addrWatcher is a daemon's stdout: it finds the "weft listening on" line
// that serve prints and sends the address once.
type addrWatcher struct {
	mu    sync.Mutex
	buf   []byte
	sent  bool
	ready chan string
}

func newAddrWatcher() *addrWatcher { return &addrWatcher{ready: make(chan string, 1)} }

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if addr, ok := strings.CutPrefix(line, "weft listening on http://"); ok {
			w.sent = true
			w.buf = nil
			w.ready <- addr
			return len(p), nil
		}
	}
}
