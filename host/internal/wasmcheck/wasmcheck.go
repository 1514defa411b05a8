// Package wasmcheck is a cheap structural pass over a WebAssembly binary,
// run before the module is decoded or compiled. wazero's decoder sizes its
// allocations by the counts a module declares (locals, types, imports,
// names, …) and its compiler has no budget, so a few hundred hostile bytes
// can exhaust the daemon's memory or keep it compiling for minutes. Check
// streams over the bytes once, reads every count as bounded LEB128 and
// compares it with a Limits before anything is allocated for it: its own
// memory use does not grow with the module or with any declared count.
//
// Check does not validate the module (types, indices, stack shapes): that
// stays wazero's work. It rejects only what is malformed at the byte level,
// what uses instructions of features the host does not enable, and what
// exceeds a limit.
package wasmcheck

import (
	"fmt"
	"unicode/utf8"
)

// Limits bounds the structure of a module. Every field must be positive;
// Check treats zero as zero, not as "no limit".
type Limits struct {
	// MaxModuleSize bounds the module's size in bytes (all its sections).
	MaxModuleSize uint64
	// MaxFunctions bounds the functions of the module, imported and
	// defined, and the entries of its code section.
	MaxFunctions uint64
	// MaxLocals bounds the locals one function declares, the sum of all
	// its local declarations (parameters not included).
	MaxLocals uint64
	// MaxTotalLocals bounds the locals of all functions together; each is
	// allocated when the module is decoded, though declaring many costs a
	// few bytes.
	MaxTotalLocals uint64
	// MaxBodySize bounds the size in bytes of one function body.
	MaxBodySize uint64
	// MaxParams bounds the parameters of one function type.
	MaxParams uint64
	// MaxResults bounds the results of one function type.
	MaxResults uint64
	// MaxTypes bounds the entries of the type section.
	MaxTypes uint64
	// MaxBrTableTargets bounds the targets of one br_table instruction.
	MaxBrTableTargets uint64
	// MaxNesting bounds how deep blocks, loops and ifs nest in one
	// function.
	MaxNesting uint64
	// MaxDataSegments bounds the data segments.
	MaxDataSegments uint64
	// MaxDataSize bounds the bytes of all data segments together.
	MaxDataSize uint64
	// MaxElemSegments bounds the element segments.
	MaxElemSegments uint64
	// MaxElemSize bounds the elements of all element segments together.
	MaxElemSize uint64
	// MaxTableSize bounds the initial and the maximum size of each table,
	// in elements.
	MaxTableSize uint64
	// MaxTables bounds the tables, imported and defined.
	MaxTables uint64
	// MaxMemoryPages bounds the initial size of each memory, in 64 KiB
	// pages.
	MaxMemoryPages uint64
	// MaxImports bounds the imports.
	MaxImports uint64
	// MaxExports bounds the exports.
	MaxExports uint64
	// MaxGlobals bounds the globals, imported and defined.
	MaxGlobals uint64
}

// Flags names, for each limit, the `weft serve` flag that sets it; error
// messages end with it so an operator knows what to raise.
var Flags = struct {
	ModuleSize, Functions, Locals, TotalLocals, BodySize, Params, Results, Types, BrTable, Nesting,
	DataSegments, DataSize, ElemSegments, ElemSize, TableSize, Tables, MemoryPages,
	Imports, Exports, Globals string
}{
	ModuleSize:   "--module-max-size",
	Functions:    "--module-max-functions",
	Locals:       "--module-max-locals",
	TotalLocals:  "--module-max-total-locals",
	BodySize:     "--module-max-body-size",
	Params:       "--module-max-params",
	Results:      "--module-max-results",
	Types:        "--module-max-types",
	BrTable:      "--module-max-br-table-targets",
	Nesting:      "--module-max-nesting",
	DataSegments: "--module-max-data-segments",
	DataSize:     "--module-max-data-size",
	ElemSegments: "--module-max-elem-segments",
	ElemSize:     "--module-max-elem-size",
	TableSize:    "--module-max-table-size",
	Tables:       "--module-max-tables",
	MemoryPages:  "--memory-limit",
	Imports:      "--module-max-imports",
	Exports:      "--module-max-exports",
	Globals:      "--module-max-globals",
}

