package codec

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
	"unsafe"
)

// DecodeDatum decodes one Avro binary datum of schema
// durable_workflow.protocol.Value v1, with DefaultLimits. The whole input
// must be the datum: trailing bytes fail with invalid_payload_framing.
//
// Every valid Avro encoding is accepted, not only the one AppendDatum writes:
// arrays and maps may come in several blocks, and a block may have a
// negative count followed by its size in bytes. The returned Value does not
// alias datum.
func DecodeDatum(datum []byte) (Value, error) {
	return decodeDatum(datum, Limits{}, false)
}

// decodeDatum checks datum against l (filled with defaults), then builds its
// Value. With owned set, datum belongs to the Value alone: strings, keys and
// bytes values are views of it rather than copies.
func decodeDatum(datum []byte, l Limits, owned bool) (Value, error) {
	l = l.withDefaults()
	if len(datum) > l.MaxSize {
		return Value{}, sizeError(len(datum), l.MaxSize)
	}
	if v, ok := scalar(datum); ok {
		return v, nil
	}
	c, err := scan(datum, l.MaxDepth)
	if err != nil {
		return Value{}, err
	}
	return build(datum, c, owned), nil
}

// scalar decodes a datum that is exactly one null, boolean or long, the
// most common results of activities and the cheapest to check, without
// the two passes of scan and build. It reports false for anything else,
// a malformed datum included, which the general path then decodes or
// rejects with its error.
func scalar(d []byte) (Value, bool) {
	switch {
	case len(d) == 1 && d[0] == 2*byte(KindNull):
		return Null(), true
	case len(d) == 2 && d[0] == 2*byte(KindBoolean) && d[1] <= 1:
		return Bool(d[1] == 1), true
	case len(d) >= 2 && d[0] == 2*byte(KindLong):
		n, pos, err := readLong(d, 1, "long")
		if err == nil && pos == len(d) {
			return Long(n), true
		}
	}
	return Value{}, false
}

// counts are the totals of a scanned datum, used to size the few
// allocations that hold the decoded Value: every list item, every map entry,
// and every string, key and bytes byte.
type counts struct {
	items, entries, dataBytes int
}

// scanLevel is one open list or map while scan walks a datum.
type scanLevel struct {
	isMap     bool
	remaining int // items left in the current block
	blockEnd  int // offset where the current block must end, or -1
}

// stackHint is how many open lists and maps build keeps on the goroutine
// stack; deeper values (up to the depth limit) spill to the heap.
const stackHint = 16

