package codec_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/codectest"
)

// requirePullMatches reads frame with every Reset method of d and checks
// the values, counts and errors against DecodeFrame and DecodeEnvelopeJSON.
func requirePullMatches(tb testing.TB, d *codec.Decoder, frame []byte) {
	tb.Helper()
	want, werr := codec.DecodeFrame(frame)
	envJSON := codec.AppendFrameEnvelopeJSON(nil, frame)
	for _, reset := range []struct {
		name string
		run  func() error
	}{
		{"Reset", func() error {
			if len(frame) < codec.HeaderSize {
				return d.ResetFrame(frame)
			}
			return d.Reset(frame[codec.HeaderSize:])
		}},
		{"ResetFrame", func() error { return d.ResetFrame(frame) }},
		{"ResetEnvelopeJSON", func() error { return d.ResetEnvelopeJSON(envJSON) }},
	} {
		err := reset.run()
		if reset.name == "Reset" && len(frame) >= codec.HeaderSize && !bytes.Equal(frame[:codec.HeaderSize], frameOf()) {
			continue // the header is not the datum's business
		}
		if werr != nil {
			require.Error(tb, err, reset.name)
			require.Equal(tb, werr.Error(), err.Error(), reset.name)
			require.Equal(tb, err, d.Err())
			require.Equal(tb, codec.KindNull, d.Next())
			require.Equal(tb, err, d.Finish())
			continue
		}
		require.NoError(tb, err, reset.name)
		items, entries := d.Counts()
		wantItems, wantEntries := countValue(want)
		require.Equal(tb, [2]int{wantItems, wantEntries}, [2]int{items, entries}, reset.name)
		got := pullValue(d)
		require.NoError(tb, d.Finish(), reset.name)
		requireEqualValue(tb, want, got)
	}
	fromJSON, err := codec.DecodeEnvelopeJSON(envJSON)
	if werr != nil {
		require.Equal(tb, werr.Error(), err.Error())
		return
	}
	require.NoError(tb, err)
	requireEqualValue(tb, want, fromJSON)
}

func TestDecoderMatchesDecodeFrame(t *testing.T) {
	var d codec.Decoder
	g := codectest.LoadGolden(t)
	t.Run("golden", func(t *testing.T) {
		for _, c := range g.Cases {
			requirePullMatches(t, &d, unb64(t, c.WireBase64))
		}
		for _, c := range g.AlternateMapOrders {
			for _, w := range c.WireBase64 {
				requirePullMatches(t, &d, unb64(t, w))
			}
		}
	})
	t.Run("malformed", func(t *testing.T) {
		for _, c := range g.MalformedFrames {
			frame := unb64(t, c.WireBase64)
			requirePullMatches(t, &d, frame)
			require.ErrorIs(t, d.ResetFrame(frame), codec.Code(c.Error))
		}
	})
	t.Run("every avro encoding", func(t *testing.T) {
		for _, datum := range [][]byte{
			{0x0c, 0x02, 0x00, 0x02, 0x00, 0x00},                             // two blocks
			{0x0c, 0x03, 0x04, 0x00, 0x00, 0x00},                             // negative count and size
			{0x0e, 0x01, 0x06, 0x02, 'a', 0x00, 0x00},                        // map, negative count
			{0x0e, 0x02, 0x02, 'a', 0x00, 0x02, 0x02, 'b', 0x02, 0x00, 0x00}, // map, two blocks
			{0x84, 0x00, 0x82, 0x00},                                         // overlong varints: long 1
			{0x0c, 0x00},                                                     // empty list
			{0x0c, 0x02, 0x0c, 0x00, 0x02, 0x0e, 0x00, 0x00},                 // nested empties
			{0x0c, 0x04, 0x0a, 0x00, 0x08, 0x00, 0x00},                       // empty string and bytes
			{0x0c, 0x02, 0x0c, 0x02, 0x04, 0x02, 0x00, 0x02, 0x00, 0x00},     // blocks at two levels
		} {
			_, err := codec.DecodeDatum(datum)
			require.NoError(t, err, "%x", datum)
			requirePullMatches(t, &d, frameOf(datum...))
		}
	})
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 5))
		for range 2000 {
			frame, err := codec.EncodeFrame(randomValue(r, 4))
			require.NoError(t, err)
			requirePullMatches(t, &d, frame)
		}
	})
	t.Run("deepest and too deep", func(t *testing.T) {
		for _, depth := range []int{64, 65, 1000} {
			datum := append(bytes.Repeat([]byte{0x0c, 0x02}, depth), 0x00)
			requirePullMatches(t, &d, frameOf(append(datum, bytes.Repeat([]byte{0x00}, depth)...)...))
		}
	})
	t.Run("benchmark corpus", func(t *testing.T) {
		frame, err := codec.EncodeFrame(benchValue(t))
		require.NoError(t, err)
		requirePullMatches(t, &d, frame)
	})
}

