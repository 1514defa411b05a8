package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
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
// applies once it is there (migrate applies every unrecorded one).
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

const schemaMigrationsDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`

// recordedVersion returns the newest version in schema_migrations, whether
// that table exists, and the number of other tables.
func recordedVersion(ctx context.Context, conn *sql.Conn) (version int, tracked bool, tables int, err error) {
	rows, err := conn.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return 0, false, 0, classify(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, false, 0, classify(err)
		}
		if name == "schema_migrations" {
			tracked = true
		} else {
			tables++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, 0, classify(err)
	}
	if !tracked {
		return 0, false, tables, nil
	}
	var v sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v); err != nil {
		return 0, true, tables, classify(err)
	}
	return int(v.Int64), true, tables, nil
}

// appliedVersions returns the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, conn *sql.Conn, tracked bool) (map[int]bool, error) {
	out := map[int]bool{}
	if !tracked {
		return out, nil
	}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, classify(err)
		}
		out[v] = true
	}
	return out, classify(rows.Err())
}

// migrate applies the pending migrations, each in its own transaction.
func migrate(ctx context.Context, conn *sql.Conn, log hclog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	current, tracked, tables, err := recordedVersion(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !tracked && tables > 0 {
		return fmt.Errorf("%w: the file holds %d tables but no weft schema", ErrCorrupt, tables)
	}
	if known := ms[len(ms)-1].version; current > known {
		return tooNew(current, known)
	}
	applied, err := appliedVersions(ctx, conn, tracked)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Every migration not recorded yet applies, in order: also one whose
	// number was missing when a newer one applied (a line of work that
	// landed later).
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := apply(ctx, conn, m); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		log.Info("applied migration", "version", m.version, "name", m.name)
	}
	return nil
}

func apply(ctx context.Context, conn *sql.Conn, m migration) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return classify(err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, schemaMigrationsDDL); err != nil {
		return classify(err)
	}
	if _, err := conn.ExecContext(ctx, m.sql); err != nil {
		return classify(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return classify(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return classify(err)
	}
	return nil
}

// checkVersion requires the schema of a read-only database to be exactly
// the binary's.
func checkVersion(ctx context.Context, conn *sql.Conn) error {
	current, tracked, tables, err := recordedVersion(ctx, conn)
	if err != nil {
		return err
	}
	known := SchemaVersion()
	switch {
	case !tracked && tables > 0:
		return fmt.Errorf("%w: the file holds %d tables but no weft schema", ErrCorrupt, tables)
	case current > known:
		return tooNew(current, known)
	case current < known:
		return fmt.Errorf("database schema version %d is older than this binary's %d: start weft serve once to migrate it", current, known)
	}
	return nil
}

func tooNew(found, known int) error {
	return fmt.Errorf("%w: database schema version %d, this binary knows up to %d; upgrade weft (the database was left unchanged)",
		ErrSchemaTooNew, found, known)
}
