package sqlite

import (
	"slices"

	"github.com/weft-run/weft/store"
)

// taskCache keeps the rows of recently written unfinished tasks as the
// writer last committed them, so that a status change or an append does not
// read back a row the writer itself wrote moments ago. Only the writer
// goroutine uses it.
//
// It stays exact because the writer is the only writer: every write of a
// task row goes through the tx helpers, which put the new row; a job that
// is rolled back evicts what it put; a failed batch clears everything;
// retention clears everything it may have deleted. Every UPDATE still
// compares status and last_seq with the row (a compare-and-set), so an
// entry that went stale would be caught and reread, never written over.
type taskCache struct {
	m     map[string]*store.Task
	bytes int // payload bytes held
}

// The bounds of the cache: past taskCacheMax rows or taskCacheBytes payload
// bytes it starts over; a row with more than taskCacheRowBytes payload bytes
// is not kept (it is read back instead).
const (
	taskCacheMax      = 20000
	taskCacheBytes    = 64 << 20
	taskCacheRowBytes = 64 << 10
)

func newTaskCache() *taskCache { return &taskCache{m: make(map[string]*store.Task)} }

// payloadBytes is the size of the durable values a row holds.
func payloadBytes(t *store.Task) int {
	n := len(t.Input.Data) + len(t.Checkpoint.Data) + len(t.Output.Data)
	if t.Error != nil {
		n += len(t.Error.Details.Data)
	}
	return n
}

// get returns a private copy of the cached row of id.
func (c *taskCache) get(id string) (*store.Task, bool) {
	t, ok := c.m[id]
	if !ok {
		return nil, false
	}
	return cloneTask(t), true
}

// put caches a copy of task, or drops it once finished: a finished task's
// row is written again only by retention.
func (c *taskCache) put(task *store.Task) {
	c.delete(task.ID)
	size := payloadBytes(task)
	if task.Status.IsTerminal() || size > taskCacheRowBytes {
		return
	}
	if len(c.m) >= taskCacheMax || c.bytes+size > taskCacheBytes {
		c.reset()
	}
	c.m[task.ID] = cloneTask(task)
	c.bytes += size
}

func (c *taskCache) delete(id string) {
	if old, ok := c.m[id]; ok {
		c.bytes -= payloadBytes(old)
		delete(c.m, id)
	}
}

func (c *taskCache) evict(ids []string) {
	for _, id := range ids {
		c.delete(id)
	}
}

func (c *taskCache) reset() {
	clear(c.m)
	c.bytes = 0
}

// cloneTask copies a task deeply, so that neither the cache nor a caller
// can change the other's bytes.
func cloneTask(t *store.Task) *store.Task {
	c := *t
	c.Input = clonePayload(t.Input)
	c.Checkpoint = clonePayload(t.Checkpoint)
	c.Output = clonePayload(t.Output)
	c.Retry.NonRetryableErrorTypes = slices.Clone(t.Retry.NonRetryableErrorTypes)
	if t.Progress != nil {
		pr := *t.Progress
		c.Progress = &pr
	}
	if t.Error != nil {
		e := *t.Error
		e.Details = clonePayload(t.Error.Details)
		c.Error = &e
	}
	return &c
}

func clonePayload(p store.Payload) store.Payload {
	if p.Data != nil {
		p.Data = slices.Clone(p.Data)
	}
	return p
}
