package codec

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Decoder reads one datum of schema durable_workflow.protocol.Value v1 value
// by value, without building a Value, so an adapter can build its own types
// straight from the wire. Reset, ResetFrame and ResetEnvelopeJSON check the
// whole input first, exactly as DecodeDatum, DecodeFrame and
// DecodeEnvelopeJSON do (with DefaultLimits, in the same order, with the same
// error codes), so reading a valid input afterwards cannot fail.
//
// Next reads the next value and returns its kind; Bool, Long, Double,
// String and Bytes return the scalar it read. A list or map that Next opens
// is read with More, which reports whether another item follows (reading
// block headers, so every valid Avro encoding works) and closes the
// container after its last item; before each map value comes Key:
//
//	var d codec.Decoder
//	if err := d.ResetEnvelopeJSON(data); err != nil {
//		return err
//	}
//	if d.Next() == codec.KindMap {
//		for d.More() {
//			key := d.Key()
//			switch d.Next() {
//			case codec.KindString:
//				use(key, d.String())
//			…
//			}
//		}
//	}
//	return d.Finish()
//
// Calls out of order (a Key outside a map or twice, a map value without its
// Key, a list item More did not announce, a second top-level value) fail
// with invalid_payload_framing; errors are sticky, later calls return zero
// values, and Err and Finish report the first. Finish also fails when the
// value was not read to its end.
//
// Strings, keys and bytes are copied, as they are read, into one buffer a
// Reset allocates for all of them (its size is known from the check): they
// never refer to the input, and one allocation serves them all.
// ResetEnvelopeJSON decodes the frame into a buffer the decoder keeps and
// reuses, so a reused Decoder allocates only that one buffer per value.
//
// The zero Decoder holds no input; a Decoder may be reused with another
// Reset. It is not safe for concurrent use.
type Decoder struct {
	d       []byte // the datum
	pos     int
	data    []byte // the contents of the strings, keys and bytes read so far
	scratch []byte // frame buffer of ResetEnvelopeJSON, reused
	started bool   // the top-level value has been read
	keyed   bool   // in a map, a Key was read and its value is due
	kind    Kind   // kind of the value Next read last
	num     uint64
	off     int // offset in data of the last string or bytes
	err     error
	c       counts
	depth   int
	levels  [defaultMaxDepth]decLevel
}

// maxScratch is the largest frame buffer a Decoder keeps for reuse.
const maxScratch = 64 << 10

// decLevel is one open list or map of a Decoder.
type decLevel struct {
	remaining int  // items left in the current block
	ended     bool // the terminator has been read
	isMap     bool
}

// Reset makes the decoder read datum, after checking all of it as
// DecodeDatum does. It returns the check's error, which the decoder keeps.
// datum is read, not modified, until the next Reset.
func (d *Decoder) Reset(datum []byte) error {
	return d.reset(datum)
}

// ResetFrame makes the decoder read the datum of a single-object frame,
// after checking all of it as DecodeFrame does. It returns the check's
// error, which the decoder keeps. frame is read, not modified, until the
// next Reset.
func (d *Decoder) ResetFrame(frame []byte) error {
	if err := checkHeader(frame, Limits{}); err != nil {
		return d.clear(err)
	}
	return d.reset(frame[HeaderSize:])
}

// ResetEnvelopeJSON makes the decoder read the value carried by envelope
// JSON, after checking all of it as DecodeEnvelopeJSON does: codec tag,
// envelope, strict base64, frame header, datum. It returns the check's
// error, which the decoder keeps. The frame is decoded into the decoder's
// own buffer (kept for reuse up to 64 KiB), so data is not retained.
func (d *Decoder) ResetEnvelopeJSON(data []byte) error {
	frame, err := parseEnvelopeFrame(d.scratch[:0], data)
	if cap(frame) <= maxScratch && cap(frame) > cap(d.scratch) {
		d.scratch = frame[:0]
	}
	if err == nil {
		err = checkHeader(frame, Limits{})
	}
	if err != nil {
		return d.clear(err)
	}
	return d.reset(frame[HeaderSize:])
}

