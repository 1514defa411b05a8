//go:build unix

package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/storetest"
)

// pgFingerprint sums up what a read-only scan must leave as it was: the
// tables of the database and every row of the tasks and events.
func pgFingerprint(tb testing.TB, dsn string) string {
	tb.Helper()
	conn, err := pgx.Connect(tb.Context(), dsn)
	require.NoError(tb, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var tables, tasks, events string
	require.NoError(tb, conn.QueryRow(tb.Context(),
		`SELECT coalesce(string_agg(table_name, ',' ORDER BY table_name), '') FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables))
	if tables == "" {
		return ""
	}
	require.NoError(tb, conn.QueryRow(tb.Context(), `SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM tasks t`).Scan(&tasks))
	require.NoError(tb, conn.QueryRow(tb.Context(), `SELECT coalesce(md5(string_agg(e::text, '|' ORDER BY e::text)), '') FROM task_events e`).Scan(&events))
	return tables + "/" + tasks + "/" + events
}

func TestPreflightPostgres(t *testing.T) {
	t.Run("EmptyDatabase", func(t *testing.T) {
		dsn := MustOwnedDatabase(t)
		code, _, errOut := runPreflightCLI(t, "--store", dsn)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "no weft schema")
		require.Empty(t, pgFingerprint(t, dsn), "preflight created nothing")
	})

	t.Run("PassesThenFindsAndChangesNothing", func(t *testing.T) {
		dsn := MustOwnedDatabase(t)
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
		require.NoError(t, err)
		frame, err := codec.EncodeFrame(codec.Map(codec.Entry{Key: "n", Value: codec.Long(1)}))
		require.NoError(t, err)
		storetest.MustInsertTask(t, db, &store.TaskInsertParams{Input: store.Payload{Codec: "avro", Data: frame}})

		code, out, errOut := runPreflightCLI(t, "--store", dsn)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "preflight passed: 1 stored value(s)")

		storetest.MustInsertTask(t, db, &store.TaskInsertParams{Input: store.Payload{Codec: "json", Data: []byte(`{"a":1}`)}})
		require.NoError(t, db.Close(t.Context()))
		before := pgFingerprint(t, dsn)
		t.Setenv("WEFT_STORE", dsn)
		code, out, _ = runPreflightCLI(t)
		require.Equal(t, 1, code, "WEFT_STORE names the database")
		require.Contains(t, out, "unsupported_payload_codec: preflight blocked: 1 stored payload(s)")
		require.Regexp(t, `tasks\[task_[0-9A-Z]{26}\]\.input: unsupported_payload_codec: `, out)
		require.Equal(t, before, pgFingerprint(t, dsn), "preflight modified the database")
	})

	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"--store", "mysql://weft@db/weft"},
			{"--store", "postgres://weft@db:port/weft"},
			{"--store", "postgres://weft@db/weft", "--data", t.TempDir()},
		} {
			code, _, errOut := runPreflightCLI(t, args...)
			require.Equal(t, 2, code, "%v: %s", args, errOut)
		}
	})
}