// Error is a module Check rejects. Message says why, for the module's
// author; for a limit it names the value, the limit and its flag.
type Error struct {
	// Message explains the rejection.
	Message string
	// Limit is the flag of the limit exceeded, or "" for a malformed
	// module.
	Limit string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// checker is the state of one Check.
type checker struct {
	lim  Limits
	seen Limits // the largest value met of each limit
	r    reader

	funcs, tables, globals, imports uint64 // imported so far plus defined
	importedFuncs                   uint64 // functions imported, the first indices
	dataBytes, elems, locals        uint64
}

// Check reads wasm and returns nil when it is a well-formed module within
// lim, or an *Error saying what is wrong or over which limit.
func Check(wasm []byte, lim Limits) error {
	if uint64(len(wasm)) > lim.MaxModuleSize {
		return overf(Flags.ModuleSize, lim.MaxModuleSize, "the module is %d bytes", len(wasm))
	}
	c := &checker{lim: lim, r: reader{b: wasm}}
	return c.module()
}

// Measure returns, for each limit, the largest value wasm reaches (the
// smallest Limits it passes), or the error that stops the scan: a
// malformed module.
func Measure(wasm []byte) (Limits, error) {
	all := ^uint64(0)
	c := &checker{lim: Limits{all, all, all, all, all, all, all, all, all, all, all, all, all, all, all, all, all, all, all, all}, r: reader{b: wasm}}
	c.seen.MaxModuleSize = uint64(len(wasm))
	err := c.module()
	return c.seen, err
}

func (c *checker) module() error {
	r := &c.r
	if len(r.b) < 8 || string(r.b[:4]) != "\x00asm" {
		return &Error{Message: "not a valid WebAssembly module: the file does not start with \\0asm"}
	}
	if string(r.b[4:8]) != "\x01\x00\x00\x00" {
		return malformed("the module has binary format version %d; only version 1 is supported",
			uint32(r.b[4])|uint32(r.b[5])<<8|uint32(r.b[6])<<16|uint32(r.b[7])<<24)
	}
	r.pos = 8
	for r.pos < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		if uint64(size) > uint64(len(r.b)-r.pos) {
			return malformed("section %d at byte %d declares %d bytes; only %d remain", id, r.pos, size, len(r.b)-r.pos)
		}
		left, err := c.within(uint64(size), func() error { return c.section(id) })
		if err != nil {
			return err
		}
		if id != secCustom && left != 0 {
			return malformed("section %d ends %d bytes before its declared end at byte %d", id, left, c.r.pos)
		}
	}
	return nil
}

func (c *checker) section(id byte) error {
	switch id {
	case secCustom:
		return c.custom()
	case secType:
		return c.types()
	case secImport:
		return c.importSection()
	case secFunction:
		c.importedFuncs = c.funcs
		n, err := c.count(at("function section"), func(l *Limits) *uint64 { return &l.MaxFunctions }, Flags.Functions)
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxFunctions, c.funcs+n, c.lim.MaxFunctions) {
			return overf(Flags.Functions, c.lim.MaxFunctions, "the module has %d functions", c.funcs+n)
		}
		c.funcs += n
		for range n {
			if _, err := c.r.u32(); err != nil {
				return err
			}
		}
	case secTable:
		n, err := c.count(at("table section"), func(l *Limits) *uint64 { return &l.MaxTables }, Flags.Tables)
		if err != nil {
			return err
		}
		for i := range n {
			if err := c.table(c.tables + i); err != nil {
				return err
			}
		}
		c.tables += n
		if c.over(&c.seen.MaxTables, c.tables, c.lim.MaxTables) {
			return overf(Flags.Tables, c.lim.MaxTables, "the module has %d tables", c.tables)
		}
	case secMemory:
		n, err := c.count(at("memory section"), nil, "")
		if err != nil {
			return err
		}
		for i := range n {
			if err := c.memory(i); err != nil {
				return err
			}
		}
	case secGlobal:
		n, err := c.count(at("global section"), func(l *Limits) *uint64 { return &l.MaxGlobals }, Flags.Globals)
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxGlobals, c.globals+n, c.lim.MaxGlobals) {
			return overf(Flags.Globals, c.lim.MaxGlobals, "the module has %d globals", c.globals+n)
		}
		c.globals += n
		for i := range n {
			if err := c.valType(); err != nil {
				return err
			}
			if _, err := c.r.byte(); err != nil {
				return err
			}
			if err := c.constExpr(nth("global", i)); err != nil {
				return err
			}
		}
	case secExport:
		n, err := c.count(at("export section"), func(l *Limits) *uint64 { return &l.MaxExports }, Flags.Exports)
		if err != nil {
			return err
		}
		for range n {
			if err := c.name(); err != nil {
				return err
			}
			if _, err := c.r.byte(); err != nil {
				return err
			}
			if _, err := c.r.u32(); err != nil {
				return err
			}
		}
	case secStart:
		if _, err := c.r.u32(); err != nil {
			return err
		}
	case secElement:
		return c.elementSection()
	case secCode:
		return c.code()
	case secData:
		return c.dataSection()
	case secDataCount:
		n, err := c.r.u32()
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxDataSegments, uint64(n), c.lim.MaxDataSegments) {
			return overf(Flags.DataSegments, c.lim.MaxDataSegments, "the module declares %d data segments", n)
		}
	default:
		return malformed("unknown section id %d at byte %d", id, c.r.pos)
	}
	return nil
}

