package codec_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// conformanceDir is the seeds' shared conformance folder, next to the
// repository (tests run in the package directory).
const conformanceDir = "../../shared/conformance"

// readConformance reads a file of the shared conformance folder.
func readConformance(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(conformanceDir, filepath.FromSlash(name)))
	require.NoError(tb, err, "the conformance vectors live in %s", conformanceDir)
	return data
}

// goldenFile is avro-value-v1-golden.json (reference §2.2).
type goldenFile struct {
	Schema      string `json:"schema"`
	Fingerprint string `json:"fingerprint"`
	MagicHex    string `json:"magic_hex"`
	Cases       []struct {
		Name        string          `json:"name"`
		Kind        string          `json:"kind"`
		Value       json.RawMessage `json:"value"`
		ValueBase64 string          `json:"value_base64"`
		WireBase64  string          `json:"wire_base64"`
	} `json:"cases"`
	AlternateMapOrders []struct {
		Name       string   `json:"name"`
		WireBase64 []string `json:"wire_base64"`
	} `json:"alternate_map_orders"`
	MalformedFrames []struct {
		Name       string `json:"name"`
		Error      string `json:"error"`
		WireBase64 string `json:"wire_base64"`
	} `json:"malformed_frames"`
}

// loadGolden reads and parses the golden vectors.
func loadGolden(tb testing.TB) goldenFile {
	tb.Helper()
	var g goldenFile
	dec := json.NewDecoder(bytes.NewReader(readConformance(tb, "avro-value-v1-golden.json")))
	dec.DisallowUnknownFields()
	require.NoError(tb, dec.Decode(&g))
	require.NotEmpty(tb, g.Cases)
	return g
}

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
