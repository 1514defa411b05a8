package codec_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/codectest"
)

// goldenValues are the values of the golden cases (reference §2.2: the file
// holds scalars only; lists and maps come from the SDK tests).
var goldenValues = map[string]codec.Value{
	"null":          codec.Null(),
	"boolean_false": codec.Bool(false),
	"boolean_true":  codec.Bool(true),
	"long_min":      codec.Long(math.MinInt64),
	"long_max":      codec.Long(math.MaxInt64),
	"long_7":        codec.Long(7),
	"double_7":      codec.Double(7),
	"negative_zero": codec.Double(math.Copysign(0, -1)),
	"bytes_00ff":    codec.Bytes([]byte{0x00, 0xff}),
	"string_utf8":   codec.String("héllo"),
	"array": codec.List(codec.Null(), codec.Bool(true), codec.Long(7), codec.Double(7),
		codec.Bytes([]byte{0x00, 0xff}), codec.String("text")),
	"map":          codec.Map(kv("a", codec.Long(1)), kv("b", codec.List(codec.Bool(false)))),
	"map_empty":    codec.Map(),
	"map_key_0":    codec.Map(kv("0", codec.String("zero"))),
	"map_keys_0_1": codec.Map(kv("0", codec.String("zero")), kv("1", codec.String("one"))),
	"nested": codec.Map(kv("items", codec.List(
		codec.Map(kv("enabled", codec.Bool(true))),
		codec.Bytes([]byte("bytes")),
		codec.Double(-2.5),
	))),
}

// goldenFileValue reads the optional value of a golden case as the file
// writes it: longs as decimal strings, -0.0 as a string, bytes as base64.
func goldenFileValue(tb testing.TB, kind string, raw json.RawMessage, b64 string) (codec.Value, bool) {
	tb.Helper()
	if b64 != "" {
		return codec.Bytes(unb64(tb, b64)), true
	}
	if raw == nil {
		return codec.Value{}, false
	}
	switch kind {
	case "boolean":
		var b bool
		require.NoError(tb, json.Unmarshal(raw, &b))
		return codec.Bool(b), true
	case "long":
		var s string
		require.NoError(tb, json.Unmarshal(raw, &s))
		i, err := strconv.ParseInt(s, 10, 64)
		require.NoError(tb, err)
		return codec.Long(i), true
	case "double":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		f, err := strconv.ParseFloat(s, 64)
		require.NoError(tb, err)
		return codec.Double(f), true
	case "string":
		var s string
		require.NoError(tb, json.Unmarshal(raw, &s))
		return codec.String(s), true
	}
	require.Failf(tb, "unexpected golden value", "kind %s value %s", kind, raw)
	return codec.Value{}, false
}

func TestGoldenHeader(t *testing.T) {
	g := codectest.LoadGolden(t)
	require.Equal(t, "durable_workflow.protocol.Value", g.Schema)
	require.Equal(t, hex.EncodeToString(codec.Fingerprint[:]), g.Fingerprint)
	require.Equal(t, hex.EncodeToString(codec.Magic[:]), g.MagicHex)
	require.Equal(t, len(codec.Magic)+len(codec.Fingerprint), codec.HeaderSize)
}