// scan walks datum without building anything: it checks the whole structure
// (union indexes, booleans, varints, finite doubles, UTF-8, block counts
// against the remaining bytes, nesting depth, trailing bytes) and counts what
// build must allocate. It keeps an explicit stack instead of recursing, so a
// hostile nesting fails at maxDepth with no stack growth.
func scan(d []byte, maxDepth int) (counts, error) {
	var c counts
	var fixed [defaultMaxDepth]scanLevel // no allocation within the default limit
	stack := fixed[:0]
	pos := 0
	for {
		var idx int64
		if pos < len(d) && d[pos] < 0x80 {
			idx = int64(d[pos]>>1) ^ -int64(d[pos]&1)
			pos++
		} else {
			var err error
			if idx, pos, err = readLong(d, pos, "union index"); err != nil {
				return c, err
			}
		}
		switch idx {
		case int64(KindNull):
		case int64(KindBoolean):
			if pos >= len(d) {
				return c, truncated("boolean", pos)
			}
			if d[pos] > 1 {
				return c, errorf(CodeInvalidPayloadFraming, "boolean byte %#02x at datum offset %d is not 00 or 01", d[pos], pos)
			}
			pos++
		case int64(KindLong):
			if pos < len(d) && d[pos] < 0x80 {
				pos++
			} else if _, p, err := readLong(d, pos, "long"); err != nil {
				return c, err
			} else {
				pos = p
			}
		case int64(KindDouble):
			if len(d)-pos < 8 {
				return c, truncated("double", pos)
			}
			if !finiteBits(binary.LittleEndian.Uint64(d[pos:])) {
				f := math.Float64frombits(binary.LittleEndian.Uint64(d[pos:]))
				return c, errorf(CodeInvalidPayloadFraming, "double at datum offset %d is %v, not finite", pos, f)
			}
			pos += 8
		case int64(KindBytes):
			n, p, err := readLen(d, pos, "bytes")
			if err != nil {
				return c, err
			}
			pos = p + n
			c.dataBytes += n
		case int64(KindString):
			n, p, err := readLen(d, pos, "string")
			if err != nil {
				return c, err
			}
			if !validUTF8(d[p : p+n]) {
				return c, errorf(CodeInvalidPayloadFraming, "string at datum offset %d is not valid UTF-8", p)
			}
			pos = p + n
			c.dataBytes += n
		case int64(KindList), int64(KindMap):
			if len(stack) >= maxDepth {
				return c, depthError(maxDepth)
			}
			stack = append(stack, scanLevel{isMap: idx == int64(KindMap), blockEnd: -1})
		default:
			return c, errorf(CodeInvalidPayloadFraming, "union index %d at datum offset %d is outside 0..7", idx, pos-1)
		}

		// Find the next value to read: the next item of the innermost open
		// container, reading block headers and closing finished containers.
		for {
			if len(stack) == 0 {
				if pos != len(d) {
					return c, errorf(CodeInvalidPayloadFraming, "%d trailing bytes after the datum at offset %d", len(d)-pos, pos)
				}
				return c, nil
			}
			top := &stack[len(stack)-1]
			if top.remaining > 0 {
				break
			}
			if top.blockEnd >= 0 && pos != top.blockEnd {
				return c, errorf(CodeInvalidPayloadFraming, "block ends at datum offset %d, not at its declared end %d", pos, top.blockEnd)
			}
			n, end, p, err := readBlock(d, pos, top.isMap)
			if err != nil {
				return c, err
			}
			pos = p
			if n == 0 {
				stack = stack[:len(stack)-1]
				continue
			}
			top.remaining, top.blockEnd = n, end
			break
		}
		top := &stack[len(stack)-1]
		top.remaining--
		if top.isMap {
			n, p, err := readLen(d, pos, "map key")
			if err != nil {
				return c, err
			}
			if !validUTF8(d[p : p+n]) {
				return c, errorf(CodeInvalidPayloadFraming, "map key at datum offset %d is not valid UTF-8", p)
			}
			pos = p + n
			c.dataBytes += n
			c.entries++
		} else {
			c.items++
		}
	}
}

// buildLevel is one open list or map while build assembles a Value.
type buildLevel struct {
	isMap     bool
	remaining int    // items left in the current block
	start     int    // index of the container's first item in the scratch area
	key       string // the container's key in its parent map
}

