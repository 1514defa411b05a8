package valuebench

import (
	"encoding/base64"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// randomNative returns a random native value (see Object) nested at most
// depth levels, with bytes sentinels among its objects.
func randomNative(r *rand.Rand, depth int) any {
	kinds := 9
	if depth == 0 {
		kinds = 6
	}
	switch r.IntN(kinds) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 1
	case 2:
		if r.IntN(2) == 0 {
			return int64(r.IntN(200)) - 100
		}
		return int64(r.Uint64())
	case 3:
		if r.IntN(4) == 0 {
			return Float(math.Copysign(0, -1))
		}
		return Float(r.NormFloat64() * 1e9)
	case 4:
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return Object{{Key: BytesSentinel, Value: base64.StdEncoding.EncodeToString(b)}}
	case 5:
		return []string{"", "x", "héllo", "€uro", "a\"b\\c"}[r.IntN(5)]
	case 6, 7:
		items := make([]any, r.IntN(6))
		for i := range items {
			items[i] = randomNative(r, depth-1)
		}
		return items
	default:
		o := make(Object, r.IntN(6))
		for i := range o {
			o[i] = Member{Key: []string{"a", "b", "key", "ключ", ""}[r.IntN(5)], Value: randomNative(r, depth-1)}
		}
		return o
	}
}

func TestStreamingAdaptersMatchValueAdapters(t *testing.T) {
	check := func(t *testing.T, native any) {
		t.Helper()
		v, err := ToValue(native)
		require.NoError(t, err)
		want, err := codec.AppendEnvelopeJSON(nil, v)
		require.NoError(t, err)
		got, err := AppendEnvelope([]byte("x"), native)
		require.NoError(t, err)
		require.Equal(t, "x"+string(want), string(got), "AppendEnvelope equals ToValue + AppendEnvelopeJSON")

		back, err := DecodeEnvelope(want)
		require.NoError(t, err)
		require.Equal(t, native, back, "DecodeEnvelope gives back the native value")
		decoded, err := codec.DecodeEnvelopeJSON(want)
		require.NoError(t, err)
		require.Equal(t, FromValue(decoded), back, "DecodeEnvelope equals DecodeEnvelopeJSON + FromValue")
	}
	c, err := LoadCorpus()
	require.NoError(t, err)
	t.Run("corpus", func(t *testing.T) { check(t, c.Value) })
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 17))
		for range 1000 {
			check(t, randomNative(r, 4))
		}
	})
}

func TestDecodeEnvelopeEveryAvroEncoding(t *testing.T) {
	for _, datum := range [][]byte{
		{0x0c, 0x02, 0x04, 0x02, 0x02, 0x04, 0x04, 0x00},                 // list of two blocks: [1, 2]
		{0x0c, 0x01, 0x04, 0x04, 0x02, 0x00},                             // negative count and size: [1]
		{0x0e, 0x01, 0x06, 0x02, 'a', 0x00, 0x00},                        // map, negative count
		{0x0e, 0x02, 0x02, 'a', 0x00, 0x02, 0x02, 'b', 0x02, 0x00, 0x00}, // map, two blocks
		{0x0c, 0x02, 0x08, 0x04, 0x00, 0xff, 0x00},                       // bytes in a list
		{0x84, 0x00, 0x82, 0x00},                                         // overlong varints: long 1
	} {
		frame := append([]byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}, datum...)
		v, err := codec.DecodeFrame(frame)
		require.NoError(t, err, "%x", datum)
		got, err := DecodeEnvelope(codec.AppendFrameEnvelopeJSON(nil, frame))
		require.NoError(t, err, "%x", datum)
		require.Equal(t, FromValue(v), got, "%x", datum)
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		code codec.Code
	}{
		{name: "json codec", data: `{"codec":"json","blob":"e30="}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "no blob", data: `{"codec":"avro"}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "bad base64", data: `{"codec":"avro","blob":"wwHioz3/VYAiNwA"}`, code: codec.CodeInvalidPayloadFraming},
		{name: "other schema", data: `{"codec":"avro","blob":"wwEAAAAAAAAAAAA="}`, code: codec.CodeUnsupportedPayloadSchema},
		{name: "truncated datum", data: `{"codec":"avro","blob":"wwHioz3/VYAiNwo="}`, code: codec.CodeInvalidPayloadFraming},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEnvelope([]byte(tc.data))
			require.ErrorIs(t, err, tc.code)
			_, want := codec.DecodeEnvelopeJSON([]byte(tc.data))
			require.EqualError(t, err, want.Error())
		})
	}
}