func TestGoldenCases(t *testing.T) {
	g := codectest.LoadGolden(t)
	require.Len(t, g.Cases, len(goldenValues), "every golden case has an expected value and no more")
	header := append(codec.Magic[:], codec.Fingerprint[:]...)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := goldenValues[c.Name]
			require.True(t, ok, "no expected value for golden case %q", c.Name)
			if fileValue, ok := goldenFileValue(t, c.Kind, c.Value, c.ValueBase64); ok {
				requireEqualValue(t, fileValue, want)
			}
			kind := want.Kind().String()
			if kind == "list" {
				kind = "array"
			}
			require.Equal(t, c.Kind, kind)

			frame := unb64(t, c.WireBase64)
			require.Equal(t, header, frame[:codec.HeaderSize], "frame header")

			got, err := codec.DecodeFrame(frame)
			require.NoError(t, err)
			requireEqualValue(t, want, got)
			require.NoError(t, codec.ValidateFrame(frame, codec.Limits{}))

			enc, err := codec.EncodeFrame(want)
			require.NoError(t, err)
			require.Equal(t, frame, enc, "encode of the expected value")
			reenc, err := codec.EncodeFrame(got)
			require.NoError(t, err)
			require.Equal(t, frame, reenc, "re-encode of the decoded value")

			datum, err := codec.AppendDatum(nil, want)
			require.NoError(t, err)
			require.Equal(t, frame[codec.HeaderSize:], datum)
			fromDatum, err := codec.DecodeDatum(frame[codec.HeaderSize:])
			require.NoError(t, err)
			requireEqualValue(t, want, fromDatum)

			env, err := codec.EncodeEnvelope(want)
			require.NoError(t, err)
			require.Equal(t, codec.Envelope{Codec: "avro", Blob: c.WireBase64}, env)
			fromEnv, err := codec.DecodeEnvelope(env)
			require.NoError(t, err)
			requireEqualValue(t, want, fromEnv)

			envJSON, err := codec.AppendEnvelopeJSON(nil, want)
			require.NoError(t, err)
			require.Equal(t, `{"codec":"avro","blob":"`+c.WireBase64+`"}`, string(envJSON))
			fromJSON, err := codec.DecodeEnvelopeJSON(envJSON)
			require.NoError(t, err)
			requireEqualValue(t, want, fromJSON)

			var e codec.Encoder
			streamValue(&e, want)
			streamed, err := e.Frame()
			require.NoError(t, err)
			require.Equal(t, frame, streamed, "streaming encoder")
			var d codec.Decoder
			require.NoError(t, d.ResetEnvelopeJSON(envJSON))
			requireEqualValue(t, want, pullValue(&d))
			require.NoError(t, d.Finish(), "pull decoder")

			proj, err := codec.MarshalProjection(got)
			require.NoError(t, err)
			back, err := codec.ParseProjection(proj)
			require.NoError(t, err, "projection %s", proj)
			again, err := codec.EncodeFrame(back)
			require.NoError(t, err)
			require.Equal(t, frame, again, "decode | encode through projection %s", proj)
		})
	}
}

func TestGoldenAlternateMapOrders(t *testing.T) {
	g := codectest.LoadGolden(t)
	require.NotEmpty(t, g.AlternateMapOrders)
	want := map[string][]codec.Value{
		"nested_map_list": {
			codec.Map(
				kv("outer", codec.List(codec.Map(kv("left", codec.Long(1)), kv("right", codec.Bytes([]byte("x")))))),
				kv("tail", codec.String("done")),
			),
			codec.Map(
				kv("tail", codec.String("done")),
				kv("outer", codec.List(codec.Map(kv("right", codec.Bytes([]byte("x"))), kv("left", codec.Long(1))))),
			),
		},
	}
	for _, c := range g.AlternateMapOrders {
		t.Run(c.Name, func(t *testing.T) {
			expected, ok := want[c.Name]
			require.True(t, ok, "no expected values for %q", c.Name)
			require.Len(t, c.WireBase64, len(expected))
			var decoded []codec.Value
			for i, wire := range c.WireBase64 {
				frame := unb64(t, wire)
				v, err := codec.DecodeFrame(frame)
				require.NoError(t, err)
				requireEqualValue(t, expected[i], v)
				enc, err := codec.EncodeFrame(v)
				require.NoError(t, err)
				require.Equal(t, frame, enc, "frame %d re-encodes to itself", i)
				decoded = append(decoded, v)
			}
			for i := 1; i < len(decoded); i++ {
				require.False(t, codec.Equal(decoded[0], decoded[i]), "the frames differ in map order")
				requireEqualValue(t, sortMaps(decoded[0]), sortMaps(decoded[i]))
			}
		})
	}
}

