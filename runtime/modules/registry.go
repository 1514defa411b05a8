package modules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// Files holds module files on disk, content-addressed by digest
// (persistence §11.1: model files stay outside the database). *blob.Store of
// store/blob satisfies it. Its methods must be safe for concurrent use.
type Files interface {
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

// Executor is what the registry needs of the engine's executor. The engine
// adapts its own Executor to it; its methods must be safe for concurrent
// use.
type Executor interface {
	// Compile validates a module and returns the functions it exports, each
	// with the kind it declares (not checked yet). Compiling the bytes of a
	// module already compiled must be cheap. An invalid module gives an
	// error with code fault.ModuleInvalid.
	Compile(ctx context.Context, wasm []byte) ([]store.Function, error)
	// Replay runs workflow task t's function from module wasm, of digest,
	// with host answering its workflow imports, the way a worker runs it,
	// and reports whether it suspended. It records nothing. Its error is the
	// call's, with the codes of the engine's Executor.Call.
	Replay(ctx context.Context, t *store.Task, digest string, wasm []byte, host journal.WorkflowHost) (suspended bool, err error)
}

// Config configures a Registry. Store, Files and Executor are required.
type Config struct {
	// Store records the modules' versions.
	Store store.Store
	// Files holds the module files, content-addressed by digest.
	Files Files
	// Executor compiles modules and replays workflows over them.
	Executor Executor
	// Logger receives the registry's logs. Defaults to a null logger.
	Logger hclog.Logger
	// Now is the clock of the replay check. Defaults to time.Now.
	Now func() time.Time
}

// Registry deploys, reads and deletes modules and loads their digests. All
// methods are safe for concurrent use.
type Registry struct {
	store  store.Store
	files  Files
	exec   Executor
	log    hclog.Logger
	now    func() time.Time
	latest latestCache
	loads  loadCache
}

// New returns a registry over cfg.
func New(cfg Config) (*Registry, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("modules: Config.Store is required")
	case cfg.Files == nil:
		return nil, errors.New("modules: Config.Files is required")
	case cfg.Executor == nil:
		return nil, errors.New("modules: Config.Executor is required")
	}
	r := &Registry{store: cfg.Store, files: cfg.Files, exec: cfg.Executor, log: cfg.Logger, now: cfg.Now}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.latest.m = make(map[string]*store.Module)
	r.latest.gen = make(map[string]uint64)
	r.loads.m = make(map[string]*loadEntry)
	return r, nil
}

// Digest returns the content digest of a module file, "sha256:<hex>".
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Deploy validates a module with the Executor, stores its file
// content-addressed and records it as the next version of name. Deploying
// the bytes of the latest version again returns that version. Tasks already
// created keep the digest they were pinned to. It returns fault.Invalid for a
// bad name or an empty module, fault.ModuleInvalid for a module the
// Executor rejects and fault.Internal when the files or the store fail.
func (r *Registry) Deploy(ctx context.Context, name string, wasm []byte) (*store.Module, error) {
	if err := checkParams(name, wasm); err != nil {
		return nil, err
	}
	fns, err := r.compileFunctions(ctx, wasm)
	if err != nil {
		return nil, err
	}
	digest, err := r.files.Put(ctx, wasm)
	if err != nil {
		return nil, fault.Wrap("store module file", err)
	}
	if want := Digest(wasm); digest != want {
		return nil, fault.Wrap("store module file", fmt.Errorf("stored as %s, want %s", digest, want))
	}
	gen := r.latest.invalidate(name)
	m, err := r.store.ModuleInsert(ctx, &store.ModuleInsertParams{
		Name: name, Digest: digest, Size: int64(len(wasm)), Functions: fns,
	})
	if err != nil {
		return nil, fault.Wrap("record module", err)
	}
	r.latest.put(m, gen)
	r.loads.markLoaded(digest)
	r.log.Info("module deployed", "module", name, "version", m.Version, "digest", digest)
	return m, nil
}

// checkParams returns fault.Invalid for a bad module name or an empty
// module file.
func checkParams(name string, wasm []byte) error {
	if !store.ValidModuleName(name) {
		return fault.ParamErrorf("name", "module name %q must be 1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit", name)
	}
	if len(wasm) == 0 {
		return fault.ParamErrorf("body", "the module file is empty")
	}
	return nil
}

