package postgres

import "context"

// ExecRaw runs one statement on a connection of db's pool, bypassing the
// write path, for the tests of what the server itself refuses.
func ExecRaw(ctx context.Context, db *DB, sql string) error {
	_, err := db.pool.Exec(ctx, sql)
	return err
}
