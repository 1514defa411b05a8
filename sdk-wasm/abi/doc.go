// Package abi holds the constants of weft's wire contract between the host
// and a guest module: the ABI version, the names of the host import modules
// and their functions, the names of the guest exports, the status a call
// returns, the outcome of a workflow future, the failure codes of a call, the
// field names of the manifest and of the error value, and the packing of a
// pointer and a length into one u64.
//
// The contract itself, with every signature and the ownership rules of guest
// memory, is documented in docs/abi.md ("weft ABI v1"). This package is its
// single source of truth on the Go side: the host (package host) and the Go
// guest SDK (sdk-wasm/activity, sdk-wasm/workflow) both import it, and
// nothing else repeats these strings.
//
// The package is a leaf: standard library only, and it builds for
// GOOS=wasip1 GOARCH=wasm.
//
// # Packing
//
// A guest buffer travels as one u64 with the pointer in the high 32 bits and
// the length in the low 32 bits (docs/abi.md, "Pointers and lengths"):
//
//	packed := abi.Pack(ptr, n)
//	ptr, n = abi.Unpack(packed)
package abi
