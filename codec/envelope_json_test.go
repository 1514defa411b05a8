package codec_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/codectest"
)

func TestAppendEnvelopeJSON(t *testing.T) {
	check := func(t *testing.T, v codec.Value) {
		t.Helper()
		env, err := codec.EncodeEnvelope(v)
		require.NoError(t, err)
		want, err := env.MarshalJSON()
		require.NoError(t, err)
		got, err := codec.AppendEnvelopeJSON([]byte("["), v)
		require.NoError(t, err)
		require.Equal(t, "["+string(want), string(got))
		frame, err := codec.EncodeFrame(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(codec.AppendFrameEnvelopeJSON(nil, frame)))
		back, err := codec.DecodeEnvelopeJSON(got[1:])
		require.NoError(t, err)
		requireEqualValue(t, v, back)
	}
	for name, v := range goldenValues {
		t.Run(name, func(t *testing.T) { check(t, v) })
	}
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 8))
		for range 1000 {
			check(t, randomValue(r, 4))
		}
	})
	t.Run("larger than the scratch buffer", func(t *testing.T) {
		for _, n := range []int{490, 500, 501, 502, 503, 2000, 100_000} {
			check(t, codec.Bytes(make([]byte, n)))
		}
	})
	t.Run("error leaves dst unchanged", func(t *testing.T) {
		out, err := codec.AppendEnvelopeJSON([]byte("keep"), codec.List(codec.Double(math.Inf(1))))
		require.ErrorIs(t, err, codec.CodeNonFiniteFloat)
		require.Equal(t, "keep", string(out))
	})
	t.Run("no allocation with room", func(t *testing.T) {
		v := benchValue(t)
		buf := make([]byte, 0, 512)
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			if buf, err = codec.AppendEnvelopeJSON(buf[:0], v); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs)
		require.Len(t, buf, 246, "the corpus envelope size")
	})
}

// envelopeInputs are envelope JSON texts the fast and general paths must
// read alike: valid ones in every shape, and every kind of failure.
func envelopeInputs(tb testing.TB) []string {
	tb.Helper()
	inputs := []string{
		`{"codec":"avro","blob":"` + nullBlob + `"}`,
		" {\n\t\"blob\" : \"" + nullBlob + "\" ,\r\n \"codec\":\"avro\" }\n",
		`{"codec":"avro","blob":"wwHioz3\/VYAiNwA="}`,
		`{"codec":"\u0061vro","blob":"` + nullBlob + `"}`,
		`{"codec":"avro","blob":"wwHioz3/VYAi\u004ewA="}`,
		`{"codec":"avro","blob":"wwHioz3/VYAiNwA=\n"}`,
		"{\"codec\":\"avro\",\"blob\":\"wwHioz3/VYAiNwA=\n\"}",
		"{\"codec\":\"avro\",\"blob\":\"wwHioz3/\r\nVYAiNwA=\"}",
		"{\"codec\":\"avro\",\"blob\":\"wwHioz3/\\r\\nVYAiNwA=\"}",
		"{\"codec\":\"avro\",\"blob\":\"wwHioz3/\tVYAiNwA=\"}",
		`{"codec":"avro","blob":"wwHioz3/VYAiNwA=\""}`,
		`{"codec":"avro","blob":"wwHioz3/VYAiNwA\u003d"}`,
		`{"codec":"avro","blob":""}`,
		`{"codec":"avro","blob":"wwHioz3/VYAiNwB="}`,
		`{"codec":"avro","blob":"e30="}`,
		`{"codec":"avro","blob":"{\"stale\":true}"}`,
		`{"codec":"avro","blob":"wwEAAAAAAAAAAAA="}`,
		`{"codec":"avro","blob":"wwHioz3/VYAiNxA="}`,
		`{"codec":"json","blob":"` + nullBlob + `"}`,
		`{"codec":"json","blob":"` + nullBlob + "\n" + `"}`,
		`{"codec":"AVRO","blob":null}`,
		`{"codec":null,"blob":"` + nullBlob + `"}`,
		`{"codec":"avro","codec":"json","blob":""}`,
		`{"codec":"avro","codec":"avro","blob":"` + nullBlob + `"}`,
		`{"codec":"avro","blob":"` + nullBlob + `","blob":"` + nullBlob + `"}`,
		`{"blob":"` + nullBlob + `"}`,
		`{"codec":"avro"}`,
		`{"codec":"avro","blob":5}`,
		`{"codec":"avro","blob":"` + nullBlob + `","x":1}`,
		`{"codec":"avro","external_storage":{"uri":"s3://x"}}`,
		`{"codec":"avro","blob":"` + nullBlob + `"} x`,
		`{"codec":"avro","blob":"` + nullBlob + `"}{}`,
		`{"codec":"avro","blob":"` + nullBlob,
		`{"codec":"avro" "blob":"` + nullBlob + `"}`,
		`{"codec":"avro",,"blob":"` + nullBlob + `"}`,
		`{"codec":"avro","blob":"` + nullBlob + `",}`,
		`{"codec":"avro","blob":"` + nullBlob + "é" + `"}`,
		"{\"codec\":\"avro\",\"blob\":\"" + nullBlob + "\xff\"}",
		`["avro","` + nullBlob + `"]`,
		`null`,
		``,
		`{}`,
	}
	// Every golden frame, valid or malformed, in a compact envelope.
	g := codectest.LoadGolden(tb)
	for _, c := range g.Cases {
		inputs = append(inputs, `{"codec":"avro","blob":"`+c.WireBase64+`"}`)
	}
	for _, c := range g.MalformedFrames {
		inputs = append(inputs, `{"blob":"`+c.WireBase64+`","codec":"avro"}`)
	}
	return inputs
}