// build decodes a datum that scan accepted, with counts c. It allocates at
// most one slice of list items, one of map entries and, unless owned, one
// byte slice for the contents of all strings, keys and bytes values. With
// owned set, datum belongs to the Value alone and strings, keys and bytes
// values are views of it.
//
// Containers are assembled bottom-up without recursion: decoded items are
// pushed on a scratch area at the front of the items (or entries) slice, and
// when a container closes its items move to the back of the same slice,
// which fills downwards. Every item is either in the scratch area or placed,
// and there is exactly one slot per item, so the scratch area never reaches
// placed items (a move may overlap its own source; copy allows that).
func build(d []byte, c counts, owned bool) Value {
	var vals []Value
	if c.items > 0 {
		vals = make([]Value, c.items)
	}
	var ents []Entry
	if c.entries > 0 {
		ents = make([]Entry, c.entries)
	}
	// data holds the contents of every string, key and bytes value, unless
	// they can be views of d.
	var data []byte
	if !owned && c.dataBytes > 0 {
		data = make([]byte, 0, c.dataBytes)
	}
	// take returns the n bytes at d[pos:] as memory the Value owns.
	take := func(pos, n int) unsafe.Pointer {
		if owned {
			return unsafe.Pointer(&d[pos])
		}
		off := len(data)
		data = append(data, d[pos:pos+n]...)
		return unsafe.Pointer(&data[off])
	}
	vsp, vfp := 0, len(vals) // scratch top and placed bottom in vals
	esp, efp := 0, len(ents) // the same in ents

	var fixed [stackHint]buildLevel
	stack := fixed[:0]
	var key string // key of the map entry whose value is read next
	pos := 0
	for {
		// scan accepted d: every varint is well formed and every field fits.
		var idx int64
		if b := d[pos]; b < 0x80 {
			idx = int64(b >> 1)
			pos++
		} else {
			idx, pos, _ = readLong(d, pos, "")
		}
		var v Value
		opened := false
		switch idx {
		case int64(KindNull):
		case int64(KindBoolean):
			v = Value{kind: KindBoolean, num: uint64(d[pos])}
			pos++
		case int64(KindLong):
			var n int64
			if b := d[pos]; b < 0x80 {
				n = int64(b>>1) ^ -int64(b&1)
				pos++
			} else {
				n, pos, _ = readLong(d, pos, "")
			}
			v = Value{kind: KindLong, num: uint64(n)}
		case int64(KindDouble):
			v = Value{kind: KindDouble, num: binary.LittleEndian.Uint64(d[pos:])}
			pos += 8
		case int64(KindBytes), int64(KindString):
			n, p, _ := readLen(d, pos, "")
			pos = p
			v = Value{kind: Kind(idx), num: uint64(n), ptr: unsafe.Pointer(&zeroByte)}
			if n > 0 {
				v.ptr = take(pos, n)
				pos += n
			}
		case int64(KindList):
			stack = append(stack, buildLevel{start: vsp, key: key})
			opened = true
		case int64(KindMap):
			stack = append(stack, buildLevel{isMap: true, start: esp, key: key})
			opened = true
		}

		for {
			if !opened {
				// Deliver v to the innermost open container, or return it.
				if len(stack) == 0 {
					return v
				}
				if stack[len(stack)-1].isMap {
					ents[esp] = Entry{Key: key, Value: v}
					esp++
				} else {
					vals[vsp] = v
					vsp++
				}
			}
			opened = false
			top := &stack[len(stack)-1]
			if top.remaining > 0 {
				break
			}
			n, _, p, _ := readBlock(d, pos, top.isMap)
			pos = p
			if n > 0 {
				top.remaining = n
				break
			}
			// The container is complete: place its items and deliver it.
			if top.isMap {
				n := esp - top.start
				copy(ents[efp-n:efp], ents[top.start:esp])
				efp -= n
				esp = top.start
				v = Map(ents[efp : efp+n : efp+n]...)
			} else {
				n := vsp - top.start
				copy(vals[vfp-n:vfp], vals[top.start:vsp])
				vfp -= n
				vsp = top.start
				v = List(vals[vfp : vfp+n : vfp+n]...)
			}
			key = top.key
			stack = stack[:len(stack)-1]
		}
		top := &stack[len(stack)-1]
		top.remaining--
		if top.isMap {
			n, p, _ := readLen(d, pos, "")
			pos = p
			key = ""
			if n > 0 {
				key = unsafe.String((*byte)(take(pos, n)), n)
				pos += n
			}
		}
	}
}

// finiteBits reports whether the float64 with bits u is finite: its
// exponent is not all ones.
func finiteBits(u uint64) bool { return u&(0x7ff<<52) != 0x7ff<<52 }

// readLong reads the zig-zag varint at d[pos:] as a long: at most 10 bytes,
// within the int64 range. what names the field for error messages.
func readLong(d []byte, pos int, what string) (int64, int, error) {
	if pos < len(d) && d[pos] < 0x80 {
		u := uint64(d[pos])
		return int64(u>>1) ^ -int64(u&1), pos + 1, nil
	}
	var u uint64
	start := pos
	for i := 0; i < 10; i++ {
		if pos >= len(d) {
			return 0, pos, truncated(what, start)
		}
		b := d[pos]
		pos++
		if i == 9 && b > 1 {
			return 0, pos, errorf(CodeInvalidPayloadFraming, "%s at datum offset %d is longer than 10 bytes or overflows int64", what, start)
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos, nil
		}
	}
	// Unreachable: the tenth byte either ends the varint or fails above.
	return 0, pos, errorf(CodeInvalidPayloadFraming, "%s at datum offset %d is longer than 10 bytes", what, start)
}

