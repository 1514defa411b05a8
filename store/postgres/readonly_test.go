package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/storetest"
)

func TestReadOnly(t *testing.T) {
	database := NewDatabase(t)
	ro := postgres.Options{ReadOnly: true, Logger: testLogger(t)}

	t.Run("EmptyDatabaseRefusedAndLeftEmpty", func(t *testing.T) {
		dsn := NewSchema(t, database)
		before := schemaDump(t, dsn)
		_, err := postgres.Open(t.Context(), dsn, ro)
		require.ErrorIs(t, err, postgres.ErrSchemaUnknown)
		require.ErrorContains(t, err, "no weft schema")
		require.Equal(t, before, schemaDump(t, dsn), "a read-only open creates nothing")
	})

	t.Run("ReadsAndRefusesWrites", func(t *testing.T) {
		dsn := NewSchema(t, database)
		rw := MustOpen(t, dsn)
		task := storetest.MustInsertTask(t, rw, nil)
		before := schemaDump(t, dsn)

		db, err := postgres.Open(t.Context(), dsn, ro)
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close(context.Background())) }()
		got, err := db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, task.ID, got.ID)
		storetest.MustCheckLog(t, db, task.ID)

		_, err = db.TaskInsert(t.Context(), &store.TaskInsertParams{Module: "m", ModuleDigest: storetest.Digest, Function: "f"})
		require.ErrorIs(t, err, postgres.ErrReadOnly)
		// The server refuses too, whatever path a write would take.
		err = postgres.ExecRaw(t.Context(), db, "DELETE FROM tasks")
		require.ErrorContains(t, err, "read-only transaction")
		require.Equal(t, before, schemaDump(t, dsn))
		after, err := rw.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, got.Status, after.Status)
	})

	t.Run("OtherSchemaVersionsRefused", func(t *testing.T) {
		dsn := NewSchema(t, database)
		require.NoError(t, MustOpen(t, dsn).Close(t.Context()))
		conn, err := pgx.Connect(t.Context(), dsn)
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()

		_, err = conn.Exec(t.Context(), "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'future', now())", postgres.SchemaVersion()+1)
		require.NoError(t, err)
		_, err = postgres.Open(t.Context(), dsn, ro)
		require.ErrorIs(t, err, postgres.ErrSchemaTooNew)

		_, err = conn.Exec(t.Context(), "DELETE FROM schema_migrations WHERE version >= $1", postgres.SchemaVersion())
		require.NoError(t, err)
		before := schemaDump(t, dsn)
		_, err = postgres.Open(t.Context(), dsn, ro)
		require.ErrorIs(t, err, postgres.ErrSchemaUnknown)
		require.Equal(t, before, schemaDump(t, dsn), "an older schema is not migrated")
	})
}

func TestCheckDSN(t *testing.T) {
	require.NoError(t, postgres.CheckDSN("postgres://u@h:5432/db?sslmode=disable"))
	for _, dsn := range []string{"postgres://u@h:notaport/db", "postgres://u@h/db?sslmode=sometimes", "postgres://%zz"} {
		require.ErrorIs(t, postgres.CheckDSN(dsn), store.ErrInvalid, dsn)
	}
	require.Equal(t, "postgres://u@h:5433/db", postgres.Redact("postgres://u:secret@h:5433/db"))
	require.Equal(t, "postgres", postgres.Redact("postgres://u:secret@h:port/db"), "a bad DSN is not echoed")
}
