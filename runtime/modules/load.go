package modules

import (
	"context"
	"fmt"
	"sync"

	"github.com/weft-run/weft/runtime/fault"
)

// Bytes reads a module file, verified against its digest. It returns
// fault.ModuleNotFound for a missing file, fault.ModuleInvalid (the cause
// kept for the logs) for a file that cannot be read back intact, and ctx's
// error once ctx ends.
func (r *Registry) Bytes(ctx context.Context, digest string) ([]byte, error) {
	wasm, err := r.files.Get(ctx, digest)
	if err == nil {
		return wasm, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if ok, herr := r.files.Has(digest); herr == nil && !ok {
		return nil, fault.Errorf(fault.ModuleNotFound, "module file %s is missing", digest)
	}
	r.log.Error("read module file", "digest", digest, "error", err)
	return nil, &fault.Error{Code: fault.ModuleInvalid, Message: fmt.Sprintf("module file %s cannot be read intact", digest), Err: err}
}

// Load makes sure the module with digest is compiled, once per digest for
// the life of the registry: the first task of a module reads the file and
// compiles it while in status loading; tasks of a digest already loaded go
// straight on. Concurrent loads of one digest share the work; a failed load
// is tried again by the next task. It returns Bytes's codes,
// fault.ModuleInvalid for a module the Executor rejects (or fails to
// compile without a code of its own), and ctx's error once ctx ends.
func (r *Registry) Load(ctx context.Context, digest string) error {
	le, owner := r.loads.enter(digest)
	if !owner {
		select {
		case <-le.done:
			return le.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wasm, err := r.Bytes(ctx, digest)
	if err == nil {
		_, err = r.exec.Compile(ctx, wasm)
		if err != nil && fault.CodeOf(err) == fault.Internal {
			err = &fault.Error{Code: fault.ModuleInvalid, Message: "invalid module " + digest, Err: err}
		}
	}
	r.loads.leave(digest, le, err)
	return err
}

// Loaded reports whether digest was loaded (or deployed) successfully, so
// that a task of it needs no loading.
func (r *Registry) Loaded(digest string) bool { return r.loads.loaded(digest) }

// loadCache records the digests compiled by the Executor.
type loadCache struct {
	mu sync.Mutex
	m  map[string]*loadEntry
}

type loadEntry struct {
	done chan struct{} // closed when the load ended
	err  error         // set before done is closed
}

var loadedEntry = func() *loadEntry {
	le := &loadEntry{done: make(chan struct{})}
	close(le.done)
	return le
}()

// enter returns the entry of digest, and whether the caller must load it.
func (c *loadCache) enter(digest string) (*loadEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if le, ok := c.m[digest]; ok {
		return le, false
	}
	le := &loadEntry{done: make(chan struct{})}
	c.m[digest] = le
	return le, true
}

// leave ends a load; a failed one is forgotten so that the next task tries
// again.
func (c *loadCache) leave(digest string, le *loadEntry, err error) {
	le.err = err
	close(le.done)
	if err != nil {
		c.mu.Lock()
		if c.m[digest] == le {
			delete(c.m, digest)
		}
		c.mu.Unlock()
	}
}

// loaded reports whether digest was loaded successfully.
func (c *loadCache) loaded(digest string) bool {
	c.mu.Lock()
	le, ok := c.m[digest]
	c.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-le.done:
		return le.err == nil
	default:
		return false
	}
}

// markLoaded records a digest compiled outside Load (at deploy).
func (c *loadCache) markLoaded(digest string) {
	c.mu.Lock()
	if _, ok := c.m[digest]; !ok {
		c.m[digest] = loadedEntry
	}
	c.mu.Unlock()
}
