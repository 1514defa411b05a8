package access

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store/sqlite"
)

// tbWriter writes log lines through tb.Log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testBundle is what setup returns.
type testBundle struct {
	dir   string
	db    *sqlite.DB
	cfg   Config
	admin string // the admin client's id
}

// setup opens a real SQLite store in a temporary directory, bootstraps the
// admin client there and returns a Service configured by edit. The store
// is closed at cleanup.
func setup(tb testing.TB, edit func(*Config)) (*Service, *testBundle) {
	tb.Helper()
	dir := tb.TempDir()
	logger := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: tbWriter{tb}})
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "weft.db"), Logger: logger})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close(context.Background()) })
	b := &testBundle{dir: dir, db: db, cfg: Config{Store: db, Logger: logger}}
	if edit != nil {
		edit(&b.cfg)
	}
	s, err := New(b.cfg)
	require.NoError(tb, err)
	tok, created, err := s.Bootstrap(tb.Context(), dir)
	require.NoError(tb, err)
	require.True(tb, created)
	admin, err := s.Authenticate(tb.Context(), tok)
	require.NoError(tb, err)
	b.admin = admin.ClientID
	return s, b
}

// fakeClock is a settable clock for expiries.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
