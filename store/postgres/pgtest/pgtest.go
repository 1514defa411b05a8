package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// ServerEnv names the variable holding the DSN of a server the tests may
// create databases on.
const ServerEnv = "WEFT_TEST_POSTGRES"

// Server returns the DSN of the test server, or skips tb when ServerEnv is
// unset.
func Server(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(ServerEnv)
	if dsn == "" {
		tb.Skip(ServerEnv + " is unset, so the PostgreSQL tests are skipped; run them with\n" +
			"\texport " + ServerEnv + "=$(scripts/pg-test.sh start /tmp/pg)\n" +
			"\tgo test -race ./store/postgres/ ./runtime/ ./cmd/weft/")
	}
	return dsn
}

// RandomName returns prefix followed by random hex digits.
func RandomName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// WithParam returns dsn with one more query parameter.
func WithParam(tb testing.TB, dsn, key, value string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	require.NoError(tb, err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// NewDatabase creates a database with a random name on the test server,
// dropped when tb ends, and returns its DSN. It skips tb when ServerEnv is
// unset.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := Server(tb)
	name := RandomName("weft_test_")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(tb, err, "connect to %s=%s", ServerEnv, admin)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	_ = conn.Close(ctx)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("drop database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	require.NoError(tb, err)
	u.Path = "/" + name
	return u.String()
}

// NewSchema creates a schema with a random name in the database at dsn and
// returns a DSN whose connections use it: a fresh, empty store for each
// test without the cost of a database each.
func NewSchema(tb testing.TB, dsn string) string {
	tb.Helper()
	name := RandomName("s_")
	conn, err := pgx.Connect(tb.Context(), dsn)
	require.NoError(tb, err)
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(tb.Context(), "CREATE SCHEMA "+name)
	require.NoError(tb, err)
	return WithParam(tb, dsn, "search_path", name)
}
