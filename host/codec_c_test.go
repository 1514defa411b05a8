package host_test

import (
	"bytes"
	"encoding/base64"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec/codectest"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

func mustCBase64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(tb, err)
	return b
}

// cFrameHeader is the single-object header of schema v1.
var cFrameHeader = []byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}

// cCodecOutcome is what the C echo must answer for the frame in, by the Go
// codec: the canonical frame of its Value, or a weft.invalid_input error
// with the Go codec's error code.
func cCodecOutcome(tb testing.TB, in []byte) string {
	tb.Helper()
	v, err := codec.DecodeFrame(in)
	if err != nil {
		return "error:weft.invalid_input:" + string(codec.ErrorCode(err))
	}
	return "ok:" + base64.StdEncoding.EncodeToString(MustFrame(tb, v))
}

// TestCCodecGolden sends every golden case through the C testkit's echo:
// the C decoder and encoder give back the very same bytes, and keep every
// map order the protocol allows.
func TestCCodecGolden(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	g := codectest.LoadGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in := mustCBase64(t, c.WireBase64)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status, "error: %v", res.Error)
			require.Equal(t, in, res.Output)
		})
	}
	for _, alt := range g.AlternateMapOrders {
		t.Run(alt.Name, func(t *testing.T) {
			for _, w := range alt.WireBase64 {
				in := mustCBase64(t, w)
				res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
				require.NoError(t, err)
				require.Equal(t, in, res.Output, "the map keeps its wire order")
			}
		})
	}
}

// TestCCodecMalformed checks that the C decoder rejects every malformed
// golden frame with the protocol's error code, like the Go SDK. A frame
// reaches the decoder unchanged as the snapshot of last_checkpoint (the host
// hands a stored checkpoint over as it is), and, when its header is valid,
// as an input (the host checks only the header of an input).
func TestCCodecMalformed(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	g := codectest.LoadGolden(t)
	for _, mf := range g.MalformedFrames {
		t.Run(mf.Name, func(t *testing.T) {
			frame := mustCBase64(t, mf.WireBase64)
			res, err := k.call(t.Context(), "c", "count", host.CallRequest{
				Input:          MustFrame(t, obj("to", 1)),
				LastCheckpoint: frame,
			})
			require.Equal(t, "error:error:"+mf.Error, cOutcome(res, err), "like the Go testkit, a retryable error")
			require.False(t, res.Error.NonRetryable)
			res, err = k.call(t.Context(), "c", "echo", host.CallRequest{Input: frame})
			switch {
			case len(frame) == 0:
				require.Equal(t, "ok:"+base64.StdEncoding.EncodeToString(MustFrame(t, codec.Null())), cOutcome(res, err), "no input is null")
			case len(frame) < len(cFrameHeader) || !bytes.Equal(frame[:len(cFrameHeader)], cFrameHeader):
				requireCode(t, err, abi.CodeInvalidInput) // the host checks the header
			default:
				require.Equal(t, "error:weft.invalid_input:"+mf.Error, cOutcome(res, err))
				require.True(t, res.Error.NonRetryable)
			}
		})
	}
}

// cDeep returns the datum of n lists nested in each other around a null.
func cDeep(n int) []byte {
	d := bytes.Repeat([]byte{0x0c, 0x02}, n)
	d = append(d, 0x00)
	return append(d, bytes.Repeat([]byte{0x00}, n)...)
}

