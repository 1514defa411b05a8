package store

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