func TestDecoderEnvelopeErrors(t *testing.T) {
	var d codec.Decoder
	for _, data := range []string{
		`{"codec":"json","blob":"!"}`,
		`{"codec":"avro"}`,
		`{"codec":"avro","blob":"wwHioz3/VYAiNwA"}`,
		`{"codec":"avro","blob":"e30="}`, // {} inside
		`{"codec":"avro","blob":"wwEAAAAAAAAAAAA="}`,
	} {
		_, want := codec.DecodeEnvelopeJSON([]byte(data))
		require.Error(t, want)
		err := d.ResetEnvelopeJSON([]byte(data))
		require.Equal(t, want.Error(), err.Error(), data)
		require.Equal(t, codec.KindNull, d.Next())
	}
}

func TestDecoderValuesOutliveItsInput(t *testing.T) {
	v := codec.Map(kv("key", codec.String("text")), kv("bin", codec.Bytes([]byte{1, 2, 3})), kv("", codec.String("")))
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)

	var d codec.Decoder
	require.NoError(t, d.ResetFrame(frame))
	got := pullValue(&d)
	require.NoError(t, d.Finish())
	for i := range frame {
		frame[i] = 0xee
	}
	requireEqualValue(t, v, got)

	// ResetEnvelopeJSON reuses its frame buffer: values read before stay
	// intact when the decoder reads the next envelope.
	env, err := codec.AppendEnvelopeJSON(nil, v)
	require.NoError(t, err)
	require.NoError(t, d.ResetEnvelopeJSON(env))
	first := pullValue(&d)
	require.NoError(t, d.Finish())
	other, err := codec.AppendEnvelopeJSON(nil, codec.Map(kv("yyy", codec.String("zzzz")), kv("bin", codec.Bytes([]byte{9, 9, 9}))))
	require.NoError(t, err)
	require.NoError(t, d.ResetEnvelopeJSON(other))
	_ = pullValue(&d)
	require.NoError(t, d.Finish())
	requireEqualValue(t, v, first)

	// Once warm, reading an envelope allocates one buffer for all strings,
	// keys and bytes, and nothing else.
	allocs := testing.AllocsPerRun(50, func() {
		if err := d.ResetEnvelopeJSON(env); err != nil {
			panic(err)
		}
		for d.Next(); d.More(); {
			_ = d.Key()
			switch d.Next() {
			case codec.KindString:
				_ = d.String()
			case codec.KindBytes:
				_ = d.Bytes()
			}
		}
		if err := d.Finish(); err != nil {
			panic(err)
		}
	})
	require.Equal(t, 1.0, allocs)
}

