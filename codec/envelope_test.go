package codec_test

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// nullBlob is the blob of the null value.
const nullBlob = "wwHioz3/VYAiNwA="

func TestEnvelopeFrameStrictBase64(t *testing.T) {
	tests := []struct {
		name string
		blob string
		hint bool // the message says the text looks like JSON
	}{
		{name: "non-canonical trailing bits", blob: "wwHioz3/VYAiNwB="},
		{name: "non-canonical trailing bits before ==", blob: "wwHioz3/VYAiNwYAAAAAAAAcQB=="},
		{name: "missing padding", blob: "wwHioz3/VYAiNwA"},
		{name: "missing double padding", blob: "wwHioz3/VYAiNwYAAAAAAAAcQA"},
		{name: "URL-safe alphabet", blob: "wwHioz3_VYAiNwA="},
		{name: "URL-safe plus", blob: "wwHioz3-VYAiNwA="},
		{name: "inner space", blob: "wwHioz3/ VYAiNwA="},
		{name: "leading space", blob: " wwHioz3/VYAiNwA="},
		{name: "trailing newline", blob: nullBlob + "\n"},
		{name: "inner CRLF", blob: "wwHioz3/\r\nVYAiNwA="},
		{name: "tab", blob: "wwHioz3/\tVYAiNwA="},
		{name: "padding inside", blob: "ww==Hioz3/VYAiNwA="},
		{name: "too much padding", blob: "wwHioz3/VYAiNwA=="},
		{name: "non-ASCII", blob: "wwHioz3/VYAiNwA=é"},
		{name: "JSON object", blob: `{"stale":true}`, hint: true},
		{name: "JSON number", blob: "42.5", hint: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.Envelope{Codec: "avro", Blob: tt.blob}.Frame()
			require.ErrorIs(t, err, codec.CodeInvalidPayloadFraming)
			require.Contains(t, err.Error(), "invalid_payload_framing: expected strict base64 Avro single-object bytes")
			require.Equal(t, tt.hint, strings.Contains(err.Error(), "look like JSON"))
			_, err = codec.DecodeEnvelope(codec.Envelope{Codec: "avro", Blob: tt.blob})
			require.ErrorIs(t, err, codec.CodeInvalidPayloadFraming)
		})
	}

	frame, err := codec.Envelope{Codec: "avro", Blob: nullBlob}.Frame()
	require.NoError(t, err)
	require.Equal(t, frameOf(0x00), frame)
}

func TestEnvelopeCodecCheckedFirst(t *testing.T) {
	for _, tag := range []string{"", "json", "Avro", "AVRO", "avro ", " avro", "custom", "avro\x00"} {
		t.Run(tag, func(t *testing.T) {
			// The blob is not base64 at all: the tag must fail first.
			e := codec.Envelope{Codec: tag, Blob: "!not base64!"}
			_, err := e.Frame()
			require.ErrorIs(t, err, codec.CodeUnsupportedPayloadCodec)
			_, err = codec.DecodeEnvelope(e)
			require.ErrorIs(t, err, codec.CodeUnsupportedPayloadCodec)
			require.ErrorIs(t, codec.CheckCodec(tag), codec.CodeUnsupportedPayloadCodec)
			for _, part := range []string{"unsupported_payload_codec: ", `codec="avro"`, "HTTP document transport"} {
				require.Contains(t, err.Error(), part)
			}
		})
	}
	require.NoError(t, codec.CheckCodec("avro"))
}

