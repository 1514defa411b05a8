package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// ModuleInfo is what Compile found in a module.
type ModuleInfo struct {
	// Digest is "sha256:" and the hex SHA-256 of the module's bytes.
	Digest string
	// ABIVersion is the ABI version the module speaks (abi.Version).
	ABIVersion int
	// Functions are the functions of the manifest, in its order.
	Functions []Function
	// Size is the module's size in bytes.
	Size int
	// MinMemory is the memory, in bytes, the module needs at start; a call
	// whose memory limit is lower fails with memory_limit.
	MinMemory int64
}

// Function is one function of a manifest.
type Function struct {
	// Name is the function's name.
	Name string
	// Kind is abi.KindActivity or abi.KindWorkflow.
	Kind abi.Kind
}

// Digest returns the digest of wasm: "sha256:" and the hex SHA-256.
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// module is one compiled module and its instance pools.
type module struct {
	digest   string
	ready    chan struct{} // closed once compiled (or failed)
	err      error
	compiled wazero.CompiledModule
	info     ModuleInfo
	kinds    map[string]abi.Kind
	minPages uint32
	pools    sync.Map // limit in pages → *pool
	logs     *moduleLogs
}

// Compile validates wasm as a weft plugin and compiles it, or returns the
// module already compiled under the same digest. It reads the manifest from
// a first instance, which then waits in the pool for the first call. It
// fails with invalid_module (not WebAssembly, a WASI command rather than a
// reactor, an import the host does not provide), abi_mismatch (another ABI
// version), missing_export (a required export is missing or has the wrong
// signature) or invalid_manifest, each with a message for the plugin's
// author; with trap, exited or memory_limit when the module fails while it
// initializes; or with host_closed.
func (h *Host) Compile(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.calls.Done()
	m, err := h.load(ctx, Digest(wasm), func(context.Context) ([]byte, error) { return wasm, nil })
	if err != nil {
		return nil, err
	}
	info := m.info
	info.Functions = slices.Clone(info.Functions)
	return &info, nil
}

// Module returns what Compile found in the module of digest, if the host
// has it compiled.
func (h *Host) Module(digest string) (*ModuleInfo, bool) {
	v, ok := h.modules.Load(digest)
	if !ok {
		return nil, false
	}
	m := v.(*module)
	select {
	case <-m.ready:
	default:
		return nil, false
	}
	if m.err != nil {
		return nil, false
	}
	info := m.info
	info.Functions = slices.Clone(info.Functions)
	return &info, true
}

// Unload closes the idle instances and the compiled form of digest. Calls
// running in it finish normally; a later call compiles it again. Unloading
// an unknown digest does nothing.
func (h *Host) Unload(ctx context.Context, digest string) error {
	v, ok := h.modules.LoadAndDelete(digest)
	if !ok {
		return nil
	}
	m := v.(*module)
	<-m.ready
	if m.err != nil {
		return nil
	}
	m.pools.Range(func(_, p any) bool {
		p.(*pool).drain(ctx)
		return true
	})
	if err := m.compiled.Close(ctx); err != nil {
		return fmt.Errorf("unload %s: %w", shortDigest(digest), err)
	}
	return nil
}

// load returns the compiled module of digest, compiling the bytes wasm
// returns on a miss. Concurrent loads of one digest compile once.
func (h *Host) load(ctx context.Context, digest string, wasm func(context.Context) ([]byte, error)) (*module, error) {
	if v, ok := h.modules.Load(digest); ok {
		return v.(*module).wait(ctx)
	}
	if wasm == nil {
		return nil, errorf(abi.CodeModuleNotFound, "module %s is not compiled and the request carries no way to load it", shortDigest(digest))
	}
	m := &module{digest: digest, ready: make(chan struct{}), logs: newModuleLogs(h.cfg.Logs)}
	if v, loaded := h.modules.LoadOrStore(digest, m); loaded {
		return v.(*module).wait(ctx)
	}
	m.err = h.compile(ctx, m, wasm)
	if m.err != nil {
		h.modules.CompareAndDelete(digest, m)
	}
	close(m.ready)
	return m, m.err
}

// wait returns m once compiled.
func (m *module) wait(ctx context.Context) (*module, error) {
	select {
	case <-m.ready:
	default:
		select {
		case <-m.ready:
		case <-ctx.Done():
			return nil, wrapf(abi.CodeCancelled, ctx.Err(), "wait for module %s to compile", shortDigest(m.digest))
		}
	}
	if m.err != nil {
		return nil, m.err
	}
	return m, nil
}