func TestDecoderOutOfOrder(t *testing.T) {
	mapFrame, err := codec.EncodeFrame(codec.Map(kv("a", codec.Long(1))))
	require.NoError(t, err)
	listFrame, err := codec.EncodeFrame(codec.List(codec.Long(1), codec.List(codec.Long(2))))
	require.NoError(t, err)
	tests := []struct {
		name  string
		frame []byte
		read  func(d *codec.Decoder)
	}{
		{name: "no input", read: func(d *codec.Decoder) { d.Next() }},
		{name: "second top-level value", frame: frameOf(0x00), read: func(d *codec.Decoder) {
			d.Next()
			d.Next()
		}},
		{name: "map value without key", frame: mapFrame, read: func(d *codec.Decoder) {
			d.Next()
			d.More()
			d.Next()
		}},
		{name: "two keys", frame: mapFrame, read: func(d *codec.Decoder) {
			d.Next()
			d.More()
			d.Key()
			d.Key()
		}},
		{name: "More while a value is due", frame: mapFrame, read: func(d *codec.Decoder) {
			d.Next()
			d.More()
			d.Key()
			d.More()
		}},
		{name: "key in a list", frame: listFrame, read: func(d *codec.Decoder) {
			d.Next()
			d.More()
			d.Key()
		}},
		{name: "key at the top", frame: listFrame, read: func(d *codec.Decoder) { d.Key() }},
		{name: "item past the block", frame: listFrame, read: func(d *codec.Decoder) {
			d.Next() // the outer list
			d.Next() // 1
			d.Next() // the inner list
			d.Next() // 2
			d.Next() // nothing left in the inner list's block
		}},
		{name: "value not read to its end", frame: listFrame, read: func(d *codec.Decoder) {
			d.Next()
			d.More()
			d.Next()
		}},
		{name: "nothing read", frame: listFrame, read: func(*codec.Decoder) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d codec.Decoder
			if tt.frame != nil {
				require.NoError(t, d.ResetFrame(tt.frame))
			}
			tt.read(&d)
			err := d.Finish()
			require.ErrorIs(t, err, codec.CodeInvalidPayloadFraming)
			require.Contains(t, err.Error(), "decoder: ")
			// Errors are sticky.
			require.Equal(t, codec.KindNull, d.Next())
			require.False(t, d.More())
			require.Empty(t, d.Key())
			require.Equal(t, err, d.Finish())

			// A Reset starts over.
			require.NoError(t, d.ResetFrame(listFrame))
			requireEqualValue(t, codec.List(codec.Long(1), codec.List(codec.Long(2))), pullValue(&d))
			require.NoError(t, d.Finish())
		})
	}
}

func TestDecoderScalarsOfOtherKinds(t *testing.T) {
	var d codec.Decoder
	require.NoError(t, d.ResetFrame(frameOf(0x0a, 0x02, 'x')))
	require.Equal(t, codec.KindString, d.Next())
	require.False(t, d.Bool())
	require.Zero(t, d.Long())
	require.Zero(t, d.Double())
	require.Nil(t, d.Bytes())
	require.Equal(t, "x", d.String())
	require.Zero(t, d.Len())
	require.False(t, d.More(), "no list or map is open")
	require.NoError(t, d.Finish())
}

// FuzzDecoder checks that the pull decoder agrees with DecodeFrame on any
// input: the same error, or the same value and counts.
func FuzzDecoder(f *testing.F) {
	addGoldenFrames(f)
	f.Add(frameOf(0x0c, 0x02, 0x00, 0x02, 0x00, 0x00))
	f.Add(frameOf(0x0c, 0x03, 0x04, 0x00, 0x00, 0x00))
	f.Add(frameOf(0x0e, 0x01, 0x06, 0x02, 'a', 0x00, 0x00))
	f.Add(frameOf(0x84, 0x80, 0x00))
	var d codec.Decoder
	f.Fuzz(func(t *testing.T, frame []byte) {
		want, werr := codec.DecodeFrame(frame)
		err := d.ResetFrame(frame)
		if werr != nil {
			if err == nil || err.Error() != werr.Error() {
				t.Fatalf("ResetFrame says %v, DecodeFrame says %v", err, werr)
			}
			return
		}
		if err != nil {
			t.Fatalf("ResetFrame rejects what DecodeFrame accepts: %v", err)
		}
		got := pullValue(&d)
		if err := d.Finish(); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		if !codec.Equal(want, got) {
			t.Fatalf("pulled value differs from the decoded one for %x", frame)
		}
		items, entries := d.Counts()
		if wi, we := countValue(want); wi != items || we != entries {
			t.Fatalf("Counts %d, %d; the value has %d, %d", items, entries, wi, we)
		}
	})
}
