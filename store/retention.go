package store

import "time"

// RetentionPurgeResult counts what Store.RetentionPurge deleted.
type RetentionPurgeResult struct {
	// Tasks counts deleted finished tasks.
	Tasks int
	// Events counts their deleted events.
	Events int
	// Responses counts their deleted responses.
	Responses int
	// IdempotencyKeys counts deleted expired keys.
	IdempotencyKeys int
	// Batches counts the transactions used.
	Batches int
}

// RetentionPurgeParams are the params of Store.RetentionPurge.
type RetentionPurgeParams struct {
	// OlderThan is the cutoff: finished tasks whose finish time is before
	// it are deleted, compared at millisecond precision. Required.
	OlderThan time.Time
	// Batch caps the rows one transaction deletes; not negative. Defaults
	// to DefaultRetentionBatch (500).
	Batch int
}

// DefaultRetentionBatch is the batch RetentionPurge uses when
// RetentionPurgeParams.Batch is 0.
const DefaultRetentionBatch = 500
