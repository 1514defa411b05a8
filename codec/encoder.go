package codec

import (
	"math"
	"slices"
)

// Encoder writes one datum of schema durable_workflow.protocol.Value v1 from
// a stream of calls, without building a Value: an adapter walks its own data
// and calls Null, Bool, Long, Double, Bytes and String for scalars, and
// BeginList or BeginMap, then the items (each map value after its Key), then
// End for containers. The result is byte for byte what AppendDatum writes
// for the equivalent Value: each non-empty list or map one block and a 00
// terminator, map entries in call order (Avro Value protocol: wire format).
//
//	var e codec.Encoder
//	e.BeginMap(2)
//	e.Key("id")
//	e.Long(7)
//	e.Key("tags")
//	e.BeginList(1)
//	e.String("a")
//	e.End()
//	e.End()
//	env, err := e.AppendEnvelopeJSON(nil)
//
// The Encoder checks what AppendDatum checks: finite doubles
// (non_finite_float), UTF-8 strings (invalid_payload_framing) and keys
// (invalid_map_key), and nesting within DefaultLimits.MaxDepth
// (payload_limit_exceeded). It also checks the calls themselves: a list or
// map gets exactly the number of items it declared, every map value follows
// a Key, End closes an open container, and there is exactly one top-level
// value; a broken sequence fails with invalid_payload_framing, since its
// bytes would not be a datum.
//
// Errors are sticky, as with bufio.Writer: the first one is kept, every
// later call does nothing, and Err, Datum, Frame and AppendEnvelopeJSON
// return it. So an adapter may make all its calls and check once at the end.
//
// The zero Encoder is ready to use. Reset makes it ready for the next value
// and keeps its buffer, so an Encoder (or a sync.Pool of them) encodes
// without allocating once its buffer has grown. An Encoder is not safe for
// concurrent use.
type Encoder struct {
	buf     []byte // header and datum so far
	err     error
	depth   int                           // open lists and maps; 0 after an error
	started bool                          // the top-level value has begun
	top     encLevel                      // the innermost open list or map (zero when none)
	outer   [defaultMaxDepth - 1]encLevel // the lists and maps around it
}

// encLevel is one open list or map of an Encoder.
type encLevel struct {
	due   int // values that may come now: a list's items left, 1 after a map's Key
	keys  int // a map's entries whose Key has not come yet
	isMap bool
}

// Reset discards the encoder's value and error and keeps its buffer.
func (e *Encoder) Reset() {
	e.buf = e.buf[:0]
	e.depth = 0
	e.top = encLevel{}
	e.started = false
	e.err = nil
}

// Err returns the first error of the encoder since the last Reset, or nil.
func (e *Encoder) Err() error { return e.err }

// fail records err unless an error is already recorded, and closes every
// open container, so that no later call gets past its first check.
func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
	e.depth, e.top = 0, encLevel{}
}

// item accounts for one value about to be written and reports whether to
// write it: at the top level it must be the first value, in a list one of
// the declared items, and in a map the value of the Key just written. The
// common cases are inlined; itemSlow handles the rest.
func (e *Encoder) item() bool {
	if e.top.due > 0 {
		e.top.due--
		return true
	}
	return e.itemSlow()
}

// itemSlow is item for the top-level value and for calls out of order.
func (e *Encoder) itemSlow() bool {
	if e.err != nil {
		return false
	}
	if e.depth == 0 {
		if e.started {
			e.fail(errorf(CodeInvalidPayloadFraming, "encoder already holds a complete value; a datum has exactly one"))
			return false
		}
		e.started = true
		e.buf = append(e.buf[:0], header...)
		return true
	}
	if e.top.isMap {
		e.fail(errorf(CodeInvalidPayloadFraming, "map value written without a Key"))
		return false
	}
	e.fail(errorf(CodeInvalidPayloadFraming, "list gets more items than the count given to BeginList"))
	return false
}

// Null writes a null.
func (e *Encoder) Null() {
	if e.item() {
		e.buf = append(e.buf, tagNull)
	}
}

// Bool writes a boolean.
func (e *Encoder) Bool(b bool) {
	if e.item() {
		var x byte
		if b {
			x = 1
		}
		e.buf = append(e.buf, tagBoolean, x)
	}
}

// Long writes a long.
func (e *Encoder) Long(i int64) {
	if e.item() {
		e.buf = append(e.buf, tagLong)
		e.varint(i)
	}
}

// varint appends the zig-zag varint of i.
//
// Every write of the Encoder appends to e.buf in place, byte by byte
// (e.buf = append(e.buf, b)) or by reslicing (appendRaw), so that it
// stores only the slice's length unless the buffer grows: no write barrier
// per value while the garbage collector runs.
func (e *Encoder) varint(i int64) {
	u := uint64(i<<1) ^ uint64(i>>63)
	for u >= 0x80 {
		e.buf = append(e.buf, byte(u)|0x80)
		u >>= 7
	}
	e.buf = append(e.buf, byte(u))
}

// appendRaw appends the bytes of s to e.buf in place.
func appendRaw[T string | []byte](e *Encoder, s T) {
	n := len(e.buf)
	if cap(e.buf)-n < len(s) {
		e.buf = slices.Grow(e.buf, len(s))
	}
	e.buf = e.buf[:n+len(s)]
	copy(e.buf[n:], s)
}