// requiredExports are the function exports of ABI v1 with their
// signatures (docs/abi.md, "Guest exports").
var requiredExports = []struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
}{
	{abi.ExportABIVersion, nil, []api.ValueType{i32}},
	{abi.ExportAlloc, []api.ValueType{i32}, []api.ValueType{i32}},
	{abi.ExportFree, []api.ValueType{i32, i32}, nil},
	{abi.ExportManifest, nil, []api.ValueType{i64}},
	{abi.ExportCall, []api.ValueType{i64, i64}, []api.ValueType{i32}},
}

// compile compiles and validates m.
func (h *Host) compile(ctx context.Context, m *module, load func(context.Context) ([]byte, error)) error {
	wasm, err := load(ctx)
	if err != nil {
		return wrapf(abi.CodeModuleNotFound, err, "load module %s", shortDigest(m.digest))
	}
	if d := Digest(wasm); d != m.digest {
		return errorf(abi.CodeInvalidModule, "module bytes have digest %s, not the requested %s", d, m.digest)
	}
	if err := h.admit(ctx, m.digest, wasm); err != nil {
		return err
	}
	cm, err := h.rt.CompileModule(ctx, wasm)
	if err != nil {
		return wrapf(abi.CodeInvalidModule, err, "not a valid WebAssembly module")
	}
	if err := h.checkModule(cm); err != nil {
		_ = cm.Close(ctx)
		return err
	}
	m.compiled = cm
	m.minPages = cm.ExportedMemories()[abi.ExportMemory].Min()
	m.info = ModuleInfo{Digest: m.digest, Size: len(wasm), MinMemory: int64(m.minPages) * pageSize}
	if err := h.inspect(ctx, m); err != nil {
		_ = cm.Close(ctx)
		return err
	}
	return nil
}

// admit runs the admission of a module about to be compiled: the
// structural check, then the embedder's Precompile, unless the embedder
// says the digest was admitted already.
func (h *Host) admit(ctx context.Context, digest string, wasm []byte) error {
	if h.cfg.Admitted != nil && h.cfg.Admitted(digest) {
		return nil
	}
	if err := h.cfg.admit(wasm); err != nil {
		return err
	}
	if pre := h.cfg.Precompile; pre != nil {
		if err := pre(ctx, digest, wasm); err != nil {
			var he *Error
			if errors.As(err, &he) {
				return he
			}
			return wrapf(abi.CodeInvalidModule, err, "compile module %s", shortDigest(digest))
		}
	}
	return nil
}

