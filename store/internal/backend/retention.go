package backend

import (
	"fmt"

	"github.com/weft-run/weft/store"
)

// PurgeBatch is what one transaction of RetentionPurge deleted: the rows
// of finished tasks with their events and responses, or expired
// idempotency keys.
type PurgeBatch struct {
	Tasks, Events, Responses, IdempotencyKeys int64
}

// Purge runs RetentionPurge with params p. tasks deletes, in one
// transaction, up to batch of the oldest tasks finished before p.OlderThan
// with their events and responses; keys deletes up to batch expired
// idempotency keys. Each runs again until a batch deletes fewer than
// batch rows. After a failed batch the result counts the batches before
// it.
func Purge(p *store.RetentionPurgeParams, tasks, keys func(batch int) (PurgeBatch, error)) (*store.RetentionPurgeResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("purge tasks: %w", err)
	}
	batch := p.Batch
	if batch == 0 {
		batch = store.DefaultRetentionBatch
	}
	res := &store.RetentionPurgeResult{}
	for {
		b, err := tasks(batch)
		if err != nil {
			return res, fmt.Errorf("purge tasks: %w", err)
		}
		if b.Tasks == 0 {
			break
		}
		res.Batches++
		res.Tasks += int(b.Tasks)
		res.Events += int(b.Events)
		res.Responses += int(b.Responses)
		if b.Tasks < int64(batch) {
			break
		}
	}
	for {
		b, err := keys(batch)
		if err != nil {
			return res, fmt.Errorf("purge idempotency keys: %w", err)
		}
		if b.IdempotencyKeys == 0 {
			break
		}
		res.Batches++
		res.IdempotencyKeys += int(b.IdempotencyKeys)
		if b.IdempotencyKeys < int64(batch) {
			break
		}
	}
	return res, nil
}
