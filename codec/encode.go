package codec

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// Union indexes as they appear on the wire: the zig-zag varint of the branch
// index, which for 0..7 is the single byte 2×index (Avro Value protocol: wire
// format; reference §1.1).
const (
	tagNull    = byte(KindNull) << 1
	tagBoolean = byte(KindBoolean) << 1
	tagLong    = byte(KindLong) << 1
	tagDouble  = byte(KindDouble) << 1
	tagBytes   = byte(KindBytes) << 1
	tagString  = byte(KindString) << 1
	tagList    = byte(KindList) << 1
	tagMap     = byte(KindMap) << 1
)

// AppendDatum appends the Avro binary datum of v (schema
// durable_workflow.protocol.Value v1) to dst and returns the extended slice.
// It does not allocate when dst has room.
//
// A non-empty list or map is written as one block followed by the 00
// terminator, an empty one as a single 00, as every SDK does (reference
// §1.1); map entries keep their order. It fails with non_finite_float for
// NaN or an infinity, invalid_payload_framing for a string that is not UTF-8,
// invalid_map_key for a map key that is not UTF-8, and payload_limit_exceeded
// for lists and maps nested deeper than DefaultLimits.MaxDepth. On error it
// returns dst unchanged.
func AppendDatum(dst []byte, v Value) ([]byte, error) {
	n := len(dst)
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// appendValue appends the datum of v, which sits inside depth lists and maps.
// Recursion is bounded by defaultMaxDepth.
func appendValue(dst []byte, v Value, depth int) ([]byte, error) {
	switch v.kind {
	case KindNull:
		return append(dst, tagNull), nil
	case KindBoolean:
		return append(dst, tagBoolean, byte(v.num&1)), nil
	case KindLong:
		return appendLong(append(dst, tagLong), int64(v.num)), nil
	case KindDouble:
		f := math.Float64frombits(v.num)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, errorf(CodeNonFiniteFloat, "double %v is not finite", f)
		}
		return binary.LittleEndian.AppendUint64(append(dst, tagDouble), v.num), nil
	case KindBytes:
		b := v.bytesv()
		dst = appendLong(append(dst, tagBytes), int64(len(b)))
		return append(dst, b...), nil
	case KindString:
		s := v.strv()
		if !utf8.ValidString(s) {
			return dst, errorf(CodeInvalidPayloadFraming, "string %q is not valid UTF-8", clip(s))
		}
		dst = appendLong(append(dst, tagString), int64(len(s)))
		return append(dst, s...), nil
	case KindList:
		if depth >= defaultMaxDepth {
			return dst, depthError(defaultMaxDepth)
		}
		dst = append(dst, tagList)
		if items := v.itemsv(); len(items) > 0 {
			dst = appendLong(dst, int64(len(items)))
			var err error
			for i := range items {
				if dst, err = appendValue(dst, items[i], depth+1); err != nil {
					return dst, err
				}
			}
		}
		return append(dst, 0), nil
	case KindMap:
		if depth >= defaultMaxDepth {
			return dst, depthError(defaultMaxDepth)
		}
		dst = append(dst, tagMap)
		if entries := v.entriesv(); len(entries) > 0 {
			dst = appendLong(dst, int64(len(entries)))
			var err error
			for i := range entries {
				e := &entries[i]
				if !utf8.ValidString(e.Key) {
					return dst, errorf(CodeInvalidMapKey, "map key %q is not valid UTF-8", clip(e.Key))
				}
				dst = appendLong(dst, int64(len(e.Key)))
				dst = append(dst, e.Key...)
				if dst, err = appendValue(dst, e.Value, depth+1); err != nil {
					return dst, err
				}
			}
		}
		return append(dst, 0), nil
	}
	return dst, errorf(CodeInvalidPayloadFraming, "value has no union branch %d", v.kind)
}

// appendLong appends the zig-zag varint of i (at most 10 bytes).
func appendLong(dst []byte, i int64) []byte {
	u := uint64(i<<1) ^ uint64(i>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// longSize returns the length of the zig-zag varint of i.
func longSize(i int64) int {
	u := uint64(i<<1) ^ uint64(i>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// datumSize returns the encoded size of v's datum, for presizing buffers. It
// does not validate v; values nested beyond the depth limit count as 0 bytes
// below it (the encoder rejects them anyway).
func datumSize(v Value, depth int) int {
	switch v.kind {
	case KindBoolean:
		return 2
	case KindLong:
		return 1 + longSize(int64(v.num))
	case KindDouble:
		return 9
	case KindBytes:
		return 1 + longSize(int64(v.num)) + int(v.num)
	case KindString:
		return 1 + longSize(int64(v.num)) + int(v.num)
	case KindList:
		if depth >= defaultMaxDepth {
			return 0
		}
		n := 2
		if items := v.itemsv(); len(items) > 0 {
			n += longSize(int64(len(items)))
			for i := range items {
				n += datumSize(items[i], depth+1)
			}
		}
		return n
	case KindMap:
		if depth >= defaultMaxDepth {
			return 0
		}
		n := 2
		if entries := v.entriesv(); len(entries) > 0 {
			n += longSize(int64(len(entries)))
			for i := range entries {
				e := &entries[i]
				n += longSize(int64(len(e.Key))) + len(e.Key) + datumSize(e.Value, depth+1)
			}
		}
		return n
	}
	return 1
}

// depthError is the payload_limit_exceeded error for nesting beyond max.
func depthError(max int) error {
	return errorf(CodePayloadLimit, "value nests lists and maps deeper than the limit of %d levels", max)
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 32
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