// TestCCodecHostileFrames sends hand-built datums, valid and hostile,
// through the C echo: it must answer exactly what the Go codec decodes (the
// same canonical bytes, or the same error code), and never allocate for
// counts the bytes cannot hold.
func TestCCodecHostileFrames(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	zigzag := func(i int64) []byte {
		u := uint64(i<<1) ^ uint64(i>>63)
		var b []byte
		for u >= 0x80 {
			b = append(b, byte(u)|0x80)
			u >>= 7
		}
		return append(b, byte(u))
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name  string
		datum []byte
		want  string // the error code, or "" for a valid datum
		canon []byte // the canonical datum a valid one echoes as (default: itself)
	}{
		{name: "Depth64", datum: cDeep(64)},
		{name: "Depth65", datum: cDeep(65), want: "payload_limit_exceeded"},
		{name: "DeepMillion", datum: cDeep(1_000_000), want: "payload_limit_exceeded"},
		{name: "ListClaimsHugeCount", datum: cat([]byte{0x0c}, zigzag(1<<40), []byte{0x00}), want: "invalid_payload_framing"},
		{name: "MapClaimsHugeCount", datum: cat([]byte{0x0e}, zigzag(1<<40), []byte{0x00, 0x00}), want: "invalid_payload_framing"},
		{name: "MapClaimsTooManyForBytes", datum: []byte{0x0e, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00}, want: "invalid_payload_framing"},
		{name: "BlockCountMinInt64", datum: cat([]byte{0x0c}, zigzag(math.MinInt64)), want: "invalid_payload_framing"},
		{name: "NegativeBlockWithSize", datum: []byte{0x0c, 0x03, 0x08, 0x04, 0x02, 0x04, 0x04, 0x00}, canon: []byte{0x0c, 0x04, 0x04, 0x02, 0x04, 0x04, 0x00}},
		{name: "TwoBlocks", datum: []byte{0x0c, 0x02, 0x04, 0x02, 0x02, 0x04, 0x04, 0x00}, canon: []byte{0x0c, 0x04, 0x04, 0x02, 0x04, 0x04, 0x00}},
		{name: "MapInTwoBlocks", datum: []byte{0x0e, 0x02, 0x02, 0x61, 0x00, 0x02, 0x02, 0x62, 0x00, 0x00}, canon: []byte{0x0e, 0x04, 0x02, 0x61, 0x00, 0x02, 0x62, 0x00, 0x00}},
		{name: "RepeatedMapKey", datum: []byte{0x0e, 0x04, 0x02, 0x61, 0x00, 0x02, 0x61, 0x04, 0x02, 0x00}},
		{name: "BlockSizeMismatch", datum: []byte{0x0c, 0x03, 0x06, 0x04, 0x02, 0x04, 0x04, 0x00}, want: "invalid_payload_framing"},
		{name: "BlockSizePastEnd", datum: []byte{0x0c, 0x03, 0x7e, 0x04, 0x02}, want: "invalid_payload_framing"},
		{name: "OverlongVarint", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), want: "invalid_payload_framing"},
		{name: "VarintOverflowsInt64", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 9), []byte{0x02}), want: "invalid_payload_framing"},
		{name: "NegativeUnionIndex", datum: []byte{0x01}, want: "invalid_payload_framing"},
		{name: "BooleanTwo", datum: []byte{0x02, 0x02}, want: "invalid_payload_framing"},
		{name: "NegativeStringLength", datum: []byte{0x0a, 0x01}, want: "invalid_payload_framing"},
		{name: "StringLongerThanData", datum: []byte{0x0a, 0x0a, 0x61}, want: "invalid_payload_framing"},
		{name: "InvalidUTF8Key", datum: []byte{0x0e, 0x02, 0x02, 0xff, 0x00, 0x00}, want: "invalid_payload_framing"},
		{name: "SurrogateInString", datum: []byte{0x0a, 0x06, 0xed, 0xa0, 0x80}, want: "invalid_payload_framing"},
		{name: "OverlongUTF8", datum: []byte{0x0a, 0x04, 0xc0, 0x80}, want: "invalid_payload_framing"},
		{name: "AboveMaxRune", datum: []byte{0x0a, 0x08, 0xf4, 0x90, 0x80, 0x80}, want: "invalid_payload_framing"},
		{name: "MaxRune", datum: []byte{0x0a, 0x08, 0xf4, 0x8f, 0xbf, 0xbf}},
		{name: "TruncatedMapKey", datum: []byte{0x0e, 0x02, 0x10, 0x61}, want: "invalid_payload_framing"},
		{name: "EmptyListBlock", datum: []byte{0x0c, 0x00}},
		{name: "NegativeZeroInList", datum: []byte{0x0c, 0x02, 0x06, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append(append([]byte{}, cFrameHeader...), tc.datum...)
			want := "error:weft.invalid_input:" + tc.want
			if tc.want == "" {
				canon := tc.datum
				if tc.canon != nil {
					canon = tc.canon
				}
				want = "ok:" + base64.StdEncoding.EncodeToString(append(append([]byte{}, cFrameHeader...), canon...))
			}
			require.Equal(t, want, cCodecOutcome(t, in), "the Go codec")
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.Equal(t, want, cOutcome(res, err), "the C echo")
		})
	}

	t.Run("FrameOverSizeLimit", func(t *testing.T) {
		in := MustFrame(t, codec.Bytes(make([]byte, 16<<20)))
		res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in, MemoryLimit: 256 << 20})
		require.Equal(t, "error:weft.invalid_input:payload_limit_exceeded", cOutcome(res, err))
	})
}

