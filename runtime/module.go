package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// ModuleFiles holds module files on disk, content-addressed by digest
// (persistence §11.1: model files stay outside the database). *blob.Store of
// store/blob satisfies it. Its methods must be safe for concurrent use.
type ModuleFiles interface {
	// Put stores data atomically (a crash leaves either the whole file or
	// none) and returns its digest, "sha256:<hex>". Storing bytes that are
	// already there changes nothing.
	Put(ctx context.Context, data []byte) (digest string, err error)
	// Get returns the bytes stored under digest after checking them against
	// it; it fails for a missing file and for one whose bytes do not match.
	Get(ctx context.Context, digest string) ([]byte, error)
	// Has reports whether a file is stored under digest, without reading it.
	Has(digest string) (bool, error)
}

// Digest returns the content digest of a module file, "sha256:<hex>".
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ModuleDeploy validates a module with the Executor, stores its file
// content-addressed and records it as the next version of name. Deploying
// the bytes of the latest version again returns that version. Tasks already
// created keep the digest they were pinned to. It returns fault.Invalid for a
// bad name or an empty module and fault.ModuleInvalid for a module the
// Executor rejects.
func (e *Engine) ModuleDeploy(ctx context.Context, name string, wasm []byte) (*store.Module, error) {
	if !store.ValidModuleName(name) {
		return nil, fault.ParamErrorf("name", "module name %q must be 1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit", name)
	}
	if len(wasm) == 0 {
		return nil, fault.ParamErrorf("body", "the module file is empty")
	}
	fns, err := e.compileFunctions(ctx, wasm)
	if err != nil {
		return nil, err
	}
	digest, err := e.files.Put(ctx, wasm)
	if err != nil {
		return nil, fault.Wrap("store module file", err)
	}
	if want := Digest(wasm); digest != want {
		return nil, fault.Wrap("store module file", fmt.Errorf("stored as %s, want %s", digest, want))
	}
	gen := e.modules.invalidate(name)
	m, err := e.store.ModuleInsert(ctx, &store.ModuleInsertParams{
		Name: name, Digest: digest, Size: int64(len(wasm)), Functions: fns,
	})
	if err != nil {
		return nil, fault.Wrap("record module", err)
	}
	e.modules.put(m, gen)
	e.loads.markLoaded(digest)
	e.log.Info("module deployed", "module", name, "version", m.Version, "digest", digest)
	return m, nil
}

// compileFunctions compiles wasm with the Executor and returns the functions
// it exports. The Executor's fault.ModuleInvalid, and a function without a
// name, of another kind or exported twice, are fault.ModuleInvalid; an error
// without a code of its own stays fault.Internal, its text kept for the logs.
func (e *Engine) compileFunctions(ctx context.Context, wasm []byte) ([]store.Function, error) {
	info, err := e.exec.Compile(ctx, wasm)
	switch {
	case err == nil:
	case fault.CodeOf(err) == fault.Internal:
		return nil, fault.Wrap("compile module", err)
	default:
		return nil, err
	}
	fns := make([]store.Function, 0, len(info.Functions))
	seen := make(map[string]bool, len(info.Functions))
	for _, f := range info.Functions {
		k := store.Kind(f.Kind)
		if f.Name == "" || !k.Valid() {
			return nil, fault.Errorf(fault.ModuleInvalid, "function %q has kind %q; want activity or workflow", f.Name, f.Kind)
		}
		if seen[f.Name] {
			return nil, fault.Errorf(fault.ModuleInvalid, "function %q is exported twice", f.Name)
		}
		seen[f.Name] = true
		fns = append(fns, store.Function{Name: f.Name, Kind: k})
	}
	return fns, nil
}

// ModuleGet returns the latest version of a module, or fault.ModuleNotFound.
func (e *Engine) ModuleGet(ctx context.Context, name string) (*store.Module, error) {
	gen := e.modules.generation(name)
	if m := e.modules.get(name); m != nil {
		return m, nil
	}
	m, err := e.store.ModuleGet(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.ModuleNotFound, "module %q is not deployed", name)
	case err != nil:
		return nil, fault.Wrap("get module", err)
	}
	e.modules.put(m, gen)
	return m, nil
}

