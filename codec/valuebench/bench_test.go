package valuebench

import (
	"testing"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// MustSuite returns the benchmark paths over the corpus value.
func MustSuite(tb testing.TB) *suite {
	tb.Helper()
	c, err := LoadCorpus()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newSuite(c.Value)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkPaths measures every path of the report, one operation per
// iteration, with allocations.
func BenchmarkPaths(b *testing.B) {
	for _, o := range MustSuite(b).ops() {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := o.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTypedSteps splits the typed paths into their steps.
func BenchmarkTypedSteps(b *testing.B) {
	s := MustSuite(b)
	v, err := ToValue(s.native)
	if err != nil {
		b.Fatal(err)
	}
	env, err := codec.EncodeEnvelope(v)
	if err != nil {
		b.Fatal(err)
	}
	frame, err := env.Frame()
	if err != nil {
		b.Fatal(err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"adapt_to_value", func() error { _, err := ToValue(s.native); return err }},
		{"append_frame_reused_buffer", func() error {
			var buf [256]byte
			_, err := codec.AppendFrame(buf[:0], v)
			return err
		}},
		{"encode_envelope", func() error { _, err := codec.EncodeEnvelope(v); return err }},
		{"envelope_marshal_json", func() error { _, err := env.MarshalJSON(); return err }},
		{"parse_envelope", func() error { _, err := codec.ParseEnvelope(s.typed); return err }},
		{"envelope_frame_base64", func() error { _, err := env.Frame(); return err }},
		{"decode_frame", func() error { _, err := codec.DecodeFrame(frame); return err }},
		{"adapt_from_value", func() error { s.sink = FromValue(v); return nil }},
		{"append_envelope_json_reused_buffer", func() error {
			var buf [512]byte
			_, err := codec.AppendEnvelopeJSON(buf[:0], v)
			return err
		}},
		{"decode_envelope_json", func() error { _, err := codec.DecodeEnvelopeJSON(s.typed); return err }},
		{"stream_adapter_envelope", func() error { b, err := AppendEnvelope(nil, s.native); s.sink = b; return err }},
		{"pull_adapter_envelope", func() error { x, err := DecodeEnvelope(s.typed); s.sink = x; return err }},
	}
	for _, st := range steps {
		b.Run(st.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := st.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDatum compares the codec's datum encoder and decoder with
// hamba/avro's on the corpus value, without adapters, frames or envelopes.
func BenchmarkDatum(b *testing.B) {
	s := MustSuite(b)
	v, err := ToValue(s.native)
	if err != nil {
		b.Fatal(err)
	}
	hv, err := ToHamba(s.native)
	if err != nil {
		b.Fatal(err)
	}
	datum, err := codec.AppendDatum(nil, v)
	if err != nil {
		b.Fatal(err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"codec_append_datum", func() error {
			var buf [256]byte
			_, err := codec.AppendDatum(buf[:0], v)
			return err
		}},
		{"hamba_marshal", func() error { _, err := s.hamba.Marshal(s.v1, hv); return err }},
		{"codec_decode_datum", func() error { _, err := codec.DecodeDatum(datum); return err }},
		{"hamba_unmarshal", func() error {
			var out schema.HambaValue
			return s.hamba.Unmarshal(s.v1, datum, &out)
		}},
	}
	for _, st := range steps {
		b.Run(st.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := st.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