func TestGoldenMalformedFrames(t *testing.T) {
	g := codectest.LoadGolden(t)
	require.NotEmpty(t, g.MalformedFrames)
	for _, c := range g.MalformedFrames {
		t.Run(c.Name, func(t *testing.T) {
			want := codec.Code(c.Error)
			frame := unb64(t, c.WireBase64)

			_, err := codec.DecodeFrame(frame)
			require.ErrorIs(t, err, want)
			require.True(t, strings.HasPrefix(err.Error(), c.Error+": "), "message %q", err)
			require.ErrorIs(t, codec.ValidateFrame(frame, codec.Limits{}), want)

			_, err = codec.DecodeEnvelope(codec.Envelope{Codec: "avro", Blob: c.WireBase64})
			require.ErrorIs(t, err, want)
			require.Equal(t, want, codec.ErrorCode(err))

			_, err = codec.DecodeEnvelopeJSON(codec.AppendFrameEnvelopeJSON(nil, frame))
			require.ErrorIs(t, err, want)
			var d codec.Decoder
			require.ErrorIs(t, d.ResetFrame(frame), want)
		})
	}
}

// regressionFixture is one codec-regression fixture
// (durable-workflow.codec-regression/v1, reference §2.3).
type regressionFixture struct {
	Schema        string `json:"$schema"`
	FixtureSchema string `json:"fixture_schema"`
	ID            string `json:"id"`
	Protocol      struct {
		Codec       string  `json:"codec"`
		Schema      string  `json:"schema"`
		Version     string  `json:"version"`
		Fingerprint *string `json:"fingerprint"`
	} `json:"protocol"`
	Bindings []string        `json:"bindings"`
	Value    json.RawMessage `json:"value"`
	Framing  struct {
		Encoding   string `json:"encoding"`
		WireBase64 string `json:"wire_base64"`
	} `json:"framing"`
	FailurePolicy struct {
		Operation string  `json:"operation"`
		Error     *string `json:"error"`
	} `json:"failure_policy"`
	TaskBoundary *struct {
		Operation string `json:"operation"`
		Error     string `json:"error"`
		Cases     []struct {
			ID     string                     `json:"id"`
			Family string                     `json:"family"`
			Task   map[string]json.RawMessage `json:"task"`
		} `json:"cases"`
		Command *struct {
			Type   string          `json:"type"`
			Result json.RawMessage `json:"result"`
		} `json:"command"`
	} `json:"task_boundary"`
	TaskTransport *struct {
		WorkerPaths       []string `json:"worker_paths"`
		PayloadCodecCases []struct {
			Name    string          `json:"name"`
			Present bool            `json:"present"`
			Value   json.RawMessage `json:"value"`
		} `json:"payload_codec_cases"`
		ExpectedError  string `json:"expected_error"`
		ForbiddenError string `json:"forbidden_error"`
	} `json:"task_transport"`
}

