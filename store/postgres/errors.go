package postgres

import "errors"

// Sentinel errors of the PostgreSQL backend, beside the store sentinels every
// backend returns. Methods wrap them with context; test them with errors.Is.
var (
	// ErrSchemaTooNew reports a database migrated by a newer weft whose
	// schema this binary does not know; it is never modified.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this binary")
	// ErrSchemaUnknown reports, on a store opened read-only, a database
	// with no weft schema or an older one that Open would have migrated.
	ErrSchemaUnknown = errors.New("store: database schema is not the one this binary knows")
	// ErrReadOnly reports a write on a store opened read-only
	// (Options.ReadOnly): the server refused it.
	ErrReadOnly = errors.New("store: read-only")
	// ErrRetriesExhausted reports a transaction that kept failing with a
	// serialization failure or a deadlock, Options.MaxRetries times over.
	ErrRetriesExhausted = errors.New("store: transaction retries exhausted")
)
