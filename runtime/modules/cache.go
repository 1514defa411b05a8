package modules

import (
	"sync"

	"github.com/weft-run/weft/store"
)

// latestCache keeps the latest version of each module name read, so task
// creation does not read the modules table each time. Deploy and delete
// invalidate a name; a generation per name keeps a read that raced with an
// invalidation from filling the cache with a stale version.
type latestCache struct {
	mu  sync.RWMutex
	m   map[string]*store.Module
	gen map[string]uint64
}

func (c *latestCache) get(name string) *store.Module {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[name]
}

func (c *latestCache) generation(name string) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen[name]
}

// put caches m unless its name was invalidated since generation gen.
func (c *latestCache) put(m *store.Module, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[m.Name] == gen {
		c.m[m.Name] = m
	}
}

// invalidate drops a name and returns its new generation.
func (c *latestCache) invalidate(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
	c.gen[name]++
	return c.gen[name]
}
