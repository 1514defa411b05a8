package sqlite

import "errors"

// Sentinel errors of the SQLite backend, beside the store sentinels every
// backend returns. Methods wrap them with context; test them with errors.Is.
var (
	// ErrSchemaTooNew reports a database written by a newer weft whose schema
	// this binary does not know; it is never modified.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this binary")
	// ErrCorrupt reports a database file that is damaged, truncated or not a
	// weft database at all.
	ErrCorrupt = errors.New("store: database corrupt")
	// ErrReadOnly reports a write on a store opened read-only
	// (Config.ReadOnly).
	ErrReadOnly = errors.New("store: read-only")
)