// requireEnvelopePathsAgree checks that ParseEnvelopeFrame and
// DecodeEnvelopeJSON give exactly what the general path gives for data.
func requireEnvelopePathsAgree(tb testing.TB, data []byte) {
	tb.Helper()
	// The general path: ParseEnvelope, then Envelope.Frame or
	// DecodeEnvelope.
	env, perr := codec.ParseEnvelope(data)
	var wantFrame []byte
	wantFrameErr := perr
	if perr == nil {
		wantFrame, wantFrameErr = env.Frame()
	}
	frame, err := codec.ParseEnvelopeFrame(data)
	if wantFrameErr != nil {
		require.EqualError(tb, err, wantFrameErr.Error(), "ParseEnvelopeFrame(%q)", data)
	} else {
		require.NoError(tb, err, "ParseEnvelopeFrame(%q)", data)
		require.Equal(tb, wantFrame, frame)
	}

	var want codec.Value
	wantErr := perr
	if perr == nil {
		want, wantErr = codec.DecodeEnvelope(env)
	}
	got, err := codec.DecodeEnvelopeJSON(data)
	if wantErr != nil {
		require.EqualError(tb, err, wantErr.Error(), "DecodeEnvelopeJSON(%q)", data)
		return
	}
	require.NoError(tb, err, "DecodeEnvelopeJSON(%q)", data)
	requireEqualValue(tb, want, got)
}

func TestEnvelopeJSONFastPathMatchesGeneralPath(t *testing.T) {
	for _, data := range envelopeInputs(t) {
		t.Run(strings.ToValidUTF8(data, "?"), func(t *testing.T) {
			requireEnvelopePathsAgree(t, []byte(data))
		})
	}
}

func TestParseEnvelopeFrameAllocatesOnlyTheFrame(t *testing.T) {
	for _, data := range []string{
		`{"codec":"avro","blob":"` + nullBlob + `"}`,
		" {\n\t\"blob\" : \"" + nullBlob + "\" ,\r\n \"codec\":\"avro\" }\n",
	} {
		b := []byte(data)
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := codec.ParseEnvelopeFrame(b); err != nil {
				panic(err)
			}
		})
		require.Equal(t, 1.0, allocs, "the scanner reads %q", data)
	}
}

func TestDecodeEnvelopeJSONCodecFirst(t *testing.T) {
	// The blob is not base64 and the object is otherwise valid: only the
	// codec may be reported.
	for _, tag := range []string{`""`, `"json"`, `"Avro"`, `"avro "`, `null`, `7`} {
		data := []byte(`{"codec":` + tag + `,"blob":"!not base64!"}`)
		_, err := codec.DecodeEnvelopeJSON(data)
		require.ErrorIs(t, err, codec.CodeUnsupportedPayloadCodec, tag)
		_, err = codec.ParseEnvelopeFrame(data)
		require.ErrorIs(t, err, codec.CodeUnsupportedPayloadCodec, tag)
	}
}

// FuzzEnvelopeJSON checks that the envelope fast paths agree with the
// general path on any text: the same error message, or the same frame and
// value.
func FuzzEnvelopeJSON(f *testing.F) {
	for _, data := range envelopeInputs(f) {
		f.Add([]byte(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		requireEnvelopePathsAgree(t, data)
	})
}
