package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// FuzzHambaAgrees builds a random valid value from the fuzz input (nested at
// most maxGenLevel deep, so hamba can take it) and checks that the codec and
// hamba/avro agree on it: hamba decodes our datum to the same value, we
// decode hamba's datum (with and without block-size headers) to the same
// value, and, in the map order hamba chose, our bytes equal hamba's
// header-less bytes.
func FuzzHambaAgrees(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{1, 1},
		{2, 0x80, 0, 0, 0, 0, 0, 0, 0},
		{3, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18},
		{4, 3, 0, 1, 0xff},
		{5, 5, 'h', 0xc3, 0xa9, 'l', 'o'},
		{6, 4, 0, 1, 1, 2, 7, 7},
		{7, 3, 1, 'a', 0, 1, 'b', 6, 2, 7, 1, 'c', 5, 1, 'z', 1, 'a', 1},
		{6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1, 6, 1},
	} {
		f.Add(seed)
	}
	plain := schema.NewHamba(schema.HambaConfig{})
	sized := schema.NewHamba(schema.HambaConfig{BlockSizeHeader: true})
	f.Fuzz(func(t *testing.T, data []byte) {
		v := genValue(&byteSource{b: data}, 0)
		ours, err := codec.AppendDatum(nil, v)
		require.NoError(t, err)
		hv, err := schema.FromValue(v)
		require.NoError(t, err)

		// hamba decodes our bytes to the same value.
		back, err := plain.Unmarshal(ours)
		require.NoError(t, err)
		got, err := schema.ToValue(back)
		require.NoError(t, err)
		MustSameValue(t, v, got, false)

		// We decode hamba's bytes, in both block forms, to the same value.
		theirs, err := plain.Marshal(hv)
		require.NoError(t, err)
		withSizes, err := sized.Marshal(hv)
		require.NoError(t, err)
		for _, b := range [][]byte{theirs, withSizes} {
			got, err := codec.DecodeDatum(b)
			require.NoError(t, err)
			MustSameValue(t, v, got, false)
		}

		// In hamba's map order our encoder writes hamba's exact bytes.
		inTheirOrder, err := codec.DecodeDatum(theirs)
		require.NoError(t, err)
		again, err := codec.AppendDatum(nil, inTheirOrder)
		require.NoError(t, err)
		require.Equal(t, theirs, again)
		if !hasMultiEntryMap(v) {
			require.Equal(t, ours, theirs)
		}
	})
}
