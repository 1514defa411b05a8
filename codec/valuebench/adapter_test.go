package valuebench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

func TestAdapters(t *testing.T) {
	c, err := LoadCorpus()
	require.NoError(t, err)

	v, err := ToValue(c.Value)
	require.NoError(t, err)
	blob, ok := v.Get("blob")
	require.True(t, ok)
	b, ok := blob.AsBytes()
	require.True(t, ok, "the sentinel becomes bytes")
	require.Equal(t, []byte{0x00, 0xff}, b)
	ratio, _ := v.Get("ratio")
	require.Equal(t, codec.KindDouble, ratio.Kind())
	require.Equal(t, c.Value, FromValue(v))

	hv, err := ToHamba(c.Value)
	require.NoError(t, err)
	back, err := FromHamba(hv)
	require.NoError(t, err)
	require.Equal(t, sortedNative(c.Value), sortedNative(back))
	viaCodec, err := schema.ToValue(hv)
	require.NoError(t, err)
	require.Equal(t, sortedNative(c.Value), sortedNative(FromValue(viaCodec)))
}

func TestAdapterErrors(t *testing.T) {
	deep := any(nil)
	for range codec.DefaultLimits.MaxDepth + 1 {
		deep = []any{deep}
	}
	tests := []struct {
		name   string
		native any
		want   string
	}{
		{name: "go int", native: []any{7}, want: "unsupported_value_type: int"},
		{name: "go map", native: map[string]any{}, want: "unsupported_value_type"},
		{name: "bad sentinel base64", native: Object{{Key: BytesSentinel, Value: "AP8"}}, want: "bytes sentinel"},
		{name: "too deep", native: deep, want: "payload_limit_exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToValue(tc.native)
			require.ErrorContains(t, err, tc.want)
			_, err = ToHamba(tc.native)
			require.ErrorContains(t, err, tc.want)
			out, err := AppendEnvelope([]byte("keep"), tc.native)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, "keep", string(out))
		})
	}

	// An object that only looks like the sentinel stays a map.
	for _, o := range []Object{
		{{Key: BytesSentinel, Value: int64(1)}},
		{{Key: BytesSentinel, Value: "AP8="}, {Key: "x", Value: nil}},
	} {
		v, err := ToValue(o)
		require.NoError(t, err)
		require.Equal(t, codec.KindMap, v.Kind())
		env, err := AppendEnvelope(nil, o)
		require.NoError(t, err)
		back, err := DecodeEnvelope(env)
		require.NoError(t, err)
		require.Equal(t, o, back)
	}

	_, err := FromHamba(schema.HambaValue{Value: "text"})
	require.ErrorContains(t, err, "branch type string")
}

func TestWrapper(t *testing.T) {
	j := []byte(strings.Repeat("x", 193))
	frame := appendWrapper(nil, j)
	require.Len(t, frame, 197)
	require.Equal(t, []byte{0x00, 0x82, 0x03}, frame[:3], "marker, then the zig-zag length 193")
	require.Equal(t, byte(0x02), frame[len(frame)-1], "version 1")
	got, err := readWrapper(frame)
	require.NoError(t, err)
	require.Equal(t, j, got)

	tests := []struct {
		name  string
		frame []byte
	}{
		{name: "empty", frame: nil},
		{name: "no marker", frame: []byte{0x01, 0x00, 0x02}},
		{name: "truncated length", frame: []byte{0x00, 0x80}},
		{name: "length beyond frame", frame: []byte{0x00, 0x10, 'a'}},
		{name: "no version", frame: []byte{0x00, 0x02, 'a'}},
		{name: "version 2", frame: []byte{0x00, 0x02, 'a', 0x04}},
		{name: "trailing byte", frame: []byte{0x00, 0x02, 'a', 0x02, 0x00}},
		{name: "overlong varint", frame: append([]byte{0x00}, []byte(strings.Repeat("\xff", 11))...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readWrapper(tc.frame)
			require.Error(t, err)
		})
	}
}