// over records v as met for a limit and reports whether it exceeds max.
func (c *checker) over(seen *uint64, v, max uint64) bool {
	*seen = maxOf(*seen, v)
	return v > max
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// within runs f with the reader bounded to the next n bytes, then moves
// past them; it returns how many of them f left unread.
func (c *checker) within(n uint64, f func() error) (int, error) {
	if n > uint64(c.r.left()) {
		return 0, malformed("%d bytes at byte %d run past the end (%d left)", n, c.r.pos, c.r.left())
	}
	saved := c.r
	end := saved.pos + int(n)
	c.r = reader{b: saved.b[:end], pos: saved.pos}
	err := f()
	left := c.r.left()
	c.r = reader{b: saved.b, pos: end}
	return left, err
}

// count reads the length of a vector: at most max (the limit of flag, or
// a fixed bound when flag is "") and, since every element takes at least a
// byte, at most the bytes left.
func (c *checker) count(what where, field func(*Limits) *uint64, flag string) (uint64, error) {
	at := c.r.pos
	n, err := c.r.u32()
	if err != nil {
		return 0, err
	}
	max := uint64(1 << 10)
	if field != nil {
		max = *field(&c.lim)
		*field(&c.seen) = maxOf(*field(&c.seen), uint64(n))
	}
	if uint64(n) > max {
		if flag == "" {
			return 0, malformed("the %s at byte %d declares %d entries; at most %d are supported", what, at, n, max)
		}
		return 0, overf(flag, max, "the %s declares %d entries", what, n)
	}
	if uint64(n) > uint64(c.r.left()) {
		return 0, malformed("the %s at byte %d declares %d entries in %d bytes", what, at, n, c.r.left())
	}
	return uint64(n), nil
}

// custom checks a custom section. Only "name" is decoded by wazero, so only
// its counts matter.
func (c *checker) custom() error {
	n, err := c.r.u32()
	if err != nil {
		return err
	}
	nameBytes, err := c.r.take(uint64(n))
	if err != nil {
		return err
	}
	if !utf8.Valid(nameBytes) {
		return malformed("a custom section name is not UTF-8")
	}
	if string(nameBytes) != "name" {
		return nil
	}
	for c.r.left() > 0 {
		id, err := c.r.byte()
		if err != nil {
			return err
		}
		size, err := c.r.u32()
		if err != nil {
			return err
		}
		_, err = c.within(uint64(size), func() error {
			switch id {
			case 1: // function names
				return c.nameMap(at("function names"), func(l *Limits) *uint64 { return &l.MaxFunctions }, Flags.Functions)
			case 2: // local names
				n, err := c.count(at("local names"), func(l *Limits) *uint64 { return &l.MaxFunctions }, Flags.Functions)
				if err != nil {
					return err
				}
				for range n {
					if _, err := c.r.u32(); err != nil {
						return err
					}
					if err := c.nameMap(at("local names of a function"), func(l *Limits) *uint64 { return &l.MaxLocals }, Flags.Locals); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) nameMap(what where, field func(*Limits) *uint64, flag string) error {
	n, err := c.count(what, field, flag)
	if err != nil {
		return err
	}
	for range n {
		if _, err := c.r.u32(); err != nil {
			return err
		}
		if err := c.name(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) types() error {
	n, err := c.count(at("type section"), func(l *Limits) *uint64 { return &l.MaxTypes }, Flags.Types)
	if err != nil {
		return err
	}
	for i := range n {
		at := c.r.pos
		form, err := c.r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return malformed("type %d at byte %d has form %#x; only function types (0x60) are supported", i, at, form)
		}
		params, err := c.r.u32()
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxParams, uint64(params), c.lim.MaxParams) {
			return overf(Flags.Params, c.lim.MaxParams, "type %d declares %d parameters", i, params)
		}
		if err := c.valTypes(uint64(params)); err != nil {
			return err
		}
		results, err := c.r.u32()
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxResults, uint64(results), c.lim.MaxResults) {
			return overf(Flags.Results, c.lim.MaxResults, "type %d declares %d results", i, results)
		}
		if err := c.valTypes(uint64(results)); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) valTypes(n uint64) error {
	if n > uint64(c.r.left()) {
		return malformed("%d value types at byte %d do not fit in the %d bytes left", n, c.r.pos, c.r.left())
	}
	for range n {
		if err := c.valType(); err != nil {
			return err
		}
	}
	return nil
}

// valType reads a value type: one byte, or a reference prefix and a heap
// type.
func (c *checker) valType() error {
	b, err := c.r.byte()
	if err != nil {
		return err
	}
	if b == 0x63 || b == 0x64 {
		return c.r.sleb(33)
	}
	return nil
}

func (c *checker) importSection() error {
	n, err := c.count(at("import section"), func(l *Limits) *uint64 { return &l.MaxImports }, Flags.Imports)
	if err != nil {
		return err
	}
	c.imports += n
	for i := range n {
		if err := c.name(); err != nil {
			return err
		}
		if err := c.name(); err != nil {
			return err
		}
		kind, err := c.r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // function
			if _, err := c.r.u32(); err != nil {
				return err
			}
			c.funcs++
			if c.over(&c.seen.MaxFunctions, c.funcs, c.lim.MaxFunctions) {
				return overf(Flags.Functions, c.lim.MaxFunctions, "the module has more than %d functions", c.lim.MaxFunctions)
			}
		case 0x01: // table
			if err := c.table(c.tables); err != nil {
				return err
			}
			c.tables++
			if c.over(&c.seen.MaxTables, c.tables, c.lim.MaxTables) {
				return overf(Flags.Tables, c.lim.MaxTables, "the module has more than %d tables", c.lim.MaxTables)
			}
		case 0x02: // memory
			if err := c.memory(0); err != nil {
				return err
			}
		case 0x03: // global
			if err := c.valType(); err != nil {
				return err
			}
			if _, err := c.r.byte(); err != nil {
				return err
			}
			c.globals++
			if c.over(&c.seen.MaxGlobals, c.globals, c.lim.MaxGlobals) {
				return overf(Flags.Globals, c.lim.MaxGlobals, "the module has more than %d globals", c.lim.MaxGlobals)
			}
		case 0x04: // tag
			if _, err := c.r.byte(); err != nil {
				return err
			}
			if _, err := c.r.u32(); err != nil {
				return err
			}
		default:
			return malformed("import %d has unknown kind %#x", i, kind)
		}
	}
	return nil
}

// limits reads a limits pair: flags, min and, when flagged, max.
func (c *checker) limits(what where) (min uint64, max uint64, hasMax bool, err error) {
	at := c.r.pos
	flags, err := c.r.byte()
	if err != nil {
		return 0, 0, false, err
	}
	if flags > 0x03 {
		return 0, 0, false, malformed("%s at byte %d has limits flags %#x; only 32-bit limits are supported", what, at, flags)
	}
	lo, err := c.r.u32()
	if err != nil {
		return 0, 0, false, err
	}
	if flags&0x01 == 0 {
		return uint64(lo), 0, false, nil
	}
	hi, err := c.r.u32()
	if err != nil {
		return 0, 0, false, err
	}
	return uint64(lo), uint64(hi), true, nil
}

func (c *checker) table(i uint64) error {
	if err := c.valType(); err != nil {
		return err
	}
	what := nth("table", i)
	lo, hi, hasMax, err := c.limits(what)
	if err != nil {
		return err
	}
	if c.over(&c.seen.MaxTableSize, lo, c.lim.MaxTableSize) {
		return overf(Flags.TableSize, c.lim.MaxTableSize, "%s has an initial size of %d elements", what, lo)
	}
	if hasMax && c.over(&c.seen.MaxTableSize, hi, c.lim.MaxTableSize) {
		return overf(Flags.TableSize, c.lim.MaxTableSize, "%s has a maximum size of %d elements", what, hi)
	}
	return nil
}

func (c *checker) memory(i uint64) error {
	what := nth("memory", i)
	lo, _, _, err := c.limits(what)
	if err != nil {
		return err
	}
	if c.over(&c.seen.MaxMemoryPages, lo, c.lim.MaxMemoryPages) {
		return &Error{Limit: Flags.MemoryPages, Message: fmt.Sprintf("%s needs %d pages (%d bytes) at start; the memory limit is %d pages (%d bytes, %s)",
			what, lo, lo*65536, c.lim.MaxMemoryPages, c.lim.MaxMemoryPages*65536, Flags.MemoryPages)}
	}
	return nil
}

func (c *checker) elementSection() error {
	n, err := c.count(at("element section"), func(l *Limits) *uint64 { return &l.MaxElemSegments }, Flags.ElemSegments)
	if err != nil {
		return err
	}
	for i := range n {
		what := nth("element segment", i)
		flags, err := c.r.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return malformed("%s has unknown flags %d", what, flags)
		}
		if flags&0x02 != 0 && flags&0x01 == 0 { // explicit table index
			if _, err := c.r.u32(); err != nil {
				return err
			}
		}
		if flags&0x01 == 0 { // active: an offset
			if err := c.constExpr(what.with("offset")); err != nil {
				return err
			}
		}
		if flags&0x03 != 0 { // element kind or reference type
			if flags&0x04 == 0 {
				if _, err := c.r.byte(); err != nil {
					return err
				}
			} else if err := c.valType(); err != nil {
				return err
			}
		}
		m, err := c.count(what, func(l *Limits) *uint64 { return &l.MaxElemSize }, Flags.ElemSize)
		if err != nil {
			return err
		}
		c.elems += m
		if c.over(&c.seen.MaxElemSize, c.elems, c.lim.MaxElemSize) {
			return overf(Flags.ElemSize, c.lim.MaxElemSize, "the element segments hold %d elements", c.elems)
		}
		for range m {
			if flags&0x04 == 0 {
				if _, err := c.r.u32(); err != nil {
					return err
				}
			} else if err := c.constExpr(what); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) dataSection() error {
	n, err := c.count(at("data section"), func(l *Limits) *uint64 { return &l.MaxDataSegments }, Flags.DataSegments)
	if err != nil {
		return err
	}
	for i := range n {
		what := nth("data segment", i)
		flags, err := c.r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			if err := c.constExpr(what.with("offset")); err != nil {
				return err
			}
		case 1:
		case 2:
			if _, err := c.r.u32(); err != nil {
				return err
			}
			if err := c.constExpr(what.with("offset")); err != nil {
				return err
			}
		default:
			return malformed("%s has unknown flags %d", what, flags)
		}
		size, err := c.r.u32()
		if err != nil {
			return err
		}
		c.dataBytes += uint64(size)
		if c.over(&c.seen.MaxDataSize, c.dataBytes, c.lim.MaxDataSize) {
			return overf(Flags.DataSize, c.lim.MaxDataSize, "the data segments hold %d bytes", c.dataBytes)
		}
		if _, err := c.r.take(uint64(size)); err != nil {
			return err
		}
	}
	return nil
}
