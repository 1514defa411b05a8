package codec_test

import (
	"bytes"
	"testing"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/codectest"
)

// addGoldenFrames seeds f with every frame of the golden vectors, valid and
// malformed.
func addGoldenFrames(f *testing.F) {
	f.Helper()
	g := codectest.LoadGolden(f)
	for _, c := range g.Cases {
		f.Add(unb64(f, c.WireBase64))
	}
	for _, c := range g.AlternateMapOrders {
		for _, w := range c.WireBase64 {
			f.Add(unb64(f, w))
		}
	}
	for _, c := range g.MalformedFrames {
		f.Add(unb64(f, c.WireBase64))
	}
}

// FuzzDecodeFrame checks that decoding never panics, that every failure
// carries a code, that ValidateFrame agrees with DecodeFrame, and that
// whatever decodes re-encodes to a frame that decodes to the same value —
// byte for byte the input exactly when the input is canonical.
func FuzzDecodeFrame(f *testing.F) {
	addGoldenFrames(f)
	// Non-canonical but valid encodings.
	f.Add(frameOf(0x0c, 0x02, 0x00, 0x02, 0x00, 0x00))      // two blocks
	f.Add(frameOf(0x0c, 0x03, 0x04, 0x00, 0x00, 0x00))      // negative count and size
	f.Add(frameOf(0x0e, 0x01, 0x06, 0x02, 'a', 0x00, 0x00)) // map, negative count
	f.Add(frameOf(0x84, 0x80, 0x00))                        // overlong varints
	f.Fuzz(func(t *testing.T, frame []byte) {
		v, err := codec.DecodeFrame(frame)
		verr := codec.ValidateFrame(frame, codec.Limits{})
		if err != nil {
			if codec.ErrorCode(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			if codec.ErrorCode(verr) != codec.ErrorCode(err) {
				t.Fatalf("ValidateFrame says %v, DecodeFrame says %v", verr, err)
			}
			return
		}
		if verr != nil {
			t.Fatalf("ValidateFrame rejects what DecodeFrame accepts: %v", verr)
		}
		re, err := codec.EncodeFrame(v)
		if err != nil {
			t.Fatalf("re-encode a decoded value: %v", err)
		}
		if got, want := bytes.Equal(re, frame), canonical(frame[codec.HeaderSize:]); got != want {
			t.Fatalf("re-encode equals input: %v, input canonical: %v\n in  %x\n out %x", got, want, frame, re)
		}
		v2, err := codec.DecodeFrame(re)
		if err != nil {
			t.Fatalf("decode the re-encoded frame: %v", err)
		}
		if !codec.Equal(v, v2) {
			t.Fatalf("decode(encode(decode(x))) differs from decode(x) for %x", frame)
		}
		// The projection is lossless too.
		p, err := codec.MarshalProjection(v)
		if err != nil {
			t.Fatalf("project a decoded value: %v", err)
		}
		v3, err := codec.ParseProjection(p)
		if err != nil {
			t.Fatalf("parse projection %s: %v", p, err)
		}
		if !codec.Equal(v, v3) {
			t.Fatalf("projection %s does not read back to the same value", p)
		}
	})
}

// FuzzProjection checks that parsing never panics, every failure carries a
// code, and whatever parses prints and parses back to the same value and
// the same text, and survives a frame round trip.
func FuzzProjection(f *testing.F) {
	g := codectest.LoadGolden(f)
	for _, c := range g.Cases {
		v, err := codec.DecodeFrame(unb64(f, c.WireBase64))
		if err != nil {
			f.Fatal(err)
		}
		p, err := codec.MarshalProjection(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"$x":1}`, `{"$type":"map","entries":[{"value":1,"key":"0"}]}`,
		`1e400`, `-0`, `-0.0`, `9223372036854775808`, `5e-324`, `"\ud800"`, `[[[[[]]]]]`, `{"":{"":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := codec.ParseProjection(data)
		if err != nil {
			if codec.ErrorCode(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		p1, err := codec.MarshalProjection(v)
		if err != nil {
			t.Fatalf("marshal a parsed value: %v", err)
		}
		v2, err := codec.ParseProjection(p1)
		if err != nil {
			t.Fatalf("parse %s: %v", p1, err)
		}
		if !codec.Equal(v, v2) {
			t.Fatalf("%s parses to another value than %s", p1, data)
		}
		p2, err := codec.MarshalProjection(v2)
		if err != nil || !bytes.Equal(p1, p2) {
			t.Fatalf("projection not stable: %s then %s (%v)", p1, p2, err)
		}
		frame, err := codec.EncodeFrame(v)
		if err != nil {
			t.Fatalf("encode a parsed value: %v", err)
		}
		v3, err := codec.DecodeFrame(frame)
		if err != nil || !codec.Equal(v, v3) {
			t.Fatalf("frame round trip of %s: %v", p1, err)
		}
	})
}

// canonical reports whether datum, which decodes, is exactly what the
// encoder writes: every varint minimal, every non-empty list or map one
// block with a positive count, every empty one a single 00.
func canonical(datum []byte) bool {
	pos, ok := canonicalValue(datum, 0)
	return ok && pos == len(datum)
}

// minimalLong reads a varint at d[pos:] and reports whether it is minimal.
func minimalLong(d []byte, pos int) (int64, int, bool) {
	var u uint64
	for i := 0; pos < len(d) && i < 10; i++ {
		b := d[pos]
		pos++
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos, i == 0 || b != 0
		}
	}
	return 0, pos, false
}

func canonicalValue(d []byte, pos int) (int, bool) {
	idx, pos, ok := minimalLong(d, pos)
	if !ok {
		return pos, false
	}
	switch idx {
	case 0:
		return pos, true
	case 1:
		return pos + 1, true
	case 2:
		_, pos, ok = minimalLong(d, pos)
		return pos, ok
	case 3:
		return pos + 8, true
	case 4, 5:
		n, pos, ok := minimalLong(d, pos)
		return pos + int(n), ok
	case 6, 7:
		n, pos, ok := minimalLong(d, pos)
		if !ok || n < 0 {
			return pos, false
		}
		for range n {
			if idx == 7 {
				var k int64
				if k, pos, ok = minimalLong(d, pos); !ok {
					return pos, false
				}
				pos += int(k)
			}
			if pos, ok = canonicalValue(d, pos); !ok {
				return pos, false
			}
		}
		if n > 0 {
			// One block only: the terminator must follow.
			if pos >= len(d) || d[pos] != 0 {
				return pos, false
			}
			pos++
		}
		return pos, true
	}
	return pos, false
}
