package guest

import "unsafe"

// allocs keeps every buffer handed out by weft_alloc alive and findable by
// its address until weft_free (docs/abi.md, "Memory ownership"). The Go
// garbage collector does not move objects, so an address stays valid while
// the slice is referenced here.
var allocs = map[uint32][]byte{}

// Alloc implements weft_alloc: a zeroed buffer of size bytes. A zero size
// returns 0 and allocates nothing.
func Alloc(size uint32) uint32 {
	if size == 0 {
		return 0
	}
	b := make([]byte, size)
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	allocs[p] = b
	return p
}

// Free implements weft_free: it forgets the buffer at ptr. Unknown pointers
// are ignored.
func Free(ptr, _ uint32) {
	delete(allocs, ptr)
	if ptr == lastPtr {
		lastPtr, lastAlloc = 0, nil
	}
}

// lastPtr and lastAlloc cache the buffer of the previous call: the host
// reuses one scratch buffer for many calls.
var (
	lastPtr   uint32
	lastAlloc []byte
)

// slices returns the function name and the input of a weft_call. The host
// writes both into one buffer it obtained from weft_alloc, name first and
// input right after (docs/abi.md, "weft_call").
func slices(namePtr, nameLen, inPtr, inLen uint32) (name, input []byte, ok bool) {
	b := lastAlloc
	if namePtr != lastPtr || b == nil {
		var found bool
		if b, found = allocs[namePtr]; !found {
			return nil, nil, false
		}
		lastPtr, lastAlloc = namePtr, b
	}
	end := uint64(nameLen) + uint64(inLen)
	if inPtr != namePtr+nameLen || end > uint64(len(b)) {
		return nil, nil, false
	}
	return b[:nameLen:nameLen], b[nameLen:end:end], true
}
