package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// migration is one embedded schema file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. Their versions must
// go up strictly; a number may be missing (a migration of another line of
// work that has not landed yet): the migrations above it apply, and it
// applies once it is there (migrateOne applies every unrecorded one).
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migration/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	ms := make([]migration, 0, len(names))
	last := 0
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= last {
			return nil, fmt.Errorf("migration file %s: want a number above %04d", base, last)
		}
		last = v
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	return ms[len(ms)-1].version
}

// migrationLock is the key of the advisory lock every migration holds, so
// that hosts starting at once against one database migrate it one at a
// time ("weft" in ASCII).
const migrationLock = 0x77656674

const schemaMigrationsDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL
)`

// migrate applies the pending migrations, each in its own transaction
// under the migration lock.
func migrate(ctx context.Context, pool *pgxpool.Pool, log hclog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for {
		applied, err := migrateOne(ctx, pool, ms)
		if err != nil {
			return err
		}
		if applied == nil {
			return nil
		}
		log.Info("applied migration", "version", applied.version, "name", applied.name)
	}
}

// migrateOne applies the next pending migration and returns it, or nil
// when the schema is current. A database whose schema is newer than ms is
// left untouched.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, ms []migration) (applied *migration, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		if err != nil || applied == nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	current, err := recordedVersion(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	known := ms[len(ms)-1].version
	if current > known {
		return nil, tooNew(current, known)
	}
	done := map[int]bool{}
	if current > 0 {
		rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		for rows.Next() {
			var v int32
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("migrate: %w", err)
			}
			done[int(v)] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	// The first migration not recorded yet applies: also one whose number
	// was missing when a newer one applied (a line of work that landed
	// later).
	var m *migration
	for i := range ms {
		if !done[ms[i].version] {
			m = &ms[i]
			break
		}
	}
	if m == nil {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, schemaMigrationsDDL); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
		m.version, m.name, now()); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("migrate %s: commit: %w", m.name, err)
	}
	return m, nil
}

// recordedVersion returns the newest version in schema_migrations, 0 when
// the table does not exist.
func recordedVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v *int32
	if err := tx.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v); err != nil {
		return 0, err
	}
	if v == nil {
		return 0, nil
	}
	return int(*v), nil
}

func tooNew(found, known int) error {
	return fmt.Errorf("%w: database schema version %d, this binary knows up to %d; upgrade weft (the database was left unchanged)",
		ErrSchemaTooNew, found, known)
}

// checkSchema is migrate's counterpart for a read-only store: it changes
// nothing and refuses a schema whose version is not the one this binary
// knows.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, _ hclog.Logger) error {
	known := SchemaVersion()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	current, err := recordedVersion(ctx, tx)
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	switch {
	case current > known:
		return tooNew(current, known)
	case current == 0:
		return fmt.Errorf("%w: no weft schema in this database (weft serve creates it)", ErrSchemaUnknown)
	case current < known:
		return fmt.Errorf("%w: database schema version %d, this binary reads version %d; start weft serve on it once to migrate it",
			ErrSchemaUnknown, current, known)
	}
	return nil
}