// readLen reads the length of a bytes, string or map key field and checks
// that that many bytes remain.
func readLen(d []byte, pos int, what string) (int, int, error) {
	if pos < len(d) {
		if b := d[pos]; b < 0x80 && b&1 == 0 && int(b>>1) < len(d)-pos {
			return int(b >> 1), pos + 1, nil
		}
	}
	return readLenSlow(d, pos, what)
}

// readLenSlow is readLen for lengths that are negative, do not fit, or take
// more than one byte.
func readLenSlow(d []byte, pos int, what string) (int, int, error) {
	n, p, err := readLong(d, pos, lengthLabel(what))
	if err != nil {
		return 0, p, err
	}
	if n < 0 {
		return 0, p, errorf(CodeInvalidPayloadFraming, "%s length %d at datum offset %d is negative", what, n, pos)
	}
	if n > int64(len(d)-p) {
		return 0, p, errorf(CodeInvalidPayloadFraming, "truncated datum: %s at datum offset %d claims %d bytes, %d remain", what, pos, n, len(d)-p)
	}
	return int(n), p, nil
}

// lengthLabel names the length field of what, without allocating.
func lengthLabel(what string) string {
	switch what {
	case "bytes":
		return "bytes length"
	case "string":
		return "string length"
	case "map key":
		return "map key length"
	}
	return "length"
}

// readBlock reads an array or map block header: a count, and for a negative
// count the block's size in bytes. It returns the item count (0 for the
// terminator), the offset where the block must end (-1 if no size was
// given) and the new position. The count must fit the bytes that remain:
// every item takes at least one byte, every map entry at least two.
func readBlock(d []byte, pos int, isMap bool) (count, end, next int, err error) {
	n, p, err := readLong(d, pos, "block count")
	if err != nil {
		return 0, -1, p, err
	}
	if n == 0 {
		return 0, -1, p, nil
	}
	end = -1
	avail := len(d) - p
	if n < 0 {
		if n == math.MinInt64 {
			return 0, -1, p, errorf(CodeInvalidPayloadFraming, "block count at datum offset %d overflows", pos)
		}
		n = -n
		size, q, err := readLong(d, p, "block size")
		if err != nil {
			return 0, -1, q, err
		}
		if size < 0 || size > int64(len(d)-q) {
			return 0, -1, q, errorf(CodeInvalidPayloadFraming, "block size %d at datum offset %d does not fit the %d remaining bytes", size, p, len(d)-q)
		}
		p = q
		avail = int(size)
		end = p + avail
	}
	per := int64(1)
	if isMap {
		per = 2
	}
	if n > int64(avail)/per {
		return 0, -1, p, errorf(CodeInvalidPayloadFraming, "truncated datum: block at datum offset %d claims %d items, only %d bytes remain", pos, n, avail)
	}
	return int(n), end, p, nil
}

// truncated is the error for a field that runs past the end of the datum.
func truncated(what string, pos int) error {
	return errorf(CodeInvalidPayloadFraming, "truncated datum: %s at datum offset %d runs past the end", what, pos)
}

// sizeError is the payload_limit_exceeded error for input over the size
// limit.
func sizeError(n, max int) error {
	return errorf(CodePayloadLimit, "payload of %d bytes exceeds the limit of %d bytes", n, max)
}

// validUTF8 is utf8.Valid, with short ASCII text checked inline.
func validUTF8(b []byte) bool {
	for i, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b[i:]) // an ASCII prefix never splits a sequence
		}
	}
	return true
}

// validString is utf8.ValidString, with short ASCII text checked inline.
func validString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.ValidString(s[i:])
		}
	}
	return true
}