// ModuleList returns the latest version of every module, by name.
func (e *Engine) ModuleList(ctx context.Context) ([]*store.Module, error) {
	ms, err := e.store.ModuleList(ctx)
	if err != nil {
		return nil, fault.Wrap("list modules", err)
	}
	return ms, nil
}

// ModuleDelete removes every version of a module's metadata; new tasks can
// no longer name it. Tasks already created keep running on their pinned
// digest, so the file stays on disk. It returns fault.ModuleNotFound for an
// unknown name.
func (e *Engine) ModuleDelete(ctx context.Context, name string) error {
	e.modules.invalidate(name)
	err := e.store.ModuleDelete(ctx, name)
	e.modules.invalidate(name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Errorf(fault.ModuleNotFound, "module %q is not deployed", name)
	case err != nil:
		return fault.Wrap("delete module", err)
	}
	e.log.Info("module deleted", "module", name)
	return nil
}

// moduleBytes reads a module file, verified against its digest. A missing
// file is fault.ModuleNotFound; a file that cannot be read back intact is
// fault.ModuleInvalid, with the cause kept for the logs.
func (e *Engine) moduleBytes(ctx context.Context, digest string) ([]byte, error) {
	wasm, err := e.files.Get(ctx, digest)
	if err == nil {
		return wasm, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if ok, herr := e.files.Has(digest); herr == nil && !ok {
		return nil, fault.Errorf(fault.ModuleNotFound, "module file %s is missing", digest)
	}
	e.log.Error("read module file", "digest", digest, "error", err)
	return nil, &fault.Error{Code: fault.ModuleInvalid, Message: fmt.Sprintf("module file %s cannot be read intact", digest), Err: err}
}

// loadModule makes sure the module with digest is compiled, once per
// digest for the life of the engine: the first task of a module reads the
// file and compiles it while in status loading; tasks of a digest already
// loaded go straight on. Concurrent loads of one digest share the work; a
// failed load is tried again by the next task.
func (e *Engine) loadModule(ctx context.Context, digest string) error {
	le, owner := e.loads.enter(digest)
	if !owner {
		select {
		case <-le.done:
			return le.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wasm, err := e.moduleBytes(ctx, digest)
	if err == nil {
		_, err = e.exec.Compile(ctx, wasm)
		if err != nil && fault.CodeOf(err) == fault.Internal {
			err = &fault.Error{Code: fault.ModuleInvalid, Message: "invalid module " + digest, Err: err}
		}
	}
	e.loads.leave(digest, le, err)
	return err
}

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

// markLoaded records a digest compiled outside loadModule (at deploy).
func (c *loadCache) markLoaded(digest string) {
	c.mu.Lock()
	if _, ok := c.m[digest]; !ok {
		c.m[digest] = loadedEntry
	}
	c.mu.Unlock()
}

// moduleCache keeps the latest version of each module name read, so task
// creation does not read the modules table each time. Deploy and delete
// invalidate a name; a generation per name keeps a read that raced with an
// invalidation from filling the cache with a stale version.
type moduleCache struct {
	mu  sync.RWMutex
	m   map[string]*store.Module
	gen map[string]uint64
}

func (c *moduleCache) get(name string) *store.Module {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[name]
}

func (c *moduleCache) generation(name string) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen[name]
}

// put caches m unless its name was invalidated since generation gen.
func (c *moduleCache) put(m *store.Module, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[m.Name] == gen {
		c.m[m.Name] = m
	}
}

// invalidate drops a name and returns its new generation.
func (c *moduleCache) invalidate(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == nil {
		c.gen = make(map[string]uint64)
	}
	delete(c.m, name)
	c.gen[name]++
	return c.gen[name]
}
