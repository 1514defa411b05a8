package wasmcheck

// The code section: function bodies and the instructions they hold.

func (c *checker) code() error {
	n, err := c.count(at("code section"), func(l *Limits) *uint64 { return &l.MaxFunctions }, Flags.Functions)
	if err != nil {
		return err
	}
	for i := range n {
		at := c.r.pos
		size, err := c.r.u32()
		if err != nil {
			return err
		}
		if c.over(&c.seen.MaxBodySize, uint64(size), c.lim.MaxBodySize) {
			return overf(Flags.BodySize, c.lim.MaxBodySize, "function %d has a body of %d bytes", c.importedFuncs+i, size)
		}
		left, err := c.within(uint64(size), func() error { return c.function(c.importedFuncs + i) })
		if err != nil {
			return err
		}
		if left != 0 {
			return malformed("function %d at byte %d: %d bytes follow the end of its body", c.importedFuncs+i, at, left)
		}
	}
	return nil
}

// function checks the body of function i: its locals, then its instructions.
func (c *checker) function(i uint64) error {
	decls, err := c.r.u32()
	if err != nil {
		return err
	}
	if uint64(decls) > uint64(c.r.left()) {
		return malformed("function %d declares %d groups of locals in %d bytes", i, decls, c.r.left())
	}
	var locals uint64
	for range decls {
		n, err := c.r.u32()
		if err != nil {
			return err
		}
		locals += uint64(n) // at most 2^32 groups of 2^32-1: no overflow
		if c.over(&c.seen.MaxLocals, locals, c.lim.MaxLocals) {
			return overf(Flags.Locals, c.lim.MaxLocals, "function %d declares %d locals", i, locals)
		}
		if c.over(&c.seen.MaxTotalLocals, c.locals+locals, c.lim.MaxTotalLocals) {
			return overf(Flags.TotalLocals, c.lim.MaxTotalLocals, "the functions up to %d declare %d locals", i, c.locals+locals)
		}
		if err := c.valType(); err != nil {
			return err
		}
	}
	c.locals += locals
	return c.instructions(nth("function", i))
}

// constExpr checks a constant expression up to its end.
func (c *checker) constExpr(what where) error { return c.instructions(what) }

