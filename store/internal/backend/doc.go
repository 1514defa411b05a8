// Package backend holds the implementation helpers store/sqlite and
// store/postgres share: what does not depend on the SQL dialect or the
// driver. It encodes the JSON columns (progress, retry policy, string
// lists), turns a nullable codec and data column pair into a Payload,
// applies a status move to a task row in memory, keeps the in-process
// registry of event and work watchers, and walks PayloadScan's pages.
// SQL stays in the backends. It imports only store and the standard
// library.
package backend
