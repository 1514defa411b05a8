// Package sqlite is the embedded default backend of store.Store, on
// modernc.org/sqlite (driver name "sqlite"), a pure-Go SQLite.
//
// # Group commit
//
// SQLite has one writer at a time, so DB owns exactly one write connection,
// used only by a writer goroutine. Every write method submits a job (a
// function run inside a transaction) and waits. The writer takes every job
// waiting, up to Config.MaxBatch, runs them in one BEGIN IMMEDIATE
// transaction and COMMITs once: one fsync for the whole batch. Each job's
// writes sit in their own SAVEPOINT, opened at the job's first write, so a
// job that fails is rolled back alone and gets its own error while the others
// commit. A method returns only after the COMMIT of its job is durable.
// While one batch commits, the next one gathers, so the fsyncs per second
// stay near the disk's limit while the writes per fsync grow with the number
// of callers.
//
// Since the writer is the only writer, it keeps the rows of the unfinished
// tasks it wrote last (taskCache) and does not read them back for the next
// status change or append. Every UPDATE of a task row still compares its
// status and last sequence number with the row, so a stale entry is caught
// and reread, never written over.
//
// Reads go to a separate pool of read-only connections, which WAL lets run
// beside the writer, each seeing every batch committed before it started.
// A checkpointer copies the WAL back into the database file on its own
// connection, so commits never wait for a checkpoint.
//
// # Leases
//
// A SQLite store belongs to one host (Shared reports false), so start-up
// runs TaskRecover. Leases and fencing hold all the same (see the store
// package doc): a run that outlived its lease must not write, and
// TaskReclaim takes over tasks whose lease expired. Expiry is counted from
// the process clock; LeaseExtend is one transaction. WorkWatch fires after
// this store's own commits.
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL by default: a method
// that returned has its commit on stable storage, so it survives a power
// loss, not only a crash of the process.
//
// # Migrations
//
// The schema lives in migration/NNNN_name.sql, embedded and applied in
// order at Open, each in its own transaction and recorded in
// schema_migrations. A database whose recorded version is newer than the
// binary gives ErrSchemaTooNew and is left untouched; a damaged file
// gives ErrCorrupt.
package sqlite