// checkModule checks what can be checked without running the module: its
// imports, that it is a reactor, and its exports.
func (h *Host) checkModule(cm wazero.CompiledModule) error {
	for _, imp := range cm.ImportedFunctions() {
		mod, name, _ := imp.Import()
		if err := h.checkImport(mod, name, imp); err != nil {
			return err
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return errorf(abi.CodeInvalidModule, "the module imports a memory; a weft plugin must define and export its own memory")
	}
	exports := cm.ExportedFunctions()
	if _, start := exports[abi.ExportStart]; start {
		if _, init := exports[abi.ExportInitialize]; !init {
			return errorf(abi.CodeInvalidModule, "the module is a WASI command (it exports _start); a weft plugin is a reactor: "+
				"build Go plugins with -buildmode=c-shared, C plugins with -mexec-model=reactor")
		}
	}
	if _, ok := cm.ExportedMemories()[abi.ExportMemory]; !ok {
		return errorf(abi.CodeMissingExport, "the module does not export its memory as %q", abi.ExportMemory)
	}
	for _, want := range requiredExports {
		def, ok := exports[want.name]
		if !ok {
			if want.name == abi.ExportABIVersion {
				return errorf(abi.CodeMissingExport, "the module does not export %s: it was not built with a weft SDK for ABI v%d (docs/abi.md)", want.name, abi.Version)
			}
			return errorf(abi.CodeMissingExport, "the module does not export %s %s (docs/abi.md, weft ABI v%d)", want.name, signature(want.params, want.results), abi.Version)
		}
		if !slices.Equal(def.ParamTypes(), want.params) || !slices.Equal(def.ResultTypes(), want.results) {
			return errorf(abi.CodeMissingExport, "the module exports %s as %s; weft ABI v%d wants %s",
				want.name, signature(def.ParamTypes(), def.ResultTypes()), abi.Version, signature(want.params, want.results))
		}
	}
	return nil
}

// checkImport checks one imported function against what the host provides.
func (h *Host) checkImport(mod, name string, imp api.FunctionDefinition) error {
	if strings.HasPrefix(mod, "weft:") {
		if mod != abi.ModuleEnv && mod != abi.ModuleActivity && mod != abi.ModuleWorkflow {
			return errorf(abi.CodeABIMismatch, "the module imports %s.%s; this host speaks weft ABI v%d (%s, %s, %s): rebuild the plugin with a matching SDK",
				mod, name, abi.Version, abi.ModuleEnv, abi.ModuleActivity, abi.ModuleWorkflow)
		}
	} else if mod != abi.ModuleWASI {
		return errorf(abi.CodeInvalidModule, "the module imports %s.%s; weft provides only %s, %s, %s and %s",
			mod, name, abi.ModuleEnv, abi.ModuleActivity, abi.ModuleWorkflow, abi.ModuleWASI)
	}
	provider := h.rt.Module(mod)
	def, ok := provider.ExportedFunctionDefinitions()[name]
	if !ok {
		if mod == abi.ModuleWASI {
			return errorf(abi.CodeInvalidModule, "the module imports %s.%s, which the host's WASI does not provide", mod, name)
		}
		return errorf(abi.CodeABIMismatch, "the module imports %s.%s, which this host does not provide: the plugin needs a newer weft", mod, name)
	}
	if !slices.Equal(def.ParamTypes(), imp.ParamTypes()) || !slices.Equal(def.ResultTypes(), imp.ResultTypes()) {
		return errorf(abi.CodeABIMismatch, "the module imports %s.%s as %s; the host provides %s", mod, name,
			signature(imp.ParamTypes(), imp.ResultTypes()), signature(def.ParamTypes(), def.ResultTypes()))
	}
	return nil
}

// inspect creates the module's first instance, checks its ABI version and
// reads its manifest, then parks the instance in the default pool.
func (h *Host) inspect(ctx context.Context, m *module) error {
	pages := h.cfg.pagesFor(0)
	inst, err := h.newInstance(ctx, m, pages)
	if err != nil {
		return err
	}
	keep := false
	inst.logs.begin(h.cfg.Logs, time.Now())
	defer func() {
		inst.stdout.flush()
		inst.stderr.flush()
		inst.endLogs()
		if !keep {
			inst.close()
		}
	}()
	ictx, cancel := context.WithTimeout(inst.withCall(ctx), h.cfg.InitTimeout)
	defer cancel()
	stack := inst.stack[:]
	if err := inst.mod.ExportedFunction(abi.ExportABIVersion).CallWithStack(ictx, stack); err != nil {
		return inst.failure(ictx, err, "call "+abi.ExportABIVersion)
	}
	if v := int32(uint32(stack[0])); v != abi.Version {
		return errorf(abi.CodeABIMismatch, "the module speaks weft ABI v%d; this host speaks v%d: rebuild the plugin with a matching SDK", v, abi.Version)
	}
	if err := inst.mod.ExportedFunction(abi.ExportManifest).CallWithStack(ictx, stack); err != nil {
		return inst.failure(ictx, err, "call "+abi.ExportManifest)
	}
	ptr, n := abi.Unpack(stack[0])
	view, ok := inst.mem.Read(ptr, n)
	if !ok {
		return errorf(abi.CodeInvalidManifest, "weft_manifest returned %d bytes at %#x, outside the module's %d-byte memory", n, ptr, inst.mem.Size())
	}
	fns, err := parseManifest(view, h.cfg.Limits)
	if err != nil {
		return err
	}
	m.info.ABIVersion = abi.Version
	m.info.Functions = fns
	m.kinds = make(map[string]abi.Kind, len(fns))
	for _, f := range fns {
		m.kinds[f.Name] = f.Kind
	}
	keep = true
	m.pool(pages, h.cfg.MaxIdle).put(inst)
	return nil
}

// functionNames lists m's functions for error messages.
func (m *module) functionNames() string {
	names := make([]string, 0, len(m.kinds))
	for n := range m.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// pool returns m's pool of instances limited to pages.
func (m *module) pool(pages uint32, maxIdle int) *pool {
	if p, ok := m.pools.Load(pages); ok {
		return p.(*pool)
	}
	p, _ := m.pools.LoadOrStore(pages, &pool{pages: pages, max: maxIdle})
	return p.(*pool)
}

// signature renders a wasm function type, e.g. "func(i64, i64) -> i32".
func signature(params, results []api.ValueType) string {
	var b strings.Builder
	b.WriteString("func(")
	for i, p := range params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(api.ValueTypeName(p))
	}
	b.WriteString(")")
	if len(results) > 0 {
		b.WriteString(" -> ")
		for i, r := range results {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(api.ValueTypeName(r))
		}
	}
	return b.String()
}
