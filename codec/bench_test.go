package codec_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/codectest"
)

// Pinned digests of the seeds' benchmark (reference §2.4).
const (
	benchCorpusSHA256 = "588771404977f2a95fe7d8969c24a15e1c7dd78fe498af9aa2406f82be54b666"
	benchFrameSHA256  = "8e0ec373f4a8163830bc319cbc55e242e35bed2e7fd4dba2d7ba12fa62bd42e3"
)

// benchValue reads the benchmark corpus value in file order. An object whose
// only key is "$avro_bytes" is the corpus's sentinel for bytes.
func benchValue(tb testing.TB) codec.Value {
	tb.Helper()
	data := codectest.ReadFile(tb, "avro-value-benchmark-v1.json")
	sum := sha256.Sum256(data)
	require.Equal(tb, benchCorpusSHA256, hex.EncodeToString(sum[:]))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	doc := corpusValue(tb, dec)
	v, ok := doc.Get("value")
	require.True(tb, ok)
	return v
}

// corpusValue converts the next JSON value of dec.
func corpusValue(tb testing.TB, dec *json.Decoder) codec.Value {
	tb.Helper()
	tok, err := dec.Token()
	require.NoError(tb, err)
	switch t := tok.(type) {
	case nil:
		return codec.Null()
	case bool:
		return codec.Bool(t)
	case string:
		return codec.String(t)
	case json.Number:
		if !strings.ContainsAny(t.String(), ".eE") {
			i, err := t.Int64()
			require.NoError(tb, err)
			return codec.Long(i)
		}
		f, err := t.Float64()
		require.NoError(tb, err)
		return codec.Double(f)
	case json.Delim:
		if t == '[' {
			items := []codec.Value{}
			for dec.More() {
				items = append(items, corpusValue(tb, dec))
			}
			_, err := dec.Token()
			require.NoError(tb, err)
			return codec.List(items...)
		}
		entries := []codec.Entry{}
		for dec.More() {
			k, err := dec.Token()
			require.NoError(tb, err)
			entries = append(entries, kv(k.(string), corpusValue(tb, dec)))
		}
		_, err := dec.Token()
		require.NoError(tb, err)
		if len(entries) == 1 && entries[0].Key == "$avro_bytes" {
			s, ok := entries[0].Value.AsString()
			require.True(tb, ok)
			b, err := base64.StdEncoding.DecodeString(s)
			require.NoError(tb, err)
			return codec.Bytes(b)
		}
		return codec.Map(entries...)
	}
	require.Failf(tb, "unexpected token", "%v", tok)
	return codec.Value{}
}

func TestBenchmarkCorpusWire(t *testing.T) {
	v := benchValue(t)
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	require.Len(t, frame, 164)
	sum := sha256.Sum256(frame)
	require.Equal(t, benchFrameSHA256, hex.EncodeToString(sum[:]))
	env, err := codec.EncodeEnvelope(v)
	require.NoError(t, err)
	envJSON, err := json.Marshal(env)
	require.NoError(t, err)
	require.Len(t, envJSON, 246)
	got, err := codec.DecodeFrame(frame)
	require.NoError(t, err)
	requireEqualValue(t, v, got)
}

func BenchmarkAppendFrame(b *testing.B) {
	v := benchValue(b)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = codec.AppendFrame(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	v := benchValue(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.EncodeFrame(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	frame, err := codec.EncodeFrame(benchValue(b))
	require.NoError(b, err)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := codec.DecodeFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateFrame(b *testing.B) {
	frame, err := codec.EncodeFrame(benchValue(b))
	require.NoError(b, err)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := codec.ValidateFrame(frame, codec.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeEnvelope is the whole encode path: value, frame, envelope,
// envelope JSON.
func BenchmarkEncodeEnvelope(b *testing.B) {
	v := benchValue(b)
	b.ReportAllocs()
	for b.Loop() {
		env, err := codec.EncodeEnvelope(v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEnvelope is the whole decode path: envelope JSON,
// envelope, frame, value.
func BenchmarkDecodeEnvelope(b *testing.B) {
	env, err := codec.EncodeEnvelope(benchValue(b))
	require.NoError(b, err)
	data, err := env.MarshalJSON()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		e, err := codec.ParseEnvelope(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := codec.DecodeEnvelope(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalProjection(b *testing.B) {
	v := benchValue(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.MarshalProjection(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseProjection(b *testing.B) {
	p, err := codec.MarshalProjection(benchValue(b))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.ParseProjection(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEnvelopeJSON is the whole encode path of a Value into a
// reused buffer: datum, frame, envelope JSON.
func BenchmarkAppendEnvelopeJSON(b *testing.B) {
	v := benchValue(b)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = codec.AppendEnvelopeJSON(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEnvelopeJSON is the whole decode path from envelope JSON
// to a Value.
func BenchmarkDecodeEnvelopeJSON(b *testing.B) {
	data, err := codec.AppendEnvelopeJSON(nil, benchValue(b))
	require.NoError(b, err)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := codec.DecodeEnvelopeJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseEnvelopeFrame reads envelope JSON into its frame.
func BenchmarkParseEnvelopeFrame(b *testing.B) {
	data, err := codec.AppendEnvelopeJSON(nil, benchValue(b))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.ParseEnvelopeFrame(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncoderStream streams the corpus value call by call into a
// reused Encoder and writes its envelope JSON into a reused buffer.
func BenchmarkEncoderStream(b *testing.B) {
	v := benchValue(b)
	var e codec.Encoder
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		streamValue(&e, v)
		var err error
		if buf, err = e.AppendEnvelopeJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecoderPull checks envelope JSON with a reused Decoder and reads
// every value of it without building anything.
func BenchmarkDecoderPull(b *testing.B) {
	data, err := codec.AppendEnvelopeJSON(nil, benchValue(b))
	require.NoError(b, err)
	var d codec.Decoder
	var skip func()
	skip = func() {
		switch d.Next() {
		case codec.KindString:
			_ = d.String()
		case codec.KindList:
			for d.More() {
				skip()
			}
		case codec.KindMap:
			for d.More() {
				_ = d.Key()
				skip()
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.ResetEnvelopeJSON(data); err != nil {
			b.Fatal(err)
		}
		skip()
		if err := d.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}