// instructions scans instructions until the end that closes the outermost
// level, tracking how deep blocks nest. It knows the immediates of every
// instruction of WebAssembly 2.0 (core, bulk memory, reference types,
// SIMD) and of threads; any other opcode is rejected.
func (c *checker) instructions(what where) error {
	r := &c.r
	var depth uint64
	for {
		// The common instructions, with no immediate or one single-byte
		// one, are read here without calls.
		b, pos := r.b, r.pos
	fast:
		for pos < len(b) {
			switch opClass[b[pos]] {
			case opNone:
				pos++
				continue
			case opIndex, opS32:
				if n := lebLen(b, pos+1, 4); n > 0 {
					pos += 1 + n
					continue
				}
			case opS64:
				if n := lebLen(b, pos+1, 9); n > 0 {
					pos += 1 + n
					continue
				}
			case opMemarg:
				if n := lebLen(b, pos+1, 4); n > 0 {
					if m := lebLen(b, pos+1+n, 4); m > 0 {
						pos += 1 + n + m
						continue
					}
				}
			}
			break fast
		}
		r.pos = pos
		at := r.pos
		op, err := r.byte()
		if err != nil {
			return malformed("%s does not end: %v", what, err)
		}
		switch opClass[op] {
		case opBlock:
			depth++
			if c.over(&c.seen.MaxNesting, depth, c.lim.MaxNesting) {
				return overf(Flags.Nesting, c.lim.MaxNesting, "%s nests blocks %d deep", what, depth)
			}
			if err := c.blockType(); err != nil {
				return err
			}
		case opEnd:
			if depth == 0 {
				return nil
			}
			depth--
		case opNone:
		case opIndex:
			if _, err := r.u32(); err != nil {
				return err
			}
		case opBrTable:
			n, err := r.u32()
			if err != nil {
				return err
			}
			if c.over(&c.seen.MaxBrTableTargets, uint64(n), c.lim.MaxBrTableTargets) {
				return overf(Flags.BrTable, c.lim.MaxBrTableTargets, "%s has a br_table with %d targets", what, n)
			}
			if uint64(n) > uint64(r.left()) {
				return malformed("%s: br_table at byte %d declares %d targets in %d bytes", what, at, n, r.left())
			}
			for range uint64(n) + 1 {
				if _, err := r.u32(); err != nil {
					return err
				}
			}
		case opIndex2: // call_indirect
			if _, err := r.u32(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		case opSelectT:
			n, err := r.u32()
			if err != nil {
				return err
			}
			if err := c.valTypes(uint64(n)); err != nil {
				return err
			}
		case opMemarg:
			if err := c.memarg(); err != nil {
				return err
			}
		case opS32:
			if err := r.sleb(32); err != nil {
				return err
			}
		case opS64:
			if err := r.sleb(64); err != nil {
				return err
			}
		case opBytes4:
			if _, err := r.take(4); err != nil {
				return err
			}
		case opBytes8:
			if _, err := r.take(8); err != nil {
				return err
			}
		case opRefType:
			if err := c.valType(); err != nil {
				return err
			}
		case opFC:
			if err := c.prefixFC(what, at); err != nil {
				return err
			}
		case opFD:
			if err := c.prefixFD(what, at); err != nil {
				return err
			}
		case opFE:
			sub, err := r.u32()
			if err != nil {
				return err
			}
			if sub == 0x03 { // atomic.fence
				if _, err := r.byte(); err != nil {
					return err
				}
			} else if err := c.memarg(); err != nil {
				return err
			}
		default:
			return malformed("%s: opcode %#x at byte %d is not supported", what, op, at)
		}
	}
}

// Classes of opcodes by their immediates.
const (
	opBad = iota
	opNone
	opBlock
	opEnd
	opIndex   // one u32
	opIndex2  // two u32
	opBrTable // a vector of u32 and one more
	opSelectT // a vector of value types
	opMemarg  // alignment and offset
	opS32     // i32.const
	opS64     // i64.const
	opBytes4  // f32.const
	opBytes8  // f64.const
	opRefType // ref.null
	opFC      // bulk memory, tables, saturating truncations
	opFD      // SIMD
	opFE      // threads
)

// opClass classifies every single-byte opcode.
var opClass = func() (t [256]uint8) {
	set := func(c uint8, ops ...int) {
		for _, op := range ops {
			t[op] = c
		}
	}
	span := func(c uint8, from, to int) {
		for op := from; op <= to; op++ {
			t[op] = c
		}
	}
	set(opNone, 0x00, 0x01, 0x05, 0x0f, 0x1a, 0x1b, 0xd1)
	span(opNone, 0x45, 0xc4)
	set(opBlock, 0x02, 0x03, 0x04)
	set(opEnd, 0x0b)
	set(opIndex, 0x0c, 0x0d, 0x10, 0x3f, 0x40, 0xd2) // br, br_if, call, memory.size/grow, ref.func
	span(opIndex, 0x20, 0x26)                        // local, global and table get/set
	set(opIndex2, 0x11)                              // call_indirect
	set(opBrTable, 0x0e)
	set(opSelectT, 0x1c)
	span(opMemarg, 0x28, 0x3e)
	set(opS32, 0x41)
	set(opS64, 0x42)
	set(opBytes4, 0x43)
	set(opBytes8, 0x44)
	set(opRefType, 0xd0)
	set(opFC, 0xfc)
	set(opFD, 0xfd)
	set(opFE, 0xfe)
	return t
}()

func (c *checker) blockType() error {
	b, ok := c.r.peek()
	if !ok {
		return malformed("a block type is cut off")
	}
	if b == 0x40 || b == 0x7f || b == 0x7e || b == 0x7d || b == 0x7c || b == 0x7b || b == 0x70 || b == 0x6f {
		c.r.pos++
		return nil
	}
	if b == 0x63 || b == 0x64 {
		c.r.pos++
	}
	return c.r.sleb(33)
}

func (c *checker) memarg() error {
	if _, err := c.r.u32(); err != nil {
		return err
	}
	_, err := c.r.u32()
	return err
}

func (c *checker) prefixFC(what where, at int) error {
	r := &c.r
	sub, err := r.u32()
	if err != nil {
		return err
	}
	var imm int // u32 immediates
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8, sub == 12, sub == 14: // memory.init, table.init, table.copy
		imm = 2
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17:
		imm = 1
	case sub == 10: // memory.copy
		imm = 2
	default:
		return malformed("%s: opcode 0xfc %d at byte %d is not supported", what, sub, at)
	}
	for range imm {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) prefixFD(what where, at int) error {
	r := &c.r
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return c.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		_, err := r.take(16)
		return err
	case sub >= 21 && sub <= 34: // extract and replace lane
		_, err := r.byte()
		return err
	case sub >= 84 && sub <= 91: // load and store lane
		if err := c.memarg(); err != nil {
			return err
		}
		_, err := r.byte()
		return err
	case sub <= 0xff:
		return nil
	default:
		return malformed("%s: opcode 0xfd %d at byte %d is not supported", what, sub, at)
	}
}
