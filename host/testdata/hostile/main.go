// Command hostile is a test guest that speaks weft ABI v1 by hand, without
// the SDK, and misbehaves in every way the host must survive: each function
// breaks one rule. The host's tests call it (hostile_test.go).
//
// Build (the committed host/testdata/hostile.wasm is this command's output):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o host/testdata/hostile.wasm ./host/testdata/hostile
package main

import (
	"os"
	"runtime"
	"unsafe"

	"github.com/weft-run/weft/codec"
)

func main() {}

//go:wasmimport weft:env/v1 log
func hostLog(level int32, msg uint64)

//go:wasmimport weft:env/v1 set_output
func setOutput(frame uint64)

//go:wasmimport weft:env/v1 set_error
func setError(frame uint64)

//go:wasmimport weft:env/v1 blob_read
func blobRead(dst uint64)

//go:wasmimport weft:activity/v1 checkpoint
func checkpoint(frame uint64)

//go:wasmimport weft:workflow/v1 now
func now() int64

//go:wasmimport weft:workflow/v1 future_read
func futureRead(id int64, dst uint64) int64

func pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func packBytes(b []byte) uint64 { return pack(addr(b), uint32(len(b))) }

var allocs = map[uint32][]byte{}

//go:wasmexport weft_abi_version
func abiVersion() int32 { return 1 }

// badAllocAbove is the size from which weft_alloc returns an address
// outside memory.
const badAllocAbove = 1 << 20

//go:wasmexport weft_alloc
func alloc(size uint32) uint32 {
	if size >= badAllocAbove {
		return 0xfff00000
	}
	b := make([]byte, size)
	allocs[addr(b)] = b
	return addr(b)
}

//go:wasmexport weft_free
func free(ptr, _ uint32) { delete(allocs, ptr) }

var manifest []byte

func init() {
	fn := func(name, kind string) codec.Value {
		return codec.Map(codec.Entry{Key: "name", Value: codec.String(name)}, codec.Entry{Key: "kind", Value: codec.String(kind)})
	}
	var fns []codec.Value
	for name := range handlers {
		fns = append(fns, fn(name, "activity"))
	}
	fns = append(fns, fn("wf_checkpoint", "workflow"), fn("wf_no_host", "workflow"), fn("wf_future_read_oob", "workflow"))
	var err error
	manifest, err = codec.EncodeFrame(codec.Map(
		codec.Entry{Key: "abi_version", Value: codec.Long(1)},
		codec.Entry{Key: "functions", Value: codec.List(fns...)},
	))
	if err != nil {
		panic(err)
	}
}

//go:wasmexport weft_manifest
func weftManifest() uint64 { return packBytes(manifest) }

var keep [][]byte

// handlers are the activities; each returns the status weft_call returns.
var handlers = map[string]func(input []byte) int32{
	// echo behaves: the host must keep serving it between hostile calls.
	"echo": func(in []byte) int32 {
		setOutput(packBytes(in))
		return 0
	},
	"trap": func([]byte) int32 {
		runtime.Breakpoint()
		return 0
	},
	// An output whose pointer plus length overflows 32 bits.
	"overflow_output": func([]byte) int32 {
		setOutput(pack(0xffffff00, 0x200))
		return 0
	},
	// An output that starts outside memory.
	"oob_output": func([]byte) int32 {
		setOutput(pack(0xf0000000, 16))
		return 0
	},
	// An output longer than the whole memory.
	"huge_output": func([]byte) int32 {
		setOutput(pack(16, 0xfffffff0))
		return 0
	},
	// A log message outside memory.
	"oob_log": func([]byte) int32 {
		hostLog(2, pack(0xfffffff0, 64))
		return 0
	},
	// Asks its own allocator for 4 GiB.
	"alloc_4gib": func([]byte) int32 {
		b := make([]byte, 4<<30-1)
		keep = append(keep, b)
		return 0
	},
	"spin": func([]byte) int32 {
		for i := 0; ; i++ {
			if i < 0 {
				return 0
			}
		}
	},
	// A list nested a million levels deep (3 MB), far past the depth limit.
	"deep_output": func([]byte) int32 {
		const depth = 1_000_000
		f := make([]byte, 0, 10+3*depth+1)
		f = append(f, 0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37)
		for range depth {
			f = append(f, 0x0c, 0x02) // union branch list, block of one item
		}
		f = append(f, 0x00) // null
		for range depth {
			f = append(f, 0x00) // end of block
		}
		setOutput(packBytes(f))
		return 0
	},
	// An activity calling a workflow-only import.
	"workflow_import": func([]byte) int32 {
		now()
		return 0
	},
	"exit": func([]byte) int32 {
		os.Stderr.WriteString("giving up\n")
		os.Exit(3)
		return 0
	},
	// Looks for a filesystem, an environment and arguments: the sandbox
	// has none, and the output says what it found.
	"sandbox": func([]byte) int32 {
		_, ferr := os.ReadFile("/etc/passwd")
		entries, derr := os.ReadDir("/")
		cwd, _ := os.Getwd()
		f, _ := codec.EncodeFrame(codec.Map(
			codec.Entry{Key: "read_file", Value: codec.Bool(ferr == nil)},
			codec.Entry{Key: "read_dir", Value: codec.Bool(derr == nil && len(entries) > 0)},
			codec.Entry{Key: "env", Value: codec.Long(int64(len(os.Environ())))},
			codec.Entry{Key: "args", Value: codec.Long(int64(len(os.Args)))},
			codec.Entry{Key: "cwd", Value: codec.String(cwd)},
		))
		setOutput(packBytes(f))
		return 0
	},
	"bad_status": func([]byte) int32 { return 7 },
	"no_output":  func([]byte) int32 { return 0 },
	"not_a_frame": func([]byte) int32 {
		setOutput(packBytes([]byte("hello")))
		return 0
	},
	"output_twice": func(in []byte) int32 {
		setOutput(packBytes(in))
		setOutput(packBytes(in))
		return 0
	},
	// An error Value without its type.
	"untyped_error": func([]byte) int32 {
		f, _ := codec.EncodeFrame(codec.Map(codec.Entry{Key: "message", Value: codec.String("no type")}))
		setError(packBytes(f))
		return 1
	},
	"blob_read_nothing": func([]byte) int32 {
		b := make([]byte, 8)
		blobRead(packBytes(b))
		return 0
	},
	"suspend_activity": func([]byte) int32 { return 2 },
	// A Go panic nobody recovers: the Go runtime prints it and exits.
	"panic": func([]byte) int32 {
		panic("hostile panic")
	},
}

var workflows = map[string]func(input []byte) int32{
	// A workflow calling an activity-only import.
	"wf_checkpoint": func(in []byte) int32 {
		checkpoint(packBytes(in))
		return 0
	},
	// A workflow whose call has no WorkflowHost.
	"wf_no_host": func([]byte) int32 {
		now()
		return 0
	},
	// A workflow reading future 1 into memory it does not have.
	"wf_future_read_oob": func([]byte) int32 {
		futureRead(1, pack(0xf0000000, 64))
		return 0
	},
}

//go:wasmexport weft_call
func weftCall(name, input uint64) int32 {
	np, nl := uint32(name>>32), uint32(name)
	b := allocs[np]
	fn := string(b[:nl])
	in := b[nl : nl+uint32(input)]
	if h, ok := handlers[fn]; ok {
		return h(in)
	}
	return workflows[fn](in)
}
