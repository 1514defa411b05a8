package codec_test

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/weft-run/weft/codec"
)

// randomValue returns a random valid value nested at most depth levels:
// every kind, empty and non-empty containers, repeated map keys, multi-byte
// varints, -0.0, and non-ASCII text.
func randomValue(r *rand.Rand, depth int) codec.Value {
	kinds := 8
	if depth == 0 {
		kinds = 6
	}
	switch codec.Kind(r.IntN(kinds)) {
	case codec.KindNull:
		return codec.Null()
	case codec.KindBoolean:
		return codec.Bool(r.IntN(2) == 1)
	case codec.KindLong:
		switch r.IntN(4) {
		case 0:
			return codec.Long(int64(r.IntN(128)) - 64)
		case 1:
			return codec.Long(math.MinInt64 + int64(r.IntN(3)))
		case 2:
			return codec.Long(math.MaxInt64 - int64(r.IntN(3)))
		}
		return codec.Long(int64(r.Uint64()))
	case codec.KindDouble:
		switch r.IntN(4) {
		case 0:
			return codec.Double(math.Copysign(0, -1))
		case 1:
			return codec.Double(math.MaxFloat64)
		}
		return codec.Double(r.NormFloat64() * 1e6)
	case codec.KindBytes:
		b := make([]byte, randomLen(r))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return codec.Bytes(b)
	case codec.KindString:
		return codec.String(randomText(r))
	case codec.KindList:
		items := make([]codec.Value, randomLen(r)%12)
		for i := range items {
			items[i] = randomValue(r, depth-1)
		}
		return codec.List(items...)
	default:
		entries := make([]codec.Entry, randomLen(r)%12)
		for i := range entries {
			key := randomText(r)
			if i > 0 && r.IntN(8) == 0 {
				key = entries[r.IntN(i)].Key // a repeated key
			}
			entries[i] = codec.Entry{Key: key, Value: randomValue(r, depth-1)}
		}
		return codec.Map(entries...)
	}
}

// randomLen returns a length that is mostly small and sometimes needs a
// two-byte varint.
func randomLen(r *rand.Rand) int {
	if r.IntN(16) == 0 {
		return 64 + r.IntN(200)
	}
	return r.IntN(9)
}

// randomText returns random valid UTF-8.
func randomText(r *rand.Rand) string {
	const alphabet = "ab z09_-$\"\\\x00\x7fé€😀\u2028"
	runes := []rune(alphabet)
	var b strings.Builder
	for range randomLen(r) {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// streamValue writes v to e call by call, the way an adapter of another
// type would, without Encoder.Value.
func streamValue(e *codec.Encoder, v codec.Value) {
	switch v.Kind() {
	case codec.KindNull:
		e.Null()
	case codec.KindBoolean:
		b, _ := v.AsBool()
		e.Bool(b)
	case codec.KindLong:
		i, _ := v.AsLong()
		e.Long(i)
	case codec.KindDouble:
		f, _ := v.AsDouble()
		e.Double(f)
	case codec.KindBytes:
		b, _ := v.AsBytes()
		e.Bytes(b)
	case codec.KindString:
		s, _ := v.AsString()
		e.String(s)
	case codec.KindList:
		e.BeginList(v.Len())
		for _, item := range v.Items() {
			streamValue(e, item)
		}
		e.End()
	case codec.KindMap:
		e.BeginMap(v.Len())
		for _, en := range v.Entries() {
			e.Key(en.Key)
			streamValue(e, en.Value)
		}
		e.End()
	}
}

// pullValue reads the next value of d into a Value, the way an adapter of
// another type would; blocks of any size are gathered with More.
func pullValue(d *codec.Decoder) codec.Value {
	switch d.Next() {
	case codec.KindBoolean:
		return codec.Bool(d.Bool())
	case codec.KindLong:
		return codec.Long(d.Long())
	case codec.KindDouble:
		return codec.Double(d.Double())
	case codec.KindBytes:
		return codec.Bytes(d.Bytes())
	case codec.KindString:
		return codec.String(d.String())
	case codec.KindList:
		items := make([]codec.Value, 0, d.Len())
		for d.More() {
			items = append(items, pullValue(d))
		}
		return codec.List(items...)
	case codec.KindMap:
		entries := make([]codec.Entry, 0, d.Len())
		for d.More() {
			k := d.Key()
			entries = append(entries, codec.Entry{Key: k, Value: pullValue(d)})
		}
		return codec.Map(entries...)
	}
	return codec.Null()
}

// countValue returns the list items and map entries of v, as
// Decoder.Counts reports them.
func countValue(v codec.Value) (items, entries int) {
	switch v.Kind() {
	case codec.KindList:
		items = v.Len()
		for _, it := range v.Items() {
			i, e := countValue(it)
			items, entries = items+i, entries+e
		}
	case codec.KindMap:
		entries = v.Len()
		for _, en := range v.Entries() {
			i, e := countValue(en.Value)
			items, entries = items+i, entries+e
		}
	}
	return items, entries
}
