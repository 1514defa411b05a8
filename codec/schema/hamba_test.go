package schema_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

func TestHamba(t *testing.T) {
	plain := schema.NewHamba(schema.HambaConfig{})
	sized := schema.NewHamba(schema.HambaConfig{BlockSizeHeader: true})
	for _, tc := range sampleValues() {
		t.Run(tc.name, func(t *testing.T) {
			ours, err := codec.AppendDatum(nil, tc.value)
			require.NoError(t, err)
			hv, err := schema.FromValue(tc.value)
			require.NoError(t, err)

			theirs, err := plain.Marshal(hv)
			require.NoError(t, err)
			withSizes, err := sized.Marshal(hv)
			require.NoError(t, err)
			if !hasMultiEntryMap(tc.value) {
				// One order only: hamba writes exactly our bytes.
				require.Equal(t, ours, theirs)
			}
			if (tc.value.Kind() == codec.KindList || tc.value.Kind() == codec.KindMap) && tc.value.Len() > 0 {
				require.Greater(t, len(withSizes), len(theirs), "block-size headers take room")
			} else {
				require.Equal(t, theirs, withSizes)
			}

			// hamba reads our bytes; we read both of hamba's forms.
			back, err := plain.Unmarshal(ours)
			require.NoError(t, err)
			got, err := schema.ToValue(back)
			require.NoError(t, err)
			MustSameValue(t, tc.value, got, false)
			for _, b := range [][]byte{theirs, withSizes} {
				got, err := codec.DecodeDatum(b)
				require.NoError(t, err)
				MustSameValue(t, tc.value, got, false)
			}
		})
	}
}

func TestHambaUnmarshalChecksFirst(t *testing.T) {
	h := schema.NewHamba(schema.HambaConfig{})
	deep := bytes.Repeat([]byte{0x0c, 0x02}, 1_000_000)
	deep = append(deep, 0x00)
	deep = append(deep, bytes.Repeat([]byte{0x00}, 1_000_000)...)
	tests := []struct {
		name  string
		datum []byte
		code  codec.Code
	}{
		// hamba alone would overflow the goroutine stack on this one and
		// take the process down.
		{name: "a million levels", datum: deep, code: codec.CodePayloadLimit},
		{name: "union index 8", datum: []byte{0x10}, code: codec.CodeInvalidPayloadFraming},
		{name: "truncated string", datum: []byte{0x0a, 0x10, 'a'}, code: codec.CodeInvalidPayloadFraming},
		{name: "trailing byte", datum: []byte{0x00, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "non-finite double", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, code: codec.CodeInvalidPayloadFraming},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Unmarshal(tc.datum)
			require.Equal(t, tc.code, codec.ErrorCode(err), "%v", err)
		})
	}
}

func TestHambaMapping(t *testing.T) {
	tests := []struct {
		name  string
		value codec.Value
		code  codec.Code
	}{
		{name: "duplicate key", value: codec.Map(codec.Entry{Key: "a"}, codec.Entry{Key: "a"}), code: codec.CodeInvalidMapKey},
		{name: "too deep", value: nest(codec.DefaultLimits.MaxDepth + 1), code: codec.CodePayloadLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.FromValue(tc.value)
			require.Equal(t, tc.code, codec.ErrorCode(err), "%v", err)
		})
	}

	hv, err := schema.FromValue(nest(codec.DefaultLimits.MaxDepth))
	require.NoError(t, err)
	_, err = schema.ToValue(hv)
	require.NoError(t, err)

	_, err = schema.ToValue(schema.HambaValue{Value: 7})
	require.ErrorContains(t, err, "branch type int")

	// Maps come out sorted, since a Go map has no order.
	v, err := schema.ToValue(schema.HambaValue{Value: schema.HambaMap{Entries: map[string]schema.HambaValue{
		"b": {Value: schema.HambaDouble{Double: math.Copysign(0, -1)}}, "a": {}, "c": {Value: schema.HambaBoolean{Boolean: true}},
	}}})
	require.NoError(t, err)
	MustSameValue(t, codec.Map(
		codec.Entry{Key: "a", Value: codec.Null()},
		codec.Entry{Key: "b", Value: codec.Double(math.Copysign(0, -1))},
		codec.Entry{Key: "c", Value: codec.Bool(true)},
	), v, true)
}

// nest returns n lists, each holding the next, around a null.
func nest(n int) codec.Value {
	v := codec.Null()
	for range n {
		v = codec.List(v)
	}
	return v
}