// reset checks datum with DefaultLimits and, if it passes, makes the
// decoder read it, with a buffer for the contents of its strings, keys and
// bytes.
func (d *Decoder) reset(datum []byte) error {
	if len(datum) > defaultMaxSize {
		return d.clear(sizeError(len(datum), defaultMaxSize))
	}
	c, err := scan(datum, defaultMaxDepth)
	if err != nil {
		return d.clear(err)
	}
	_ = d.clear(nil)
	d.d, d.c = datum, c
	if c.dataBytes > 0 {
		d.data = make([]byte, 0, c.dataBytes)
	}
	return nil
}

// clear drops the decoder's input and state and records err, which it
// returns.
func (d *Decoder) clear(err error) error {
	d.d, d.pos, d.data = nil, 0, nil
	d.started, d.keyed = false, false
	d.kind, d.num, d.off = KindNull, 0, 0
	d.err, d.c, d.depth = err, counts{}, 0
	return err
}

// take copies the n bytes at d.d[p:] to the data buffer and returns their
// offset there. The buffer was sized for every string, key and bytes of the
// datum, each taken once, so it never grows; reslicing it stores only its
// length (no write barrier).
func (d *Decoder) take(p, n int) int {
	off := len(d.data)
	d.data = d.data[:off+n]
	copy(d.data[off:], d.d[p:p+n])
	return off
}

// Counts returns the number of list items and of map entries in the whole
// datum, for sizing the memory an adapter needs before reading it.
func (d *Decoder) Counts() (items, entries int) { return d.c.items, d.c.entries }

// Err returns the decoder's first error, or nil.
func (d *Decoder) Err() error { return d.err }

// fail records an out-of-order call.
func (d *Decoder) fail(msg string) {
	if d.err == nil {
		d.err = errorf(CodeInvalidPayloadFraming, "decoder: %s", msg)
	}
	d.kind = KindNull
}

// Next reads the next value and returns its kind: the datum's value, the
// next item of the innermost open list (after More reported it), or the
// value of the map entry whose Key was just read. A list or map is opened:
// read its items with More. On error Next returns KindNull.
func (d *Decoder) Next() Kind {
	if d.err != nil || d.d == nil {
		if d.err == nil {
			d.fail("no input; call a Reset method")
		}
		return KindNull
	}
	if d.depth == 0 {
		if d.started {
			d.fail("the datum holds one value, already read")
			return KindNull
		}
		d.started = true
	} else if l := &d.levels[d.depth-1]; l.isMap {
		if !d.keyed {
			d.fail("map value read without its Key")
			return KindNull
		}
		d.keyed = false
	} else {
		if l.remaining == 0 {
			d.fail("list item read where More reported none")
			return KindNull
		}
		l.remaining--
	}

	// scan accepted the datum: every field is well formed and fits.
	b := d.d[d.pos]
	var idx int64
	if b < 0x80 {
		idx = int64(b >> 1)
		d.pos++
	} else {
		idx, d.pos, _ = readLong(d.d, d.pos, "")
	}
	k := Kind(idx)
	d.kind = k
	switch k {
	case KindBoolean:
		d.num = uint64(d.d[d.pos])
		d.pos++
	case KindLong:
		var n int64
		if b := d.d[d.pos]; b < 0x80 {
			n = int64(b>>1) ^ -int64(b&1)
			d.pos++
		} else {
			n, d.pos, _ = readLong(d.d, d.pos, "")
		}
		d.num = uint64(n)
	case KindDouble:
		d.num = binary.LittleEndian.Uint64(d.d[d.pos:])
		d.pos += 8
	case KindBytes, KindString:
		n, p, _ := readLen(d.d, d.pos, "")
		d.num, d.off, d.pos = uint64(n), d.take(p, n), p+n
	case KindList, KindMap:
		n, _, p, _ := readBlock(d.d, d.pos, k == KindMap)
		d.pos = p
		d.levels[d.depth] = decLevel{remaining: n, ended: n == 0, isMap: k == KindMap}
		d.depth++
	}
	return k
}