// notationValue converts the fixtures' typed value notation
// ({"type":"long","value":"0"}, …) to a Value.
func notationValue(tb testing.TB, raw json.RawMessage) codec.Value {
	tb.Helper()
	var n struct {
		Type    string            `json:"type"`
		Value   json.RawMessage   `json:"value"`
		Items   []json.RawMessage `json:"items"`
		Entries []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"entries"`
	}
	require.NoError(tb, json.Unmarshal(raw, &n))
	switch n.Type {
	case "null":
		return codec.Null()
	case "array":
		items := make([]codec.Value, len(n.Items))
		for i, it := range n.Items {
			items[i] = notationValue(tb, it)
		}
		return codec.List(items...)
	case "map":
		entries := make([]codec.Entry, len(n.Entries))
		for i, e := range n.Entries {
			entries[i] = kv(e.Key, notationValue(tb, e.Value))
		}
		return codec.Map(entries...)
	case "bytes":
		var s string
		require.NoError(tb, json.Unmarshal(n.Value, &s))
		return codec.Bytes(unb64(tb, s))
	}
	v, ok := goldenFileValue(tb, n.Type, n.Value, "")
	require.True(tb, ok, "notation %s", raw)
	return v
}

// envelopeObject builds the JSON object {"codec":<codec>,"blob":<blob>},
// leaving codec out when it is nil.
func envelopeObject(tb testing.TB, codecJSON json.RawMessage, blob string) []byte {
	tb.Helper()
	var b bytes.Buffer
	b.WriteByte('{')
	if codecJSON != nil {
		b.WriteString(`"codec":`)
		b.Write(codecJSON)
		b.WriteByte(',')
	}
	blobJSON, err := json.Marshal(blob)
	require.NoError(tb, err)
	b.WriteString(`"blob":`)
	b.Write(blobJSON)
	b.WriteByte('}')
	return b.Bytes()
}

// requireCodecRejected checks that err carries want, never forbidden.
func requireCodecRejected(tb testing.TB, err error, want, forbidden codec.Code) {
	tb.Helper()
	require.ErrorIs(tb, err, want)
	require.True(tb, strings.HasPrefix(err.Error(), string(want)+": "), "message %q", err)
	if forbidden != "" {
		require.NotErrorIs(tb, err, forbidden)
	}
}

func TestCodecRegressions(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(codectest.Dir(t), "codec-regressions"))
	require.NoError(t, err)
	var ran int
	for _, dir := range dirs {
		files, err := os.ReadDir(filepath.Join(codectest.Dir(t), "codec-regressions", dir.Name()))
		require.NoError(t, err)
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue
			}
			name := dir.Name() + "/" + f.Name()
			t.Run(name, func(t *testing.T) {
				var fx regressionFixture
				dec := json.NewDecoder(bytes.NewReader(codectest.ReadFile(t, "codec-regressions/"+name)))
				dec.DisallowUnknownFields()
				require.NoError(t, dec.Decode(&fx))
				require.Equal(t, "durable-workflow.codec-regression/v1", fx.FixtureSchema)
				runRegression(t, fx)
			})
			ran++
		}
	}
	require.Equal(t, 11, ran, "every codec-regression fixture ran")
}

// runRegression checks the part of a regression fixture that the codec owns:
// the payload bytes and the codec tag of envelopes and task roots.
func runRegression(t *testing.T, fx regressionFixture) {
	value := notationValue(t, fx.Value)
	wire := fx.Framing.WireBase64
	checked := false

	switch fx.FailurePolicy.Operation {
	case "round_trip":
		require.Nil(t, fx.FailurePolicy.Error)
		require.Equal(t, "avro-single-object", fx.Framing.Encoding)
		got, err := codec.DecodeEnvelope(codec.Envelope{Codec: fx.Protocol.Codec, Blob: wire})
		require.NoError(t, err)
		requireEqualValue(t, value, got)
		env, err := codec.EncodeEnvelope(value)
		require.NoError(t, err)
		require.Equal(t, wire, env.Blob)
		envJSON, err := codec.AppendEnvelopeJSON(nil, value)
		require.NoError(t, err)
		require.Equal(t, `{"codec":"avro","blob":"`+wire+`"}`, string(envJSON))
		fromJSON, err := codec.DecodeEnvelopeJSON(envelopeObject(t, json.RawMessage(strconv.Quote(fx.Protocol.Codec)), wire))
		require.NoError(t, err)
		requireEqualValue(t, value, fromJSON)
		checked = true
	case "decode_reject":
		require.NotNil(t, fx.FailurePolicy.Error)
		want := codec.Code(*fx.FailurePolicy.Error)
		switch fx.Framing.Encoding {
		case "avro-single-object", "utf8-json":
			if fx.Framing.Encoding == "utf8-json" {
				// The blob holds the fixture's value as JSON text.
				fromJSON, err := codec.ParseProjection(unb64(t, wire))
				require.NoError(t, err)
				requireEqualValue(t, value, fromJSON)
			}
			_, err := codec.DecodeEnvelope(codec.Envelope{Codec: fx.Protocol.Codec, Blob: wire})
			requireCodecRejected(t, err, want, "")
			env, err := codec.ParseEnvelope(envelopeObject(t, json.RawMessage(strconv.Quote(fx.Protocol.Codec)), wire))
			if err == nil {
				_, err = codec.DecodeEnvelope(env)
			}
			requireCodecRejected(t, err, want, "")
			_, err = codec.DecodeEnvelopeJSON(envelopeObject(t, json.RawMessage(strconv.Quote(fx.Protocol.Codec)), wire))
			requireCodecRejected(t, err, want, "")
			checked = true
		case "utf8-json-task":
			fromJSON, err := codec.ParseProjection(unb64(t, wire))
			require.NoError(t, err)
			requireEqualValue(t, value, fromJSON)
			var tasks []map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(unb64(t, wire), &tasks))
			require.NotEmpty(t, tasks)
			for _, task := range tasks {
				_, err := codec.ParseEnvelope(envelopeObject(t, task["payload_codec"], "wwHioz3/VYAiNwA="))
				requireCodecRejected(t, err, want, codec.CodeInvalidPayloadFraming)
			}
			checked = true
		default:
			require.Failf(t, "unknown framing", "%q", fx.Framing.Encoding)
		}
	default:
		require.Failf(t, "unknown operation", "%q", fx.FailurePolicy.Operation)
	}

	if tb := fx.TaskBoundary; tb != nil {
		want := codec.Code(tb.Error)
		switch tb.Operation {
		case "deserialize_worker_tasks":
			require.NotEmpty(t, tb.Cases)
			for _, c := range tb.Cases {
				// The task's root payload_codec, checked as an envelope tag
				// around a valid blob: the tag must fail before any decode.
				_, err := codec.ParseEnvelope(envelopeObject(t, c.Task["payload_codec"], "wwHioz3/VYAiNwA="))
				requireCodecRejected(t, err, want, codec.CodeInvalidPayloadFraming)
				_, err = codec.DecodeEnvelopeJSON(envelopeObject(t, c.Task["payload_codec"], "wwHioz3/VYAiNwA="))
				requireCodecRejected(t, err, want, codec.CodeInvalidPayloadFraming)
			}
		case "complete_workflow_task":
			require.NotNil(t, tb.Command)
			_, err := codec.ParseEnvelope(tb.Command.Result)
			requireCodecRejected(t, err, want, codec.CodeInvalidPayloadEnvelope)
			_, err = codec.DecodeEnvelopeJSON(tb.Command.Result)
			requireCodecRejected(t, err, want, codec.CodeInvalidPayloadEnvelope)
		default:
			require.Failf(t, "unknown task boundary", "%q", tb.Operation)
		}
	}
	if tt := fx.TaskTransport; tt != nil {
		want, forbidden := codec.Code(tt.ExpectedError), codec.Code(tt.ForbiddenError)
		require.NotEmpty(t, tt.PayloadCodecCases)
		for _, c := range tt.PayloadCodecCases {
			var codecJSON json.RawMessage
			if c.Present {
				codecJSON = c.Value
			}
			// The payload bytes are "decode-must-not-run": decoding them
			// would give invalid_payload_framing.
			_, err := codec.ParseEnvelope(envelopeObject(t, codecJSON, wire))
			requireCodecRejected(t, err, want, forbidden)
			_, err = codec.DecodeEnvelopeJSON(envelopeObject(t, codecJSON, wire))
			requireCodecRejected(t, err, want, forbidden)
			var s string
			if json.Unmarshal(c.Value, &s) == nil || !c.Present {
				_, err = codec.DecodeEnvelope(codec.Envelope{Codec: s, Blob: wire})
				requireCodecRejected(t, err, want, forbidden)
			}
		}
	}
	require.True(t, checked)
}
