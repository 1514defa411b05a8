package codec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

func TestDecodeFrameChecksInOrder(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		code  codec.Code
	}{
		{name: "JSON object", frame: []byte(`{"stale":true}`), code: codec.CodeUnsupportedPayloadCodec},
		{name: "JSON null", frame: []byte(`null`), code: codec.CodeUnsupportedPayloadCodec},
		{name: "JSON number", frame: []byte(`42`), code: codec.CodeUnsupportedPayloadCodec},
		{name: "JSON string", frame: []byte(`"avro"`), code: codec.CodeUnsupportedPayloadCodec},
		{name: "JSON array with whitespace", frame: []byte(" [1, 2]\n"), code: codec.CodeUnsupportedPayloadCodec},
		{name: "JSON true", frame: []byte(`true`), code: codec.CodeUnsupportedPayloadCodec},
		{name: "empty", frame: nil, code: codec.CodeInvalidPayloadFraming},
		{name: "almost JSON", frame: []byte(`{"stale":true`), code: codec.CodeInvalidPayloadFraming},
		{name: "magic only", frame: []byte{0xc3, 0x01}, code: codec.CodeInvalidPayloadFraming},
		{name: "nine bytes", frame: frameOf()[:9], code: codec.CodeInvalidPayloadFraming},
		{name: "wrong magic", frame: append([]byte{0xc3, 0x02}, frameOf(0x00)[2:]...), code: codec.CodeInvalidPayloadFraming},
		{name: "magic reversed", frame: append([]byte{0x01, 0xc3}, frameOf(0x00)[2:]...), code: codec.CodeInvalidPayloadFraming},
		{name: "header only", frame: frameOf(), code: codec.CodeInvalidPayloadFraming},
		{name: "big-endian fingerprint", frame: []byte{0xc3, 0x01, 0x37, 0x22, 0x80, 0x55, 0xff, 0x3d, 0xa3, 0xe2, 0x00}, code: codec.CodeUnsupportedPayloadSchema},
		{name: "unknown fingerprint before a bad datum", frame: []byte{0xc3, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}, code: codec.CodeUnsupportedPayloadSchema},
		{name: "last fingerprint byte", frame: []byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x38, 0x00}, code: codec.CodeUnsupportedPayloadSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.DecodeFrame(tt.frame)
			require.ErrorIs(t, err, tt.code)
			require.True(t, strings.HasPrefix(err.Error(), string(tt.code)+": "), "message %q", err)
			require.ErrorIs(t, codec.ValidateFrame(tt.frame, codec.Limits{}), tt.code)
			_, err = codec.DecodeEnvelope(codec.EnvelopeOf(tt.frame))
			require.ErrorIs(t, err, tt.code)
		})
	}
}

func TestEncodeFrameExactSize(t *testing.T) {
	for name, v := range goldenValues {
		t.Run(name, func(t *testing.T) {
			frame, err := codec.EncodeFrame(v)
			require.NoError(t, err)
			require.Equal(t, len(frame), cap(frame))
			appended, err := codec.AppendFrame([]byte("prefix"), v)
			require.NoError(t, err)
			require.Equal(t, "prefix", string(appended[:6]))
			require.Equal(t, frame, appended[6:])
		})
	}
}

func TestHeaderConstants(t *testing.T) {
	require.Equal(t, [2]byte{0xc3, 0x01}, codec.Magic)
	require.Equal(t, [8]byte{0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}, codec.Fingerprint)
	require.Equal(t, 10, codec.HeaderSize)
}
