package host_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// Committed guests. Rebuild them with `make wasm`; each file's build command
// is in the doc comment of its source.
const (
	testkitPath = "../plugins/testkit/testkit.wasm" // plugins/testkit/main.go
	hostilePath = "testdata/hostile.wasm"           // testdata/hostile/main.go
	wfkitPath   = "testdata/wfkit.wasm"             // testdata/wfkit/main.go
)

var wasmFiles sync.Map

// MustReadWasm returns the bytes of a committed guest.
func MustReadWasm(tb testing.TB, path string) []byte {
	tb.Helper()
	if b, ok := wasmFiles.Load(path); ok {
		return b.([]byte)
	}
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	wasmFiles.Store(path, b)
	return b
}

// testLogger writes hclog output through tb.Log.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: tbWriter{tb}})
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// cacheDir is a compilation cache shared by the tests of this package, so
// each committed guest is compiled once per run, not once per Host.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-host-test-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// MustNewHost returns a Host closed at the end of the test. Without a
// CacheDir it uses the package's shared compilation cache.
func MustNewHost(tb testing.TB, cfg host.Config) *host.Host {
	tb.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	h, err := host.New(cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, h.Close(context.Background())) })
	return h
}

// MustCompile compiles a committed guest and returns its digest.
func MustCompile(tb testing.TB, h *host.Host, path string) string {
	tb.Helper()
	info, err := h.Compile(context.Background(), MustReadWasm(tb, path))
	require.NoError(tb, err)
	return info.Digest
}

// MustFrame encodes v.
func MustFrame(tb testing.TB, v codec.Value) []byte {
	tb.Helper()
	f, err := codec.EncodeFrame(v)
	require.NoError(tb, err)
	return f
}

// MustDecode decodes a frame.
func MustDecode(tb testing.TB, f []byte) codec.Value {
	tb.Helper()
	v, err := codec.DecodeFrame(f)
	require.NoError(tb, err)
	return v
}

// requireValue requires got to equal want (codec.Equal), showing both as
// typed JSON when they differ.
func requireValue(tb testing.TB, want, got codec.Value, msgAndArgs ...any) {
	tb.Helper()
	if codec.Equal(want, got) {
		return
	}
	w, _ := codec.MarshalProjection(want)
	g, _ := codec.MarshalProjection(got)
	require.Fail(tb, "values differ", "want %s\ngot  %s %v", w, g, fmt.Sprint(msgAndArgs...))
}

// obj builds a map Value from key, value pairs.
func obj(kv ...any) codec.Value {
	entries := make([]codec.Entry, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		var v codec.Value
		switch x := kv[i+1].(type) {
		case codec.Value:
			v = x
		case string:
			v = codec.String(x)
		case int:
			v = codec.Long(int64(x))
		case bool:
			v = codec.Bool(x)
		}
		entries = append(entries, codec.Entry{Key: kv[i].(string), Value: v})
	}
	return codec.Map(entries...)
}

// requireCode requires err to be a host *Error with code.
func requireCode(tb testing.TB, err error, code abi.Code) {
	tb.Helper()
	require.Error(tb, err)
	require.ErrorIs(tb, err, code, "got %v", err)
	require.Equal(tb, code, host.ErrorCode(err))
}

// logs collects the log lines of calls.
type logs struct {
	mu      sync.Mutex
	entries []host.LogEntry
}

func (l *logs) add(e host.LogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *logs) all() []host.LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]host.LogEntry(nil), l.entries...)
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     host.Config
		wantErr string
	}{
		{name: "Zero", cfg: host.Config{}},
		{name: "CacheDir", cfg: host.Config{CacheDir: filepath.Join(t.TempDir(), "cache")}},
		{name: "LimitAboveMax", cfg: host.Config{MemoryLimit: 32 << 20, MaxMemoryLimit: 16 << 20}, wantErr: "exceeds MaxMemoryLimit"},
		{name: "NegativeTimeout", cfg: host.Config{Timeout: -1}, wantErr: "negative Timeout"},
		{name: "CacheDirIsFile", cfg: host.Config{CacheDir: "host_test.go"}, wantErr: "open compilation cache"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := host.New(tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, h.Close(t.Context()))
			require.NoError(t, h.Close(t.Context()), "Close is idempotent")
		})
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", host.Digest(nil))
	require.True(t, bytes.HasPrefix([]byte(host.Digest([]byte("x"))), []byte("sha256:")))
}
