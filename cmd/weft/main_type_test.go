//go:build unix

package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// testLogWriter writes the daemon's log through t.Log.
type testLogWriter struct{ tb testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// MustRunMainInProcess runs the daemon in this process on dir with the
// `weft serve` arguments args, as `weft serve --data dir --addr
// 127.0.0.1:0` runs it, and returns it once it serves, with a Daemon that
// speaks to it over HTTP. Compile children run the weft binary, and the
// daemon shares the test run's compilation cache. It is closed when the
// test ends, if the test has not closed it.
func MustRunMainInProcess(tb testing.TB, dir string, args ...string) (*Main, *Daemon, string) {
	tb.Helper()
	bin := MustBuildWeft(tb)
	args = append([]string{"--data", dir, "--addr", "127.0.0.1:0", "--cache", filepath.Join(weftBuildDir, "cache")}, args...)
	cfg, err := parseServeFlags(args)
	require.NoError(tb, err)
	var stdout bytes.Buffer
	m := NewMain(cfg, &stdout, testLogWriter{tb})
	m.compileBin = bin
	require.NoError(tb, m.Run(tb.Context()))
	tb.Cleanup(func() { _ = m.Close(context.Background()) })

	token, err := os.ReadFile(filepath.Join(dir, adminTokenFile))
	require.NoError(tb, err)
	d := &Daemon{
		tb:      tb,
		Bin:     bin,
		DataDir: dir,
		Addr:    m.Addr(),
		Token:   strings.TrimSpace(string(token)),
		http:    &http.Client{Transport: &http.Transport{}},
	}
	d.Client, err = client.New(client.Config{BaseURL: d.Addr, Token: d.Token, HTTPClient: d.http})
	require.NoError(tb, err)
	return m, d, stdout.String()
}

// TestMainType runs the daemon in this process as `weft serve` runs it:
// it serves on a free port and holds the data directory's lock, runs a
// deployed module's task over real HTTP, closes gracefully (interrupting
// a call that outlasts the grace), and opens again on the same directory,
// where start-up recovery applies the interrupted task's policy.
func TestMainType(t *testing.T) {
	dir := t.TempDir()
	m, d, stdout := MustRunMainInProcess(t, dir, "--shutdown-grace", "0s")
	_, port, err := net.SplitHostPort(m.Addr())
	require.NoError(t, err)
	require.NotEqual(t, "0", port, "port 0 picks a free port")
	require.Equal(t, "weft listening on http://"+m.Addr()+"\n", stdout)
	addr, err := os.ReadFile(filepath.Join(dir, addrFile))
	require.NoError(t, err)
	require.Equal(t, m.Addr()+"\n", string(addr))

	// The lock is held: a second daemon on the directory fails to open,
	// and its Done is closed.
	cfg, err := parseServeFlags([]string{"--data", dir, "--addr", "127.0.0.1:0"})
	require.NoError(t, err)
	second := NewMain(cfg, &bytes.Buffer{}, testLogWriter{t})
	var inUse *errDataDirInUse
	require.ErrorAs(t, second.Run(t.Context()), &inUse)
	<-second.Done()
	require.NoError(t, second.Wait())

	d.MustDeployTestkit()
	echo := d.MustSubmit("echo", `{"hello":"world"}`, "")
	done := d.MustWaitStatus(echo.ID, 30*time.Second, "completed")
	require.JSONEq(t, `{"hello":"world"}`, string(done.Output))
	long := d.MustSubmit("sleep", `{"ms":60000}`, "fail")
	d.MustWaitStatus(long.ID, 30*time.Second, "running")

	require.NoError(t, m.Close(t.Context()))
	select {
	case <-m.Done():
	default:
		t.Fatal("Done is closed once Close returns and Serve has ended")
	}
	require.NoError(t, m.Wait(), "a closed daemon stopped serving without error")
	require.NoError(t, m.Close(t.Context()), "Close is idempotent")
	_, err = d.Do(t.Context(), http.MethodGet, "/v1/tasks/"+echo.ID, nil, nil)
	require.Error(t, err, "the closed daemon no longer listens")
	atStop := MustReadStore(t, dir)
	require.Equal(t, "running", string(atStop[long.ID].Status), "the interrupted call is left to recovery")

	// The same directory opens again: the lock was released, the module
	// is loaded from its file, and recovery failed the interrupted task by
	// its policy.
	m2, d2, _ := MustRunMainInProcess(t, dir)
	require.NotEmpty(t, m2.Addr())
	require.Equal(t, "completed", d2.MustTask(echo.ID).Status)
	failed := d2.MustWaitStatus(long.ID, 30*time.Second, "failed")
	require.NotNil(t, failed.Error)
	require.Equal(t, "server_restarted", failed.Error.Code)
	again := d2.MustSubmit("echo", `"again"`, "")
	require.JSONEq(t, `"again"`, string(d2.MustWaitStatus(again.ID, 30*time.Second, "completed").Output))
	require.NoError(t, m2.Close(t.Context()))
	require.NoError(t, m2.Wait())
}