// Double writes a double; NaN and the infinities fail with
// non_finite_float.
func (e *Encoder) Double(f float64) {
	if !e.item() {
		return
	}
	if u := math.Float64bits(f); finiteBits(u) {
		e.buf = append(e.buf, tagDouble, byte(u), byte(u>>8), byte(u>>16), byte(u>>24),
			byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
		return
	}
	e.fail(errorf(CodeNonFiniteFloat, "double %v is not finite", f))
}

// Bytes writes a bytes value; b is copied and may be reused at once.
func (e *Encoder) Bytes(b []byte) {
	if e.item() {
		e.buf = append(e.buf, tagBytes)
		e.varint(int64(len(b)))
		appendRaw(e, b)
	}
}

// String writes a string; one that is not UTF-8 fails with
// invalid_payload_framing.
func (e *Encoder) String(s string) {
	if !e.item() {
		return
	}
	if !validString(s) {
		e.fail(errorf(CodeInvalidPayloadFraming, "string %q is not valid UTF-8", clip(s)))
		return
	}
	e.buf = append(e.buf, tagString)
	e.varint(int64(len(s)))
	appendRaw(e, s)
}

// BeginList starts a list of exactly n items: the next n values written are
// its items, and End closes it. A negative n fails with
// invalid_payload_framing, a list nested deeper than DefaultLimits.MaxDepth
// with payload_limit_exceeded.
func (e *Encoder) BeginList(n int) { e.begin(n, false, tagList) }

// BeginMap starts a map of exactly n entries: n times Key followed by the
// entry's value, then End. Entries keep the order of the calls; repeated
// keys are written as given. A negative n fails with
// invalid_payload_framing, a map nested deeper than DefaultLimits.MaxDepth
// with payload_limit_exceeded.
func (e *Encoder) BeginMap(n int) { e.begin(n, true, tagMap) }

// begin opens a list or map of n items.
func (e *Encoder) begin(n int, isMap bool, tag byte) {
	if !e.item() {
		return
	}
	switch {
	case n < 0:
		e.fail(errorf(CodeInvalidPayloadFraming, "negative count %d for a list or map", n))
		return
	case e.depth >= defaultMaxDepth:
		e.fail(depthError(defaultMaxDepth))
		return
	}
	e.buf = append(e.buf, tag)
	if n > 0 {
		e.varint(int64(n))
	}
	if e.depth > 0 {
		e.outer[e.depth-1] = e.top
	}
	e.top = encLevel{due: n, isMap: isMap}
	if isMap {
		e.top.due, e.top.keys = 0, n
	}
	e.depth++
}

// Key writes the key of the next entry of the innermost open map; its value
// comes next. A key that is not UTF-8 fails with invalid_map_key.
func (e *Encoder) Key(k string) {
	if e.err != nil {
		return
	}
	if e.depth == 0 || !e.top.isMap {
		e.fail(errorf(CodeInvalidPayloadFraming, "Key outside a map"))
		return
	}
	l := &e.top
	switch {
	case l.due > 0:
		e.fail(errorf(CodeInvalidPayloadFraming, "map key %q follows a key without a value", clip(k)))
		return
	case l.keys == 0:
		e.fail(errorf(CodeInvalidPayloadFraming, "map gets more entries than the count given to BeginMap"))
		return
	case !validString(k):
		e.fail(errorf(CodeInvalidMapKey, "map key %q is not valid UTF-8", clip(k)))
		return
	}
	l.keys--
	l.due = 1
	e.varint(int64(len(k)))
	appendRaw(e, k)
}

// End closes the innermost open list or map, which must have received all
// the items it declared.
func (e *Encoder) End() {
	if e.err != nil {
		return
	}
	if e.depth == 0 {
		e.fail(errorf(CodeInvalidPayloadFraming, "End without an open list or map"))
		return
	}
	if missing := e.top.due + e.top.keys; missing > 0 {
		e.fail(errorf(CodeInvalidPayloadFraming, "list or map closed with %d of its declared items missing", missing))
		return
	}
	e.depth--
	e.top = encLevel{}
	if e.depth > 0 {
		e.top = e.outer[e.depth-1]
	}
	e.buf = append(e.buf, 0)
}

// Value writes v whole, as AppendDatum does, as the next value; its nesting
// counts from the encoder's current depth.
func (e *Encoder) Value(v Value) {
	if !e.item() {
		return
	}
	out, err := appendValue(e.buf, v, e.depth)
	if err != nil {
		e.fail(err)
		return
	}
	e.buf = out
}

// complete returns the error that keeps the encoder from holding one whole
// datum, or nil.
func (e *Encoder) complete() error {
	switch {
	case e.err != nil:
		return e.err
	case !e.started:
		return errorf(CodeInvalidPayloadFraming, "encoder holds no value")
	case e.depth > 0:
		return errorf(CodeInvalidPayloadFraming, "encoder has %d lists or maps still open", e.depth)
	}
	return nil
}

// Datum returns the datum of the encoded value. The slice is the encoder's
// own buffer, valid until the next Reset; copy it to keep it. It fails with
// the encoder's first error, or with invalid_payload_framing when the value
// is missing or unfinished.
func (e *Encoder) Datum() ([]byte, error) {
	if err := e.complete(); err != nil {
		return nil, err
	}
	return e.buf[HeaderSize:], nil
}

// Frame returns the single-object frame of the encoded value (header, then
// datum), under the conditions of Datum. The slice is the encoder's own
// buffer, valid until the next Reset.
func (e *Encoder) Frame() ([]byte, error) {
	if err := e.complete(); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// AppendEnvelopeJSON appends the compact envelope JSON of the encoded value
// to dst, as AppendFrameEnvelopeJSON does for its frame, and returns the
// extended slice. It fails as Datum does, returning dst unchanged.
func (e *Encoder) AppendEnvelopeJSON(dst []byte) ([]byte, error) {
	if err := e.complete(); err != nil {
		return dst, err
	}
	return AppendFrameEnvelopeJSON(dst, e.buf), nil
}
