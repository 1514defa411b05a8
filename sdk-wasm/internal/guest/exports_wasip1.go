//go:build wasip1

package guest

import (
	"unsafe"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// The guest exports of weft ABI v1; docs/abi.md documents each one.

//go:wasmexport weft_abi_version
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport weft_alloc
func exportAlloc(size uint32) uint32 { return Alloc(size) }

//go:wasmexport weft_free
func exportFree(ptr, size uint32) { Free(ptr, size) }

//go:wasmexport weft_manifest
func exportManifest() uint64 {
	m := Manifest()
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(m)))), uint32(len(m)))
}

//go:wasmexport weft_call
func exportCall(name, input uint64) int32 { return int32(Call(name, input)) }
