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

// journalCache keeps the journals of the last workflows that waited, least
// recently used out first. A run takes its journal out (it mutates it) and
// puts it back only after its wait committed, when the journal in memory is
// exactly what reading the log would build.
type journalCache struct {
	mu  sync.Mutex
	m   map[string]*list.Element // task id → element of lru holding a *journal
	lru list.List
}

// take removes and returns the journal of task id's attempt, or nil.
func (c *journalCache) take(id string, attempt int) *journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil
	}
	delete(c.m, id)
	c.lru.Remove(el)
	j := el.Value.(*journal)
	if j.attempt != attempt {
		return nil
	}
	return j
}

// put keeps j, evicting the least recently used journal past the bound.
func (c *journalCache) put(j *journal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*list.Element)
	}
	if el, ok := c.m[j.taskID]; ok {
		c.lru.Remove(el)
	}
	c.m[j.taskID] = c.lru.PushFront(j)
	for c.lru.Len() > journalCacheSize {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*journal).taskID)
	}
}

// drop forgets the journal of task id.
func (c *journalCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		c.lru.Remove(el)
		delete(c.m, id)
	}
}
