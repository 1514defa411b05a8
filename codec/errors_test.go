package codec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

func TestErrorCodes(t *testing.T) {
	codes := []struct {
		code     codec.Code
		text     string
		sentinel error
	}{
		{codec.CodeUnsupportedPayloadCodec, "unsupported_payload_codec", codec.ErrUnsupportedCodec},
		{codec.CodeUnsupportedPayloadSchema, "unsupported_payload_schema", codec.ErrUnsupportedSchema},
		{codec.CodeInvalidPayloadFraming, "invalid_payload_framing", codec.ErrInvalidFraming},
		{codec.CodeInvalidPayloadEnvelope, "invalid_payload_envelope", codec.ErrInvalidEnvelope},
		{codec.CodeInvalidMapKey, "invalid_map_key", codec.ErrInvalidMapKey},
		{codec.CodeIntegerOverflow, "integer_overflow", codec.ErrIntegerOverflow},
		{codec.CodeNonFiniteFloat, "non_finite_float", codec.ErrNonFiniteFloat},
		{codec.CodePayloadLimit, "payload_limit_exceeded", codec.ErrPayloadLimit},
		{codec.CodeInvalidProjection, "invalid_projection", codec.ErrInvalidProjection},
	}
	for _, c := range codes {
		t.Run(c.text, func(t *testing.T) {
			require.Equal(t, c.text, string(c.code))
			require.Equal(t, c.text, c.code.Error())
			err := error(&codec.Error{Code: c.code, Message: "what happened"})
			require.Equal(t, c.text+": what happened", err.Error())

			wrapped := fmt.Errorf("decode input: %w", err)
			require.ErrorIs(t, wrapped, c.code)
			require.ErrorIs(t, wrapped, c.sentinel)
			require.Equal(t, c.code, codec.ErrorCode(wrapped))
			require.Equal(t, c.code, codec.ErrorCode(fmt.Errorf("x: %w", c.code)))
			for _, other := range codes {
				if other.code != c.code {
					require.NotErrorIs(t, wrapped, other.code)
				}
			}
		})
	}
	require.Equal(t, codec.Code(""), codec.ErrorCode(errors.New("plain")))
	require.Equal(t, codec.Code(""), codec.ErrorCode(nil))
}

func TestFingerprintMessage(t *testing.T) {
	_, err := codec.DecodeFrame([]byte{0xc3, 0x01, 0x1d, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37, 0x00})
	require.EqualError(t, err, "unsupported_payload_schema: unknown CRC-64-AVRO fingerprint 1da33dff55802237")
}
