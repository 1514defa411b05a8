package host

import (
	"context"
	"sync"
)

// pool holds the idle instances of one module with one memory limit. An
// instance is either idle in a pool or owned by exactly one call.
type pool struct {
	pages  uint32
	max    int
	mu     sync.Mutex
	idle   []*instance
	closed bool // drained: instances that come back are closed
}

// get returns an idle instance, or nil when there is none.
func (p *pool) get() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	inst := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return inst
}

// put returns a healthy instance to the pool, or closes it when the pool
// is full.
func (p *pool) put(inst *instance) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max {
		p.idle = append(p.idle, inst)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	inst.close()
}

// drain closes every idle instance, and every instance that comes back
// later.
func (p *pool) drain(context.Context) {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close()
	}
}
