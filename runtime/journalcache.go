package runtime

import (
	"container/list"
	"sync"
)

// journalCacheSize bounds the journals kept between the runs of waiting
// workflows: a woken workflow whose journal is here reads only the events
// appended since its last run instead of its whole log. The bound keeps a
// waiting workflow's cost in rows, however many wait.
const journalCacheSize = 256

// journalCacheBytes bounds the payload bytes the cached journals hold (the
// signals they buffer, the outcomes they resolved): a journal past it is
// not kept at all.
const journalCacheBytes = 64 << 20

// journalCache keeps the journals of the last workflows that waited, least
// recently used out first. A run takes its journal out (it mutates it) and
// puts it back only after its wait committed, when the journal in memory is
// exactly what reading the log would build.
type journalCache struct {
	mu  sync.Mutex
	m   map[string]*list.Element // task id → element of lru holding a *journal
	lru list.List
	// bytes is the sum of the sizes of the cached journals, each as
	// journalBytes measured it when it was put.
	bytes int64
	sizes map[string]int64
}

// journalBytes is the payload bytes journal j holds.
func journalBytes(j *journal) int64 {
	var n int64
	for _, msgs := range j.buffered {
		for _, m := range msgs {
			n += int64(len(m.payload))
		}
	}
	for _, r := range j.res {
		n += int64(len(r.frame))
	}
	return n
}

// remove takes el out of the cache; c.mu is held.
func (c *journalCache) remove(el *list.Element) {
	id := el.Value.(*journal).taskID
	c.lru.Remove(el)
	delete(c.m, id)
	c.bytes -= c.sizes[id]
	delete(c.sizes, id)
}

// take removes and returns the journal of task id's attempt, or nil.
func (c *journalCache) take(id string, attempt int) *journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil
	}
	c.remove(el)
	j := el.Value.(*journal)
	if j.attempt != attempt {
		return nil
	}
	return j
}

// put keeps j, evicting the least recently used journals past the bounds.
func (c *journalCache) put(j *journal) {
	size := journalBytes(j)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*list.Element)
		c.sizes = make(map[string]int64)
	}
	if el, ok := c.m[j.taskID]; ok {
		c.remove(el)
	}
	if size > journalCacheBytes {
		return // read from the log at its next run
	}
	c.m[j.taskID] = c.lru.PushFront(j)
	c.sizes[j.taskID] = size
	c.bytes += size
	for c.lru.Len() > journalCacheSize || c.bytes > journalCacheBytes {
		c.remove(c.lru.Back())
	}
}

// drop forgets the journal of task id.
func (c *journalCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		c.remove(el)
	}
}
