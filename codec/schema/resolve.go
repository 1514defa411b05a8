package schema

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/weft-run/weft/codec"
)

// Resolve decodes datum, written with the writer schema, as a value of the
// reader schema (Avro specification: schema resolution; reference §1.5,
// schema evolution). Branches are matched by full name, per datum: a reader
// that has every branch the datum uses reads it, whatever other branches the
// writer schema has. So a newer reader with appended branches reads v1 data,
// and a v1 reader reads newer data as long as it uses only v1 kinds.
//
// A datum that uses a writer branch the reader lacks, or one this codec has
// no Value kind for, fails with codec.CodeUnsupportedPayloadSchema. A
// malformed datum fails with codec.CodeInvalidPayloadFraming, and one deeper
// or larger than codec.DefaultLimits with codec.CodePayloadLimit; the value
// is checked as codec.DecodeDatum checks it.
//
// Resolve never hands bytes to hamba/avro; it is safe on untrusted input and
// for concurrent use.
func Resolve(writer, reader *Schema, datum []byte) (codec.Value, error) {
	if writer == nil || reader == nil {
		return codec.Value{}, errors.New("resolve: nil schema")
	}
	if len(datum) > codec.DefaultLimits.MaxSize {
		return codec.Value{}, &codec.Error{
			Code:    codec.CodePayloadLimit,
			Message: fmt.Sprintf("datum of %d bytes exceeds the %d-byte limit", len(datum), codec.DefaultLimits.MaxSize),
		}
	}
	kinds, identity := plan(writer, reader)
	if identity {
		// Every branch keeps its v1 index: the bytes already are a v1 datum.
		return codec.DecodeDatum(datum)
	}
	t := translator{in: datum, out: make([]byte, 0, len(datum)), kinds: kinds, writer: writer, reader: reader}
	if err := t.value(0); err != nil {
		return codec.Value{}, err
	}
	if t.pos != len(t.in) {
		return codec.Value{}, framing("%d trailing bytes after the datum", len(t.in)-t.pos)
	}
	return codec.DecodeDatum(t.out)
}

// ResolveFrame decodes a single-object frame as a value of the reader
// schema: it checks the C3 01 magic, looks up the writer schema by the
// frame's fingerprint (Lookup) and resolves the datum (Resolve). It fails
// with codec.CodeInvalidPayloadFraming for a short frame or a wrong magic and
// codec.CodeUnsupportedPayloadSchema for an unknown fingerprint.
func ResolveFrame(reader *Schema, frame []byte) (codec.Value, error) {
	if len(frame) < codec.HeaderSize || !bytes.Equal(frame[:len(codec.Magic)], codec.Magic[:]) {
		return codec.Value{}, framing("expected Avro single-object magic c301")
	}
	writer, err := Lookup([8]byte(frame[len(codec.Magic):codec.HeaderSize]))
	if err != nil {
		return codec.Value{}, err
	}
	return Resolve(writer, reader, frame[codec.HeaderSize:])
}

// plan maps each writer branch to the v1 kind of the reader branch with the
// same name, or -1 when the reader lacks the branch or it has no kind. It
// reports whether every writer branch keeps its index, in which case the
// datum needs no translation.
func plan(writer, reader *Schema) (kinds []int8, identity bool) {
	kinds = make([]int8, len(writer.branches))
	identity = true
	for i, name := range writer.branches {
		kinds[i] = -1
		if j := reader.branchIndex(name); j >= 0 && writer.kinds[i] >= 0 && reader.kinds[j] == writer.kinds[i] {
			kinds[i] = reader.kinds[j]
		}
		if int(kinds[i]) != i {
			identity = false
		}
	}
	return kinds, identity
}

// translator rewrites a writer datum into the v1 datum of the same value:
// each union index becomes the reader's v1 index, and each block is written
// with a plain count (a block byte size would no longer be exact). The
// output is never longer than the input. Everything else is copied for
// codec.DecodeDatum to check.
type translator struct {
	in     []byte
	pos    int
	out    []byte
	kinds  []int8
	writer *Schema
	reader *Schema
}