func TestParseEnvelope(t *testing.T) {
	tests := []struct {
		name string
		data string
		code codec.Code // "" for success
		blob string
	}{
		{name: "compact", data: `{"codec":"avro","blob":"` + nullBlob + `"}`, blob: nullBlob},
		{name: "blob first with whitespace", data: " {\n\t\"blob\" : \"" + nullBlob + "\" ,\r\n \"codec\":\"avro\" }\n", blob: nullBlob},
		{name: "escaped solidus", data: `{"codec":"avro","blob":"wwHioz3\/VYAiNwA="}`, blob: nullBlob},
		{name: "escaped codec", data: `{"codec":"\u0061vro","blob":""}`, blob: ""},
		{name: "json codec", data: `{"codec":"json","blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "wrong case", data: `{"codec":"Avro","blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "empty codec", data: `{"codec":"","blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "missing codec", data: `{"blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "null codec", data: `{"codec":null,"blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "number codec", data: `{"codec":42,"blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "array codec", data: `{"codec":["avro"],"blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "object codec", data: `{"codec":{"name":"avro"},"blob":"` + nullBlob + `"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "json codec with null blob", data: `{"codec":"json","blob":null}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "json codec without blob", data: `{"codec":"json"}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "empty object", data: `{}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "codec repeated with json", data: `{"codec":"avro","codec":"json","blob":""}`, code: codec.CodeUnsupportedPayloadCodec},
		{name: "codec repeated", data: `{"codec":"avro","codec":"avro","blob":""}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "blob repeated", data: `{"codec":"avro","blob":"","blob":""}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "missing blob", data: `{"codec":"avro"}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "null blob", data: `{"codec":"avro","blob":null}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "number blob", data: `{"codec":"avro","blob":5}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "extra key", data: `{"codec":"avro","blob":"","x":1}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "external storage", data: `{"codec":"avro","external_storage":{"uri":"s3://x"}}`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "array", data: `["avro",""]`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "string", data: `"avro"`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "null", data: `null`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "empty", data: ``, code: codec.CodeInvalidPayloadEnvelope},
		{name: "truncated", data: `{"codec":"avro","blob":"`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "trailing data", data: `{"codec":"avro","blob":""} x`, code: codec.CodeInvalidPayloadEnvelope},
		{name: "second object", data: `{"codec":"avro","blob":""}{}`, code: codec.CodeInvalidPayloadEnvelope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := codec.ParseEnvelope([]byte(tt.data))
			if tt.code != "" {
				require.ErrorIs(t, err, tt.code)
				require.True(t, strings.HasPrefix(err.Error(), string(tt.code)+": "), "message %q", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, codec.Envelope{Codec: "avro", Blob: tt.blob}, env)
			var plain codec.Envelope
			require.NoError(t, json.Unmarshal([]byte(tt.data), &plain))
			require.Equal(t, plain, env, "same fields as encoding/json reads")
		})
	}
}

func TestEnvelopeMarshalJSON(t *testing.T) {
	env, err := codec.EncodeEnvelope(codec.Long(0))
	require.NoError(t, err)
	want := `{"codec":"avro","blob":"wwHioz3/VYAiNwQA"}`
	got, err := env.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	got, err = json.Marshal(env)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	got, err = json.Marshal(struct {
		Input codec.Envelope `json:"input"`
	}{env})
	require.NoError(t, err)
	require.Equal(t, `{"input":`+want+`}`, string(got))

	odd := codec.Envelope{Codec: "a\"b\\\n\x01é", Blob: "<&>"}
	got, err = json.Marshal(odd)
	require.NoError(t, err)
	var back codec.Envelope
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, odd, back)
}

func TestEnvelopeOfMatchesStandardBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 4, 575, 576, 577, 1151, 1152, 1153, 5000} {
		frame := make([]byte, n)
		for i := range frame {
			frame[i] = byte(rng.UintN(256))
		}
		env := codec.EnvelopeOf(frame)
		require.Equal(t, codec.Envelope{Codec: "avro", Blob: base64.StdEncoding.EncodeToString(frame)}, env, "frame of %d bytes", n)
		back, err := env.Frame()
		require.NoError(t, err)
		require.Equal(t, frame, back)
	}
}

func TestEnvelopeLargeValue(t *testing.T) {
	// Larger than the encoder's stack scratch buffer.
	v := codec.List(codec.Bytes(make([]byte, 100_000)), codec.String(strings.Repeat("é", 1000)))
	env, err := codec.EncodeEnvelope(v)
	require.NoError(t, err)
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	require.Equal(t, base64.StdEncoding.EncodeToString(frame), env.Blob)
	got, err := codec.DecodeEnvelope(env)
	require.NoError(t, err)
	requireEqualValue(t, v, got)
}