// compileFunctions compiles wasm with the Executor and returns the functions
// it exports. The Executor's fault.ModuleInvalid, and a function without a
// name, of another kind or exported twice, are fault.ModuleInvalid; an error
// without a code of its own stays fault.Internal, its text kept for the logs.
func (r *Registry) compileFunctions(ctx context.Context, wasm []byte) ([]store.Function, error) {
	fns, err := r.exec.Compile(ctx, wasm)
	switch {
	case err == nil:
	case fault.CodeOf(err) == fault.Internal:
		return nil, fault.Wrap("compile module", err)
	default:
		return nil, err
	}
	seen := make(map[string]bool, len(fns))
	for _, f := range fns {
		if f.Name == "" || !f.Kind.Valid() {
			return nil, fault.Errorf(fault.ModuleInvalid, "function %q has kind %q; want activity or workflow", f.Name, f.Kind)
		}
		if seen[f.Name] {
			return nil, fault.Errorf(fault.ModuleInvalid, "function %q is exported twice", f.Name)
		}
		seen[f.Name] = true
	}
	return fns, nil
}

// Get returns the latest version of a module, from the cache when it holds
// the name. It returns fault.ModuleNotFound for a name not deployed and
// fault.Internal when the store fails.
func (r *Registry) Get(ctx context.Context, name string) (*store.Module, error) {
	gen := r.latest.generation(name)
	if m := r.latest.get(name); m != nil {
		return m, nil
	}
	m, err := r.store.ModuleGet(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.ModuleNotFound, "module %q is not deployed", name)
	case err != nil:
		return nil, fault.Wrap("get module", err)
	}
	r.latest.put(m, gen)
	return m, nil
}

// List returns the latest version of every module, by name, read from the
// store. It returns fault.Internal when the store fails.
func (r *Registry) List(ctx context.Context) ([]*store.Module, error) {
	ms, err := r.store.ModuleList(ctx)
	if err != nil {
		return nil, fault.Wrap("list modules", err)
	}
	return ms, nil
}

// Delete removes every version of a module's metadata; new tasks can no
// longer name it. Tasks already created keep running on their pinned
// digest, so the file stays on disk. It returns fault.ModuleNotFound for an
// unknown name and fault.Internal when the store fails.
func (r *Registry) Delete(ctx context.Context, name string) error {
	r.latest.invalidate(name)
	err := r.store.ModuleDelete(ctx, name)
	r.latest.invalidate(name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Errorf(fault.ModuleNotFound, "module %q is not deployed", name)
	case err != nil:
		return fault.Wrap("delete module", err)
	}
	r.log.Info("module deleted", "module", name)
	return nil
}

// Function returns the latest version of module and the kind of its
// function, for pinning a new task to them. It returns Get's codes and
// fault.FunctionNotFound (param function) when that version exports no such
// function.
func (r *Registry) Function(ctx context.Context, module, function string) (*store.Module, store.Kind, error) {
	m, err := r.Get(ctx, module)
	if err != nil {
		return nil, "", err
	}
	for _, f := range m.Functions {
		if f.Name == function {
			return m, f.Kind, nil
		}
	}
	return nil, "", &fault.Error{
		Code: fault.FunctionNotFound, Param: "function",
		Message: fmt.Sprintf("module %q (version %d) exports no function %q", m.Name, m.Version, function),
	}
}

// FunctionDigest is the journal.DigestFunc of a workflow run: the digest
// of the latest version of module, whose manifest must list function with
// kind (an activity, or a workflow for a child workflow). It returns
// Function's codes, and fault.FunctionNotFound for a function of another
// kind.
func (r *Registry) FunctionDigest(ctx context.Context, module, function string, want store.Kind) (string, error) {
	m, kind, err := r.Function(ctx, module, function)
	if err != nil {
		return "", err
	}
	if kind != want {
		article := "a"
		if want == store.KindActivity {
			article = "an"
		}
		return "", fault.Errorf(fault.FunctionNotFound, "%s in module %q is a %s, not %s %s", function, module, kind, article, want)
	}
	return m.Digest, nil
}