// value translates one Value that sits inside level lists and maps.
func (t *translator) value(level int) error {
	start := t.pos
	idx, err := t.long()
	if err != nil {
		return err
	}
	if idx < 0 || idx >= int64(len(t.kinds)) {
		return framing("union index %d at byte %d is outside the writer schema's %d branches", idx, start, len(t.kinds))
	}
	k := t.kinds[idx]
	if k < 0 {
		return t.unsupported(int(idx))
	}
	t.out = append(t.out, byte(k)<<1)
	switch codec.Kind(k) {
	case codec.KindNull:
		return nil
	case codec.KindBoolean:
		return t.copyN(1)
	case codec.KindLong:
		_, err := t.copyLong()
		return err
	case codec.KindDouble:
		return t.copyN(8)
	case codec.KindBytes, codec.KindString:
		return t.copyString()
	default: // codec.KindList, codec.KindMap
		if level+1 > codec.DefaultLimits.MaxDepth {
			return &codec.Error{
				Code:    codec.CodePayloadLimit,
				Message: fmt.Sprintf("value nested deeper than %d levels", codec.DefaultLimits.MaxDepth),
			}
		}
		return t.blocks(level+1, codec.Kind(k) == codec.KindMap)
	}
}

// blocks translates the blocks of a list or map whose items sit at level.
func (t *translator) blocks(level int, isMap bool) error {
	for {
		count, err := t.long()
		if err != nil {
			return err
		}
		if count == 0 {
			t.out = append(t.out, 0)
			return nil
		}
		if count < 0 {
			if count == -count { // math.MinInt64
				return framing("block count %d out of range", count)
			}
			count = -count
			if _, err := t.long(); err != nil { // block byte size, dropped
				return err
			}
		}
		// Each item takes at least one byte, so a count beyond the remaining
		// input is malformed; this bounds the loop by the input.
		if count > int64(len(t.in)-t.pos) {
			return framing("block count %d exceeds the %d remaining bytes", count, len(t.in)-t.pos)
		}
		t.out = appendLong(t.out, count)
		for range count {
			if isMap {
				if err := t.copyString(); err != nil {
					return err
				}
			}
			if err := t.value(level); err != nil {
				return err
			}
		}
	}
}

// unsupported returns the unsupported_payload_schema error for a datum that
// uses writer branch idx.
func (t *translator) unsupported(idx int) error {
	name := t.writer.branches[idx]
	msg := fmt.Sprintf("writer schema %x branch %s is not in reader schema %x", t.writer.fp, name, t.reader.fp)
	if t.reader.branchIndex(name) >= 0 {
		msg = fmt.Sprintf("branch %s of reader schema %x has no Value kind in this codec", name, t.reader.fp)
	}
	return &codec.Error{Code: codec.CodeUnsupportedPayloadSchema, Message: msg}
}

// long reads one zig-zag varint long.
func (t *translator) long() (int64, error) {
	var u uint64
	for i := 0; ; i++ {
		if t.pos >= len(t.in) {
			return 0, framing("truncated long at byte %d", t.pos)
		}
		b := t.in[t.pos]
		t.pos++
		if i == 9 && b > 1 {
			return 0, framing("long at byte %d overflows 64 bits", t.pos-10)
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
}

// copyLong reads one long and copies its bytes unchanged.
func (t *translator) copyLong() (int64, error) {
	start := t.pos
	n, err := t.long()
	if err != nil {
		return 0, err
	}
	t.out = append(t.out, t.in[start:t.pos]...)
	return n, nil
}

// copyN copies the next n bytes.
func (t *translator) copyN(n int) error {
	if len(t.in)-t.pos < n {
		return framing("truncated datum at byte %d", t.pos)
	}
	t.out = append(t.out, t.in[t.pos:t.pos+n]...)
	t.pos += n
	return nil
}

// copyString copies a length-prefixed bytes or string.
func (t *translator) copyString() error {
	n, err := t.copyLong()
	if err != nil {
		return err
	}
	if n < 0 || n > int64(len(t.in)-t.pos) {
		return framing("length %d at byte %d exceeds the %d remaining bytes", n, t.pos, len(t.in)-t.pos)
	}
	return t.copyN(int(n))
}

// appendLong appends the zig-zag varint of i.
func appendLong(dst []byte, i int64) []byte {
	u := uint64(i<<1) ^ uint64(i>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// framing returns an invalid_payload_framing codec error.
func framing(format string, args ...any) error {
	return &codec.Error{Code: codec.CodeInvalidPayloadFraming, Message: fmt.Sprintf(format, args...)}
}
