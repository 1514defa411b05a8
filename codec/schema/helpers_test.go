package schema_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// maxGenLevel bounds the nesting of generated values, well below the codec's
// limit, so hamba (which has none) can take them.
const maxGenLevel = 20

// byteSource hands out the fuzz input a byte at a time, then zeros, so a
// generated value is bounded by the input length.
type byteSource struct{ b []byte }

func (s *byteSource) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *byteSource) u64() uint64 {
	var u uint64
	for range 8 {
		u = u<<8 | uint64(s.next())
	}
	return u
}

func (s *byteSource) text() string {
	n := int(s.next() % 16)
	raw := make([]byte, 0, n)
	for range n {
		raw = append(raw, s.next())
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}

// genValue builds a valid Value from s: finite doubles, UTF-8 strings, maps
// with unique keys, nested at most maxGenLevel deep.
func genValue(s *byteSource, level int) codec.Value {
	k := codec.Kind(s.next() % 8)
	if level >= maxGenLevel && k >= codec.KindList {
		k = codec.KindString
	}
	switch k {
	case codec.KindNull:
		return codec.Null()
	case codec.KindBoolean:
		return codec.Bool(s.next()&1 == 1)
	case codec.KindLong:
		return codec.Long(int64(s.u64()))
	case codec.KindDouble:
		f := math.Float64frombits(s.u64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = math.Copysign(0, f) // -0.0 or 0.0
		}
		return codec.Double(f)
	case codec.KindBytes:
		return codec.Bytes([]byte(s.text()))
	case codec.KindString:
		return codec.String(s.text())
	case codec.KindList:
		items := make([]codec.Value, int(s.next()%5))
		for i := range items {
			items[i] = genValue(s, level+1)
		}
		return codec.List(items...)
	default:
		n := int(s.next() % 5)
		entries := make([]codec.Entry, 0, n)
		seen := map[string]bool{}
		for range n {
			key := s.text()
			for seen[key] {
				key += "+"
			}
			seen[key] = true
			entries = append(entries, codec.Entry{Key: key, Value: genValue(s, level+1)})
		}
		return codec.Map(entries...)
	}
}

// sameValue reports whether a and b are the same value. Doubles compare by
// bits, so -0.0 differs from 0.0. With ordered unset, maps compare as sets
// of entries (their keys must be unique).
func sameValue(a, b codec.Value, ordered bool) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case codec.KindNull:
		return true
	case codec.KindBoolean:
		x, _ := a.AsBool()
		y, _ := b.AsBool()
		return x == y
	case codec.KindLong:
		x, _ := a.AsLong()
		y, _ := b.AsLong()
		return x == y
	case codec.KindDouble:
		x, _ := a.AsDouble()
		y, _ := b.AsDouble()
		return math.Float64bits(x) == math.Float64bits(y)
	case codec.KindBytes:
		x, _ := a.AsBytes()
		y, _ := b.AsBytes()
		return bytes.Equal(x, y)
	case codec.KindString:
		x, _ := a.AsString()
		y, _ := b.AsString()
		return x == y
	case codec.KindList:
		if a.Len() != b.Len() {
			return false
		}
		for i, item := range a.Items() {
			if !sameValue(item, b.Items()[i], ordered) {
				return false
			}
		}
		return true
	default:
		if a.Len() != b.Len() {
			return false
		}
		for i, e := range a.Entries() {
			if ordered {
				f := b.Entries()[i]
				if e.Key != f.Key || !sameValue(e.Value, f.Value, ordered) {
					return false
				}
				continue
			}
			v, ok := b.Get(e.Key)
			if !ok || !sameValue(e.Value, v, ordered) {
				return false
			}
		}
		return true
	}
}

// MustSameValue fails the test unless want and got are the same value
// (see sameValue).
func MustSameValue(tb testing.TB, want, got codec.Value, ordered bool) {
	tb.Helper()
	if !sameValue(want, got, ordered) {
		wp, _ := codec.MarshalProjection(want)
		gp, _ := codec.MarshalProjection(got)
		require.Failf(tb, "values differ", "want %s\n got %s", wp, gp)
	}
}

// hasMultiEntryMap reports whether v holds a map of two or more entries,
// whose order hamba does not keep.
func hasMultiEntryMap(v codec.Value) bool {
	switch v.Kind() {
	case codec.KindList:
		for _, item := range v.Items() {
			if hasMultiEntryMap(item) {
				return true
			}
		}
	case codec.KindMap:
		if v.Len() > 1 {
			return true
		}
		for _, e := range v.Entries() {
			if hasMultiEntryMap(e.Value) {
				return true
			}
		}
	}
	return false
}

// sampleValues are hand-picked values covering every kind, the edges of
// longs and doubles, and nesting.
func sampleValues() []struct {
	name  string
	value codec.Value
} {
	return []struct {
		name  string
		value codec.Value
	}{
		{name: "null", value: codec.Null()},
		{name: "true", value: codec.Bool(true)},
		{name: "false", value: codec.Bool(false)},
		{name: "long zero", value: codec.Long(0)},
		{name: "long min", value: codec.Long(math.MinInt64)},
		{name: "long max", value: codec.Long(math.MaxInt64)},
		{name: "long beyond 2^53", value: codec.Long(1<<53 + 1)},
		{name: "double", value: codec.Double(3.25)},
		{name: "negative zero", value: codec.Double(math.Copysign(0, -1))},
		{name: "smallest subnormal", value: codec.Double(math.SmallestNonzeroFloat64)},
		{name: "bytes", value: codec.Bytes([]byte{0x00, 0xff})},
		{name: "empty bytes", value: codec.Bytes(nil)},
		{name: "string", value: codec.String("héllo ✓")},
		{name: "empty list", value: codec.List()},
		{name: "empty map", value: codec.Map()},
		{name: "nested", value: codec.Map(
			codec.Entry{Key: "list", Value: codec.List(codec.Long(1), codec.String("two"), codec.Double(3.5),
				codec.List(codec.Bool(false), codec.Null()), codec.Map(codec.Entry{Key: "k", Value: codec.String("v")}))},
			codec.Entry{Key: "bytes", Value: codec.Bytes([]byte{0, 1, 2, 0xff})},
			codec.Entry{Key: "empty", Value: codec.Map()},
		)},
	}
}
