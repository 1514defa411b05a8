// Package backend holds the implementation helpers store/sqlite and
// store/postgres share: whatever does not depend on the SQL dialect or the
// driver. It encodes the JSON columns (progress, retry policy, module
// functions), turns a nullable codec and data column pair into a Payload,
// builds the rows a backend inserts (a new task, the service identity, an
// idempotency key, the next module version), applies a status move or an
// append of events to a task row in memory, walks the pages of
// TaskRecover, RetentionPurge and PayloadScan, and keeps the in-process
// registry of event and work watchers and the group commit's queue (one
// committer goroutine taking the writes waiting at once). SQL stays in the
// backends. It imports only store and the standard library.
package backend
