// Package wasmgen assembles small WebAssembly modules in memory, for tests
// that need a module no compiler would emit: a missing export, a wrong ABI
// version, a bad manifest, a guest of another plugin system. It writes the
// binary format of WebAssembly core 1.0 (sections type, import, function,
// memory, export, code, data) and nothing more.
package wasmgen

import "encoding/binary"

// Value types.
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Module is a module under construction. Declare every import before the
// first function: imported functions come first in the index space.
type Module struct {
	types   [][2][]byte
	imports []imp
	funcs   []fn
	memory  *[2]uint32 // min, max (max 0: none)
	exports []export
	data    []data
}

type imp struct {
	module, name string
	typ          uint32
}

type fn struct {
	typ    uint32
	locals []byte
	body   []byte
	raw    bool // body is the whole encoded body: local declarations, instructions, end
}

type export struct {
	name string
	kind byte
	idx  uint32
}

type data struct {
	offset uint32
	bytes  []byte
}

func (m *Module) typeOf(params, results []byte) uint32 {
	for i, t := range m.types {
		if string(t[0]) == string(params) && string(t[1]) == string(results) {
			return uint32(i)
		}
	}
	m.types = append(m.types, [2][]byte{params, results})
	return uint32(len(m.types) - 1)
}

// Import declares an imported function and returns its index.
func (m *Module) Import(module, name string, params, results []byte) uint32 {
	if len(m.funcs) > 0 {
		panic("wasmgen: declare imports before functions")
	}
	m.imports = append(m.imports, imp{module, name, m.typeOf(params, results)})
	return uint32(len(m.imports) - 1)
}

// Func defines a function with extra locals (their types) and a body (the
// instructions, without the final end) and returns its index.
func (m *Module) Func(params, results, locals []byte, body ...[]byte) uint32 {
	var b []byte
	for _, part := range body {
		b = append(b, part...)
	}
	m.funcs = append(m.funcs, fn{typ: m.typeOf(params, results), locals: locals, body: b})
	return uint32(len(m.imports) + len(m.funcs) - 1)
}

// RawFunc defines a function whose body is given encoded in full: its
// local declarations, its instructions and the final end. It returns the
// function's index.
func (m *Module) RawFunc(params, results, body []byte) uint32 {
	m.funcs = append(m.funcs, fn{typ: m.typeOf(params, results), body: body, raw: true})
	return uint32(len(m.imports) + len(m.funcs) - 1)
}

// Memory defines the memory with min pages and, when max > 0, a maximum.
func (m *Module) Memory(min, max uint32) { m.memory = &[2]uint32{min, max} }

// Export exports function idx as name.
func (m *Module) Export(name string, idx uint32) { m.exports = append(m.exports, export{name, 0, idx}) }

// ExportMemory exports the memory as name.
func (m *Module) ExportMemory(name string) { m.exports = append(m.exports, export{name, 2, 0}) }

// Data places bytes in memory at offset.
func (m *Module) Data(offset uint32, bytes []byte) { m.data = append(m.data, data{offset, bytes}) }

// Bytes returns the encoded module.
func (m *Module) Bytes() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	section := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	vec := func(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }
	name := func(b []byte, s string) []byte { return append(vec(b, len(s)), s...) }
	if len(m.types) > 0 {
		b := vec(nil, len(m.types))
		for _, t := range m.types {
			b = append(b, 0x60)
			b = append(vec(b, len(t[0])), t[0]...)
			b = append(vec(b, len(t[1])), t[1]...)
		}
		section(1, b)
	}
	if len(m.imports) > 0 {
		b := vec(nil, len(m.imports))
		for _, i := range m.imports {
			b = name(name(b, i.module), i.name)
			b = append(b, 0x00)
			b = binary.AppendUvarint(b, uint64(i.typ))
		}
		section(2, b)
	}
	if len(m.funcs) > 0 {
		b := vec(nil, len(m.funcs))
		for _, f := range m.funcs {
			b = binary.AppendUvarint(b, uint64(f.typ))
		}
		section(3, b)
	}
	if m.memory != nil {
		b := vec(nil, 1)
		if m.memory[1] > 0 {
			b = append(b, 0x01)
			b = binary.AppendUvarint(b, uint64(m.memory[0]))
			b = binary.AppendUvarint(b, uint64(m.memory[1]))
		} else {
			b = append(b, 0x00)
			b = binary.AppendUvarint(b, uint64(m.memory[0]))
		}
		section(5, b)
	}
	if len(m.exports) > 0 {
		b := vec(nil, len(m.exports))
		for _, e := range m.exports {
			b = name(b, e.name)
			b = append(b, e.kind)
			b = binary.AppendUvarint(b, uint64(e.idx))
		}
		section(7, b)
	}
	if len(m.funcs) > 0 {
		b := vec(nil, len(m.funcs))
		for _, f := range m.funcs {
			if f.raw {
				b = append(vec(b, len(f.body)), f.body...)
				continue
			}
			body := vec(nil, len(f.locals))
			for _, l := range f.locals {
				body = append(body, 0x01, l)
			}
			body = append(body, f.body...)
			body = append(body, 0x0b)
			b = append(vec(b, len(body)), body...)
		}
		section(10, b)
	}
	if len(m.data) > 0 {
		b := vec(nil, len(m.data))
		for _, d := range m.data {
			b = append(b, 0x00)
			b = append(b, I32Const(int32(d.offset))...)
			b = append(b, 0x0b)
			b = append(vec(b, len(d.bytes)), d.bytes...)
		}
		section(11, b)
	}
	return out
}

