package codec_test

import (
	"encoding/base64"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// unb64 decodes standard base64 or fails the test.
func unb64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(tb, err)
	return b
}

// requireEqualValue fails unless want and got are codec.Equal, showing
// both projections.
func requireEqualValue(tb testing.TB, want, got codec.Value) {
	tb.Helper()
	if codec.Equal(want, got) {
		return
	}
	w, _ := codec.MarshalProjection(want)
	g, _ := codec.MarshalProjection(got)
	require.Failf(tb, "values differ", "want %s\n got %s", w, g)
}

// sortMaps returns v with every map's entries sorted by key, to compare
// values up to map order.
func sortMaps(v codec.Value) codec.Value {
	switch v.Kind() {
	case codec.KindList:
		items := make([]codec.Value, v.Len())
		for i, it := range v.Items() {
			items[i] = sortMaps(it)
		}
		return codec.List(items...)
	case codec.KindMap:
		entries := make([]codec.Entry, v.Len())
		for i, e := range v.Entries() {
			entries[i] = codec.Entry{Key: e.Key, Value: sortMaps(e.Value)}
		}
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
		return codec.Map(entries...)
	}
	return v
}

// nest returns depth lists nested around null.
func nest(depth int) codec.Value {
	v := codec.Null()
	for range depth {
		v = codec.List(v)
	}
	return v
}

// frameOf returns the frame header followed by datum.
func frameOf(datum ...byte) []byte {
	return append([]byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}, datum...)
}

// kv is a short constructor for a map entry.
func kv(key string, v codec.Value) codec.Entry { return codec.Entry{Key: key, Value: v} }