// cRandValue returns a random Value at most four containers deep.
func cRandValue(r *rand.Rand, depth int) codec.Value {
	kind := r.IntN(8)
	if depth >= 4 && kind >= int(codec.KindList) {
		kind = r.IntN(int(codec.KindList))
	}
	runes := []rune{'a', 'Z', '0', ' ', '"', '\\', 0, 'é', '✓', 0xfffd, 0x1f600, 0x10ffff, 0x7f, 0x80, 0x7ff, 0x800, 0xffff}
	str := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	switch codec.Kind(kind) {
	case codec.KindBoolean:
		return codec.Bool(r.IntN(2) == 1)
	case codec.KindLong:
		switch r.IntN(4) {
		case 0:
			return codec.Long([]int64{0, -1, 1, 63, -64, 64, math.MaxInt64, math.MinInt64}[r.IntN(8)])
		case 1:
			return codec.Long(r.Int64N(1000) - 500)
		}
		return codec.Long(int64(r.Uint64()))
	case codec.KindDouble:
		for {
			f := math.Float64frombits(r.Uint64())
			if r.IntN(3) == 0 {
				f = []float64{0, math.Copysign(0, -1), 7, -1.5, math.MaxFloat64, math.SmallestNonzeroFloat64}[r.IntN(6)]
			}
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return codec.Double(f)
			}
		}
	case codec.KindBytes:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return codec.Bytes(b)
	case codec.KindString:
		return codec.String(str())
	case codec.KindList:
		items := make([]codec.Value, r.IntN(5))
		for i := range items {
			items[i] = cRandValue(r, depth+1)
		}
		return codec.List(items...)
	case codec.KindMap:
		entries := make([]codec.Entry, r.IntN(5))
		for i := range entries {
			entries[i] = codec.Entry{Key: str(), Value: cRandValue(r, depth+1)}
		}
		return codec.Map(entries...)
	}
	return codec.Null()
}

// TestCCodecDifferential compares the C guest's codec with the Go codec on
// random values (the C echo must return the Go encoding byte for byte) and
// on random corruptions of valid frames (the C and Go testkits must give
// the same outcome: the same canonical bytes or the same error code).
func TestCCodecDifferential(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 50
	}
	var frames [][]byte
	t.Run("RandomValues", func(t *testing.T) {
		for range n {
			in := MustFrame(t, cRandValue(r, 0))
			frames = append(frames, in)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status, "input %x: %v", in, res.Error)
			require.Equal(t, in, res.Output)
		}
	})
	t.Run("Corruptions", func(t *testing.T) {
		for _, c := range codectest.LoadGolden(t).Cases {
			frames = append(frames, mustCBase64(t, c.WireBase64))
		}
		outcomes := map[string]int{}
		for range 2 * n {
			f := append([]byte{}, frames[r.IntN(len(frames))]...)
			datum := f[len(cFrameHeader):]
			switch r.IntN(4) {
			case 0: // flip a byte
				if len(datum) > 0 {
					datum[r.IntN(len(datum))] ^= byte(1 + r.IntN(255))
				}
			case 1: // cut the datum short
				datum = datum[:r.IntN(len(datum)+1)]
			case 2: // insert a byte
				i := r.IntN(len(datum) + 1)
				datum = append(datum[:i], append([]byte{byte(r.Uint32())}, datum[i:]...)...)
			default: // overwrite a byte with a varint-ish value
				if len(datum) > 0 {
					datum[r.IntN(len(datum))] = []byte{0x00, 0x01, 0x7f, 0x80, 0xff}[r.IntN(5)]
				}
			}
			in := append(append([]byte{}, cFrameHeader...), datum...)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			got := cOutcome(res, err)
			require.Equal(t, cCodecOutcome(t, in), got, "input %x: the C guest and the Go codec disagree", in)
			kind, _, _ := strings.Cut(got, ":")
			outcomes[kind]++
		}
		require.NotZero(t, outcomes["ok"], "some corruptions still decode")
		require.NotZero(t, outcomes["error"], "some corruptions are rejected")
	})
}
