// Package postgres is the PostgreSQL backend of store.Store, on
// github.com/jackc/pgx/v5 and its pool (pgxpool), for deployments whose
// hosts share one database. It passes store/storetest like store/sqlite,
// the embedded default, and keeps the same semantics; what differs is how
// they hold when writers run in parallel.
//
// # Transactions
//
// Every write method runs in one READ COMMITTED transaction that holds the
// whole atomic rule of persistence §11.2 (a status and its event, a task
// and its first event, a workflow's commit). SQLite serialises its writers;
// PostgreSQL does not, so every read-modify-write locks what it reads:
//
//   - a task's row is locked (SELECT … FOR NO KEY UPDATE) before any status
//     change or append, so writers of one task take turns: a transition is
//     compare-and-set against the row as the last writer committed it, and
//     sequence numbers are taken from the locked row's last_seq, gapless;
//   - TaskClaim locks each queued task with FOR NO KEY UPDATE SKIP LOCKED,
//     so concurrent claims (in one process or on many hosts) never take the
//     same task and never wait for each other;
//   - idempotency keys, pairing codes, the service identity and module
//     versions are taken by unique constraints (INSERT … ON CONFLICT) and
//     row locks, never by a read followed by a blind write.
//
// A child task and its workflow are locked child first, everywhere.
//
// Round trips are what a write costs, so a transaction pipelines: BEGIN
// goes out with its first statement, and the writes whose results the
// method does not need (the UPDATE of a locked row, the response row, the
// events, one array per column) wait and go out ahead of the next
// statement, or with the COMMIT. A status change is two round trips; a task
// insert is one. A transaction that fails with a serialization failure
// (40001) or a deadlock (40P01) runs again from the start, up to
// Options.MaxRetries times. A COMMIT runs to its end even when the
// caller's context ends, so a method that returned knows whether its
// transaction committed.
//
// # Group commit
//
// The writes of one DB go through one committer (group.go), which runs
// the writes waiting at once, up to Options.MaxBatch, in one transaction:
// each between SAVEPOINT and RELEASE, so that a write that fails is rolled
// back alone, and all of them with one COMMIT and one notification. A
// write alone runs in a transaction of its own. Before a run of row-wise
// writes (those that change a task row only after locking it, and say
// which tasks they lock first), the batch locks and reads those rows in
// one statement, FOR NO KEY UPDATE SKIP LOCKED, and hands each row to the
// first write that locks it; a write over many rows (a claim, a lease
// extension) drops the rows read ahead. A status change in a batch then
// costs no round trip of its own. Should a write queued by one job fail
// while a later job's statement goes out, the batch is voided and each
// write runs alone. One committer per DB keeps this process's writes from
// waiting on each other's row locks across two open transactions.
//
// # Time
//
// Times are timestamptz columns, which keep microseconds; the store
// truncates every time to the millisecond, in UTC, before it writes it, as
// the store contract says.
//
// # Leases
//
// A lease's expiry is the transaction's now() plus its TTL: the
// database's clock, read by a statement the transaction sends anyway (the
// owners of a claim, the due workflows, a waiting parent; a task inserted
// running computes it in its INSERT), so a lease costs no round trip. LeaseExtend is one statement for all
// of a host's leases. TaskReclaim locks the tasks whose lease expired
// with FOR NO KEY UPDATE SKIP LOCKED, so hosts reclaiming at once take
// different tasks and a task being written to waits for the next round.
//
// # Event watch
//
// EventWatch and WorkWatch are signalled after the commit of every
// transaction of this process that appended to a task's log (or may have
// made work claimable), and for the commits of every other store on the
// same schema: each such transaction sends one pg_notify on the channel
// weft_<schema>, and each store keeps one connection outside its pool
// listening there (so a host uses Options.MaxConns+1 connections). A
// notification is a hint: every watcher also fires when the listener
// reconnects and every Options.WatchPollInterval, so a notification lost
// with a connection delays a reader, never stalls it.
//
// # Migrations
//
// The schema lives in migration/NNNN_name.sql, embedded and applied in
// order at Open, each in its own transaction under an advisory lock (hosts
// starting together migrate one at a time) and recorded in
// schema_migrations. A database whose recorded version is newer than the
// binary gives ErrSchemaTooNew and is left untouched.
package postgres