// Instructions. Each returns its encoding.

// I32Const is i32.const v.
func I32Const(v int32) []byte { return sleb([]byte{0x41}, int64(v)) }

// I64Const is i64.const v.
func I64Const(v int64) []byte { return sleb([]byte{0x42}, v) }

// sleb appends v in signed LEB128.
func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Call is call idx.
func Call(idx uint32) []byte { return binary.AppendUvarint([]byte{0x10}, uint64(idx)) }

// LocalGet is local.get i.
func LocalGet(i uint32) []byte { return binary.AppendUvarint([]byte{0x20}, uint64(i)) }

// LocalSet is local.set i.
func LocalSet(i uint32) []byte { return binary.AppendUvarint([]byte{0x21}, uint64(i)) }

// Br is br depth.
func Br(depth uint32) []byte { return binary.AppendUvarint([]byte{0x0c}, uint64(depth)) }

// BrIf is br_if depth.
func BrIf(depth uint32) []byte { return binary.AppendUvarint([]byte{0x0d}, uint64(depth)) }

// Instructions without immediates.
var (
	Unreachable = []byte{0x00}
	Block       = []byte{0x02, 0x40} // block with no result
	Loop        = []byte{0x03, 0x40} // loop with no result
	If          = []byte{0x04, 0x40} // if with no result
	Else        = []byte{0x05}
	End         = []byte{0x0b}
	Drop        = []byte{0x1a}
	MemoryGrow  = []byte{0x40, 0x00}
	I32Eq       = []byte{0x46}
	I64GeU      = []byte{0x5a}
	I64LtU      = []byte{0x54}
	I64Add      = []byte{0x7c}
	I64Sub      = []byte{0x7d}
)

// Modules that are small to send and expensive to decode or compile, for
// tests of admission limits. Each is a valid module apart from its size:
// one function, exported as "f", and a one-page memory exported as
// "memory".

// bomb builds a module of one function with body, of params.
func bomb(params []byte, body []byte) []byte {
	var m Module
	f := m.RawFunc(params, nil, body)
	m.Memory(1, 0)
	m.ExportMemory("memory")
	m.Export("f", f)
	return m.Bytes()
}

// ManyLocals is a module whose function declares n locals of type t in one
// declaration.
func ManyLocals(n uint32, t byte) []byte {
	body := binary.AppendUvarint([]byte{0x01}, uint64(n))
	return bomb(nil, append(body, t, 0x0b))
}

// NestedBlocks is a module whose function nests n empty blocks.
func NestedBlocks(n int) []byte {
	body := make([]byte, 0, 1+3*n+1)
	body = append(body, 0x00)
	for range n {
		body = append(body, Block...)
	}
	for range n {
		body = append(body, 0x0b)
	}
	return bomb(nil, append(body, 0x0b))
}

// BrTable is a module whose function has one br_table with n targets.
func BrTable(n int) []byte {
	body := make([]byte, 0, n+16)
	body = append(body, 0x00)
	body = append(body, Block...)
	body = append(body, I32Const(0)...)
	body = binary.AppendUvarint(append(body, 0x0e), uint64(n))
	for range n + 1 {
		body = append(body, 0x00)
	}
	return bomb(nil, append(body, 0x0b, 0x0b))
}

// ManyParams is a module whose function has n i32 parameters.
func ManyParams(n int) []byte {
	params := make([]byte, n)
	for i := range params {
		params[i] = I32
	}
	return bomb(params, []byte{0x00, 0x0b})
}

// LargeFunction is a module whose function body is about size bytes of
// i32.const 0, drop.
func LargeFunction(size int) []byte {
	body := make([]byte, 0, size+4)
	body = append(body, 0x00)
	for len(body)+3 < size {
		body = append(body, 0x41, 0x00, 0x1a)
	}
	return bomb(nil, append(body, 0x0b))
}

// LargeMemory is a module whose memory starts at pages 64 KiB pages.
func LargeMemory(pages uint32) []byte {
	var m Module
	f := m.Func(nil, nil, nil)
	m.Memory(pages, 0)
	m.ExportMemory("memory")
	m.Export("f", f)
	return m.Bytes()
}
