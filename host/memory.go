package host

import "github.com/tetratelabs/wazero/experimental"

// linearMemory backs one instance's wasm memory and refuses to grow it past
// the instance's limit (see "Memory limits" in the package doc). wazero
// calls Reallocate on the goroutine running the guest.
type linearMemory struct {
	buf   []byte
	limit uint64
	inst  *instance
}

var _ experimental.LinearMemory = (*linearMemory)(nil)

// Reallocate grows the memory to size bytes, keeping its contents, or
// returns nil (memory.grow fails in the guest) past the limit.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.inst.memRefused = true
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	// Grow like append: double, but never past the limit.
	c := max(size, min(2*uint64(cap(m.buf)), m.limit))
	nb := make([]byte, size, c)
	copy(nb, m.buf)
	m.buf = nb
	return nb
}

// Free drops the memory.
func (m *linearMemory) Free() { m.buf = nil }

// allocator returns the MemoryAllocator of inst.
func (inst *instance) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(c, _ uint64) experimental.LinearMemory {
		return &linearMemory{buf: make([]byte, 0, min(c, inst.limit)), limit: inst.limit, inst: inst}
	})
}