// More reports whether the innermost open list or map has another item (or
// entry) to read; when it has none, More closes it and returns false, and
// the enclosing container continues. It returns false when no list or map
// is open.
func (d *Decoder) More() bool {
	if d.err != nil || d.depth == 0 {
		return false
	}
	if d.keyed {
		d.fail("More called while a map value is due")
		return false
	}
	l := &d.levels[d.depth-1]
	if l.remaining > 0 {
		return true
	}
	if !l.ended {
		n, _, p, _ := readBlock(d.d, d.pos, l.isMap)
		d.pos = p
		if n > 0 {
			l.remaining = n
			return true
		}
	}
	d.depth--
	return false
}

// Len returns the number of items left in the current block of the
// innermost open list or map. Right after Next opens one it is the length
// of the first block, which in the encoding every SDK writes (one block) is
// the container's length: a size hint, since another block may follow.
func (d *Decoder) Len() int {
	if d.depth == 0 {
		return 0
	}
	return d.levels[d.depth-1].remaining
}

// Key reads the key of the next entry of the innermost open map, after More
// reported one; Next then reads its value.
func (d *Decoder) Key() string {
	if d.err != nil {
		return ""
	}
	if d.depth == 0 || !d.levels[d.depth-1].isMap {
		d.fail("Key outside a map")
		return ""
	}
	l := &d.levels[d.depth-1]
	if d.keyed || l.remaining == 0 {
		d.fail("Key read where More reported no entry")
		return ""
	}
	l.remaining--
	d.keyed = true
	n, p, _ := readLen(d.d, d.pos, "")
	d.pos = p + n
	return d.str(d.take(p, n), n)
}

// str returns the n bytes at offset off of the data buffer as a string.
// Each region of the buffer is written once, before any string refers to
// it, and never again.
func (d *Decoder) str(off, n int) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&d.data[off], n)
}

// Bool returns the boolean Next read, or false if it read another kind.
func (d *Decoder) Bool() bool { return d.kind == KindBoolean && d.num == 1 }

// Long returns the long Next read, or 0 if it read another kind.
func (d *Decoder) Long() int64 {
	if d.kind != KindLong {
		return 0
	}
	return int64(d.num)
}

// Double returns the double Next read, or 0 if it read another kind.
func (d *Decoder) Double() float64 {
	if d.kind != KindDouble {
		return 0
	}
	return math.Float64frombits(d.num)
}

// String returns the string Next read, or "" if it read another kind.
func (d *Decoder) String() string {
	if d.kind != KindString {
		return ""
	}
	return d.str(d.off, int(d.num))
}

// Bytes returns the bytes Next read (non-nil, possibly empty), or nil if it
// read another kind. The slice must not be modified.
func (d *Decoder) Bytes() []byte {
	if d.kind != KindBytes {
		return nil
	}
	if d.num == 0 {
		return []byte{}
	}
	return d.data[d.off : d.off+int(d.num) : d.off+int(d.num)]
}

// Finish returns the decoder's first error, or nil if the value has been
// read to its end: every list and map closed by More. A value not read to
// its end (or no input) fails with invalid_payload_framing, and that error
// stays, as every other. After a successful Finish the decoder no longer
// refers to the memory of the strings and bytes it handed out.
func (d *Decoder) Finish() error {
	switch {
	case d.err != nil:
	case d.d == nil:
		d.fail("no input; call a Reset method")
	case !d.started || d.depth > 0:
		d.fail("the value was not read to its end")
	default:
		d.data = nil
	}
	return d.err
}
