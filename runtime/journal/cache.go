package journal

import (
	"container/list"
	"context"
	"sync"

	"github.com/weft-run/weft/store"
)

// cacheSize bounds the journals kept between the runs of waiting
// workflows: a woken workflow whose journal is here reads only the events
// appended since its last run instead of its whole log. The bound keeps a
// waiting workflow's cost in rows, however many wait.
const cacheSize = 256

// cacheBytes bounds the payload bytes the cached journals hold (the
// signals they buffer, the outcomes they resolved): a journal past it is
// not kept at all.
const cacheBytes = 64 << 20

// Cache keeps the journals of the last workflows that waited, least
// recently used out first. A run takes its journal out (it mutates it) and
// puts it back only after its wait committed, when the journal in memory is
// exactly what reading the log would build. The zero Cache is empty and
// ready; it is safe for concurrent use.
type Cache struct {
	mu  sync.Mutex
	m   map[string]*list.Element // task id → element of lru holding a *Journal
	lru list.List
	// bytes is the sum of the sizes of the cached journals, each as
	// Journal.size measured it when it was put.
	bytes int64
	sizes map[string]int64
}

// remove takes el out of the cache; c.mu is held.
func (c *Cache) remove(el *list.Element) {
	id := el.Value.(*Journal).taskID
	c.lru.Remove(el)
	delete(c.m, id)
	c.bytes -= c.sizes[id]
	delete(c.sizes, id)
}

// Take removes and returns the journal of task id's attempt, or nil.
func (c *Cache) Take(id string, attempt int) *Journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil
	}
	c.remove(el)
	j := el.Value.(*Journal)
	if j.attempt != attempt {
		return nil
	}
	return j
}

// Put keeps j, evicting the least recently used journals past the bounds.
func (c *Cache) Put(j *Journal) {
	size := j.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*list.Element)
		c.sizes = make(map[string]int64)
	}
	if el, ok := c.m[j.taskID]; ok {
		c.remove(el)
	}
	if size > cacheBytes {
		return // read from the log at its next run
	}
	c.m[j.taskID] = c.lru.PushFront(j)
	c.sizes[j.taskID] = size
	c.bytes += size
	for c.lru.Len() > cacheSize || c.bytes > cacheBytes {
		c.remove(c.lru.Back())
	}
}

// Drop forgets the journal of task id.
func (c *Cache) Drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		c.remove(el)
	}
}

// Load returns the journal of a run of workflow task t: the one the task's
// last run left in c, brought up to date with the events appended since,
// or one read from the whole log.
func (c *Cache) Load(ctx context.Context, l Lister, t *store.Task) (*Journal, error) {
	j := c.Take(t.ID, t.Attempt)
	if j == nil {
		return Read(ctx, l, t)
	}
	if err := j.Extend(ctx, l); err != nil {
		return nil, err
	}
	return j, nil
}
