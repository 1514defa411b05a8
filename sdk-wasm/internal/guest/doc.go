// Package guest is the Go guest's side of weft ABI v1 (docs/abi.md): the
// registry of functions, the manifest, the weft_alloc/weft_free allocation
// table, and the dispatch of weft_call with its output, error and suspension
// paths. The raw //go:wasmexport declarations live in exports_wasip1.go.
// sdk-wasm/activity and sdk-wasm/workflow are its public faces.
package guest
