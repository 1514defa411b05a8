// Package host runs weft plugins: WebAssembly modules that speak weft ABI v1
// (docs/abi.md), sandboxed in wazero.
//
// A Host owns one wazero runtime with an optional on-disk compilation cache,
// compiles each module once per digest, and keeps a pool of instances per
// module and memory limit; an instance serves one call at a time and is
// thrown away after a trap, a timeout, a cancellation or any other failure.
// Guests get WASI with no preopened directories, no environment and no
// arguments; their stdout and stderr become log lines of the call.
//
// # Usage
//
//	h, err := host.New(host.Config{CacheDir: filepath.Join(dataDir, "wazero")})
//	...
//	defer h.Close(ctx)
//	info, err := h.Compile(ctx, wasm) // deploy: validates exports, ABI version, manifest
//	res, err := h.Call(ctx, &host.CallRequest{
//		Digest:   info.Digest,
//		Function: "echo",
//		Input:    frame, // a single-object Avro Value frame (package codec)
//	})
//
// A non-nil error from Call is a failure on the host side and carries an
// abi.Code (see Error): trap, timeout, cancelled, memory_limit, bad_blob,
// bad_pointer, import_not_allowed and so on. An application error the guest
// returned is a CallResult with Status abi.StatusError and Error set.
//
// # Memory limits
//
// wazero fixes the memory limit per runtime, but weft wants it per call.
// The host therefore runs one runtime with the largest limit and gives every
// instance its own linear-memory allocator that refuses to grow past that
// instance's limit (wazero's experimental MemoryAllocator). Instances are
// pooled per module and limit, so a call with a 16 MiB limit never runs in
// an instance created for 1 GiB. A guest that asks for more sees memory.grow
// fail; the call then fails with memory_limit.
//
// # Cancellation
//
// The runtime is built with close-on-context-done: when a call's context is
// cancelled or its timeout passes, wazero stops the guest at the next loop
// back-edge or function entry, even inside a busy loop, and a guest asleep
// in WASI's poll_oneoff wakes at once. This is the only way wazero can stop
// a guest, and it has a price: wazero starts a goroutine for every guest
// call, and leaves the guest's code for Go at every loop iteration to check
// for closure, so loop-heavy guest code runs several times slower
// (BenchmarkCloseOnContextDone). The host keeps guest calls to one per Call
// in the steady state.
//
// # Concurrency
//
// A Host is safe for concurrent use; instances are never shared between
// goroutines.
package host
