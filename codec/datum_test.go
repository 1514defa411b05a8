package codec_test

import (
	"bytes"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// zz returns the zig-zag varint of i, written independently of the codec.
func zz(i int64) []byte {
	u := uint64(i<<1) ^ uint64(i>>63)
	var b []byte
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestAppendDatumEncodes(t *testing.T) {
	tests := []struct {
		name  string
		value codec.Value
		want  []byte
	}{
		{name: "long zero", value: codec.Long(0), want: []byte{0x04, 0x00}},
		{name: "long -1", value: codec.Long(-1), want: []byte{0x04, 0x01}},
		{name: "long 64", value: codec.Long(64), want: []byte{0x04, 0x80, 0x01}},
		{name: "empty bytes", value: codec.Bytes(nil), want: []byte{0x08, 0x00}},
		{name: "empty string", value: codec.String(""), want: []byte{0x0a, 0x00}},
		{name: "empty list", value: codec.List(), want: []byte{0x0c, 0x00}},
		{name: "empty map", value: codec.Map(), want: []byte{0x0e, 0x00}},
		{
			name: "map keeps order", value: codec.Map(kv("b", codec.Null()), kv("a", codec.Null())),
			want: []byte{0x0e, 0x04, 0x02, 'b', 0x00, 0x02, 'a', 0x00, 0x00},
		},
		{
			name: "duplicate keys kept", value: codec.Map(kv("a", codec.Long(1)), kv("a", codec.Long(2))),
			want: []byte{0x0e, 0x04, 0x02, 'a', 0x04, 0x02, 0x02, 'a', 0x04, 0x04, 0x00},
		},
		{name: "smallest subnormal", value: codec.Double(5e-324), want: []byte{0x06, 1, 0, 0, 0, 0, 0, 0, 0}},
		{name: "64 levels", value: nest(64), want: append(append(bytes.Repeat([]byte{0x0c, 0x02}, 64), 0x00), bytes.Repeat([]byte{0x00}, 64)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("keep")
			got, err := codec.AppendDatum(prefix, tt.value)
			require.NoError(t, err)
			require.Equal(t, append([]byte("keep"), tt.want...), got)
			back, err := codec.DecodeDatum(tt.want)
			require.NoError(t, err)
			requireEqualValue(t, tt.value, back)
		})
	}
}

func TestAppendDatumRejects(t *testing.T) {
	tests := []struct {
		name  string
		value codec.Value
		code  codec.Code
	}{
		{name: "NaN", value: codec.Double(math.NaN()), code: codec.CodeNonFiniteFloat},
		{name: "+Inf", value: codec.Double(math.Inf(1)), code: codec.CodeNonFiniteFloat},
		{name: "-Inf in a map in a list", value: codec.List(codec.Map(kv("x", codec.Double(math.Inf(-1))))), code: codec.CodeNonFiniteFloat},
		{name: "invalid UTF-8 string", value: codec.List(codec.String("ok"), codec.String("\xff")), code: codec.CodeInvalidPayloadFraming},
		{name: "invalid UTF-8 key", value: codec.Map(kv("\xc3", codec.Null())), code: codec.CodeInvalidMapKey},
		{name: "65 levels", value: nest(65), code: codec.CodePayloadLimit},
		{name: "65 levels of maps", value: func() codec.Value {
			v := codec.Null()
			for range 65 {
				v = codec.Map(kv("k", v))
			}
			return v
		}(), code: codec.CodePayloadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, 3, 64)
			copy(dst, "abc")
			got, err := codec.AppendDatum(dst, tt.value)
			require.ErrorIs(t, err, tt.code)
			require.True(t, strings.HasPrefix(err.Error(), string(tt.code)+": "), "message %q", err)
			require.Equal(t, []byte("abc"), got, "dst comes back unchanged")

			_, err = codec.EncodeFrame(tt.value)
			require.ErrorIs(t, err, tt.code)
			_, err = codec.EncodeEnvelope(tt.value)
			require.ErrorIs(t, err, tt.code)
			if tt.code != codec.CodeInvalidPayloadFraming {
				_, err = codec.MarshalProjection(tt.value)
				require.ErrorIs(t, err, tt.code)
			}
		})
	}
}

func TestAppendDatumCyclicValueStops(t *testing.T) {
	// A list can be made to contain itself through its backing array; the
	// depth limit ends the walk.
	items := make([]codec.Value, 1)
	items[0] = codec.List(items...)
	_, err := codec.AppendDatum(nil, codec.List(items...))
	require.ErrorIs(t, err, codec.CodePayloadLimit)
}

func TestDecodeDatumAcceptsEveryAvroEncoding(t *testing.T) {
	tests := []struct {
		name      string
		datum     []byte
		want      codec.Value
		canonical []byte // what AppendDatum writes for want
	}{
		{
			name:      "list in two blocks",
			datum:     cat([]byte{0x0c}, zz(1), []byte{0x04, 0x02}, zz(2), []byte{0x00, 0x02, 0x01}, []byte{0x00}),
			want:      codec.List(codec.Long(1), codec.Null(), codec.Bool(true)),
			canonical: []byte{0x0c, 0x06, 0x04, 0x02, 0x00, 0x02, 0x01, 0x00},
		},
		{
			name:      "list block with negative count and byte size",
			datum:     cat([]byte{0x0c}, zz(-2), zz(3), []byte{0x04, 0x02, 0x00}, []byte{0x00}),
			want:      codec.List(codec.Long(1), codec.Null()),
			canonical: []byte{0x0c, 0x04, 0x04, 0x02, 0x00, 0x00},
		},
		{
			name: "map in a negative block then a positive block",
			datum: cat([]byte{0x0e}, zz(-1), zz(3), []byte{0x02, 'a', 0x00},
				zz(1), []byte{0x02, 'b', 0x02, 0x00}, []byte{0x00}),
			want:      codec.Map(kv("a", codec.Null()), kv("b", codec.Bool(false))),
			canonical: []byte{0x0e, 0x04, 0x02, 'a', 0x00, 0x02, 'b', 0x02, 0x00, 0x00},
		},
		{
			name:      "nested multi-block containers",
			datum:     cat([]byte{0x0c}, zz(1), []byte{0x0c}, zz(-1), zz(1), []byte{0x00}, zz(1), []byte{0x00, 0x00}, zz(1), []byte{0x0e, 0x00}, []byte{0x00}),
			want:      codec.List(codec.List(codec.Null(), codec.Null()), codec.Map()),
			canonical: []byte{0x0c, 0x04, 0x0c, 0x04, 0x00, 0x00, 0x00, 0x0e, 0x00, 0x00},
		},
		{
			name:      "overlong but in-range varints",
			datum:     []byte{0x84, 0x00, 0x80, 0x80, 0x00},
			want:      codec.Long(0),
			canonical: []byte{0x04, 0x00},
		},
		{
			name:      "ten-byte long",
			datum:     cat([]byte{0x04}, zz(math.MinInt64)),
			want:      codec.Long(math.MinInt64),
			canonical: cat([]byte{0x04}, zz(math.MinInt64)),
		},
		{
			name:      "negative zero double",
			datum:     []byte{0x06, 0, 0, 0, 0, 0, 0, 0, 0x80},
			want:      codec.Double(math.Copysign(0, -1)),
			canonical: []byte{0x06, 0, 0, 0, 0, 0, 0, 0, 0x80},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.DecodeDatum(tt.datum)
			require.NoError(t, err)
			requireEqualValue(t, tt.want, got)
			require.NoError(t, codec.ValidateFrame(frameOf(tt.datum...), codec.Limits{}))
			enc, err := codec.AppendDatum(nil, got)
			require.NoError(t, err)
			require.Equal(t, tt.canonical, enc)
		})
	}
}

func TestDecodeDatumRejects(t *testing.T) {
	huge := int64(1) << 62
	tests := []struct {
		name  string
		datum []byte
		code  codec.Code
	}{
		{name: "empty", datum: nil, code: codec.CodeInvalidPayloadFraming},
		{name: "negative union index", datum: []byte{0x01}, code: codec.CodeInvalidPayloadFraming},
		{name: "union index 8", datum: []byte{0x10}, code: codec.CodeInvalidPayloadFraming},
		{name: "huge union index", datum: cat(zz(math.MaxInt64)), code: codec.CodeInvalidPayloadFraming},
		{name: "boolean byte 2", datum: []byte{0x02, 0x02}, code: codec.CodeInvalidPayloadFraming},
		{name: "long of 11 bytes", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), code: codec.CodeInvalidPayloadFraming},
		{name: "long overflowing int64", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 9), []byte{0x02}), code: codec.CodeInvalidPayloadFraming},
		{name: "truncated varint", datum: []byte{0x04, 0x80}, code: codec.CodeInvalidPayloadFraming},
		{name: "short double", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0}, code: codec.CodeInvalidPayloadFraming},
		{name: "NaN", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, code: codec.CodeInvalidPayloadFraming},
		{name: "signalling NaN", datum: []byte{0x06, 1, 0, 0, 0, 0, 0, 0xf0, 0x7f}, code: codec.CodeInvalidPayloadFraming},
		{name: "+Inf", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, code: codec.CodeInvalidPayloadFraming},
		{name: "-Inf", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0xf0, 0xff}, code: codec.CodeInvalidPayloadFraming},
		{name: "negative bytes length", datum: cat([]byte{0x08}, zz(-1)), code: codec.CodeInvalidPayloadFraming},
		{name: "bytes length far beyond input", datum: cat([]byte{0x08}, zz(huge), []byte{1, 2, 3}), code: codec.CodeInvalidPayloadFraming},
		{name: "string length far beyond input", datum: cat([]byte{0x0a}, zz(math.MaxInt64), []byte("abc")), code: codec.CodeInvalidPayloadFraming},
		{name: "invalid UTF-8 string", datum: []byte{0x0a, 0x02, 0xff}, code: codec.CodeInvalidPayloadFraming},
		{name: "UTF-16 surrogate in string", datum: []byte{0x0a, 0x06, 0xed, 0xa0, 0x80}, code: codec.CodeInvalidPayloadFraming},
		{name: "invalid UTF-8 map key", datum: []byte{0x0e, 0x02, 0x02, 0xc3, 0x00, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "list count far beyond input", datum: cat([]byte{0x0c}, zz(huge), []byte{0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "list count one beyond input", datum: cat([]byte{0x0c}, zz(3), []byte{0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "map count beyond half the input", datum: cat([]byte{0x0e}, zz(2), []byte{0x00, 0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "negative count far beyond input", datum: cat([]byte{0x0c}, zz(-huge), zz(2), []byte{0x00, 0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "most negative count", datum: cat([]byte{0x0c}, zz(math.MinInt64), zz(1), []byte{0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "block size beyond input", datum: cat([]byte{0x0c}, zz(-1), zz(huge), []byte{0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "negative block size", datum: cat([]byte{0x0c}, zz(-1), zz(-1), []byte{0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "block size longer than its items", datum: cat([]byte{0x0c}, zz(-1), zz(2), []byte{0x00, 0x00, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "block size shorter than its items", datum: cat([]byte{0x0c}, zz(-1), zz(1), []byte{0x02, 0x01, 0x00}), code: codec.CodeInvalidPayloadFraming},
		{name: "list without terminator", datum: []byte{0x0c, 0x02, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "map key without value", datum: []byte{0x0e, 0x02, 0x02, 'a'}, code: codec.CodeInvalidPayloadFraming},
		{name: "trailing byte", datum: []byte{0x00, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "trailing byte after a list", datum: []byte{0x0c, 0x00, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "65 levels of lists", datum: cat(bytes.Repeat([]byte{0x0c, 0x02}, 65), []byte{0x00}, bytes.Repeat([]byte{0x00}, 65)), code: codec.CodePayloadLimit},
		{name: "65 levels of empty maps", datum: cat(bytes.Repeat([]byte{0x0e, 0x02, 0x00}, 64), []byte{0x0e, 0x00}, bytes.Repeat([]byte{0x00}, 64)), code: codec.CodePayloadLimit},
		{name: "a million levels of lists", datum: bytes.Repeat([]byte{0x0c, 0x02}, 1_000_000), code: codec.CodePayloadLimit},
		{name: "a million levels of maps", datum: bytes.Repeat([]byte{0x0e, 0x02, 0x02, 'k'}, 1_000_000), code: codec.CodePayloadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			allocated := allocatedBytes(func() { _, err = codec.DecodeDatum(tt.datum) })
			require.ErrorIs(t, err, tt.code)
			require.True(t, strings.HasPrefix(err.Error(), string(tt.code)+": "), "message %q", err)
			require.Less(t, allocated, uint64(64<<10), "rejecting a hostile datum allocates little")

			_, err = codec.DecodeFrame(frameOf(tt.datum...))
			require.ErrorIs(t, err, tt.code)
			require.ErrorIs(t, codec.ValidateFrame(frameOf(tt.datum...), codec.Limits{}), tt.code)
		})
	}
}

// allocatedBytes returns the heap bytes f allocates.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecodeLimits(t *testing.T) {
	deep := func(n int) []byte {
		return frameOf(cat(bytes.Repeat([]byte{0x0c, 0x02}, n), []byte{0x00}, bytes.Repeat([]byte{0x00}, n))...)
	}
	tests := []struct {
		name   string
		frame  []byte
		limits codec.Limits
		code   codec.Code // "" for success
	}{
		{name: "default depth allows 64", frame: deep(64)},
		{name: "default depth rejects 65", frame: deep(65), code: codec.CodePayloadLimit},
		{name: "raised depth allows 200", frame: deep(200), limits: codec.Limits{MaxDepth: 200}},
		{name: "raised depth rejects 201", frame: deep(201), limits: codec.Limits{MaxDepth: 200}, code: codec.CodePayloadLimit},
		{name: "lowered depth", frame: deep(2), limits: codec.Limits{MaxDepth: 1}, code: codec.CodePayloadLimit},
		{name: "scalars have depth 0", frame: frameOf(0x00), limits: codec.Limits{MaxDepth: 1}},
		{name: "size at the limit", frame: frameOf(0x0a, 0x04, 'h', 'i'), limits: codec.Limits{MaxSize: 14}},
		{name: "size over the limit", frame: frameOf(0x0a, 0x06, 'h', 'i', '!'), limits: codec.Limits{MaxSize: 14}, code: codec.CodePayloadLimit},
		{name: "default size rejects over 16 MiB", frame: frameOf(cat([]byte{0x08}, zz(16<<20), make([]byte, 16<<20))...), code: codec.CodePayloadLimit},
		{name: "size limit before the datum", frame: frameOf(0x10, 0x00, 0x00, 0x00, 0x00), limits: codec.Limits{MaxSize: 12}, code: codec.CodePayloadLimit},
		{name: "header before the size limit", frame: append([]byte{0xc3, 0x01, 0}, make([]byte, 20)...), limits: codec.Limits{MaxSize: 12}, code: codec.CodeUnsupportedPayloadSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := codec.DecodeFrameLimits(tt.frame, tt.limits)
			verr := codec.ValidateFrame(tt.frame, tt.limits)
			if tt.code == "" {
				require.NoError(t, err)
				require.NoError(t, verr)
				enc, err := codec.EncodeFrame(v)
				if err == nil {
					require.Equal(t, tt.frame, enc)
				} else {
					require.ErrorIs(t, err, codec.CodePayloadLimit, "values past the default depth cannot be encoded")
				}
				return
			}
			require.ErrorIs(t, err, tt.code)
			require.ErrorIs(t, verr, tt.code)
		})
	}
	require.Equal(t, codec.Limits{MaxDepth: 64, MaxSize: 16 << 20}, codec.DefaultLimits)
}

func TestDecodedValueOwnsItsMemory(t *testing.T) {
	v := codec.Map(kv("key", codec.String("text")), kv("bin", codec.Bytes([]byte{1, 2, 3})))
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	got, err := codec.DecodeFrame(frame)
	require.NoError(t, err)
	for i := range frame {
		frame[i] = 0xee
	}
	requireEqualValue(t, v, got)
}

func TestDecodeShapes(t *testing.T) {
	// Lists and maps of every size and nesting are assembled in place from
	// one slice; check order and contents on a value with many of them.
	var items []codec.Value
	for i := range 40 {
		var entries []codec.Entry
		for j := range i % 5 {
			entries = append(entries, kv(strings.Repeat("k", j+1), codec.List(codec.Long(int64(i)), codec.Long(int64(j)), codec.List())))
		}
		items = append(items, codec.Map(entries...), codec.List(codec.String("s"), codec.Bytes([]byte{byte(i)})))
	}
	v := codec.List(codec.List(items...), codec.Map(kv("tail", codec.List(items[:7]...))))
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	got, err := codec.DecodeFrame(frame)
	require.NoError(t, err)
	requireEqualValue(t, v, got)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(t, err)
	fromEnv, err := codec.DecodeEnvelope(env)
	require.NoError(t, err)
	requireEqualValue(t, v, fromEnv)
}

func TestAppendFrameDoesNotAllocate(t *testing.T) {
	v := goldenValues["nested"]
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = codec.AppendFrame(buf[:0], v)
		if err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

func TestValidateFrameDoesNotAllocate(t *testing.T) {
	for _, depth := range []int{1, 16, 17, codec.DefaultLimits.MaxDepth} {
		frame, err := codec.EncodeFrame(nest(depth))
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(20, func() {
			if err := codec.ValidateFrame(frame, codec.Limits{}); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs, "depth %d", depth)
	}
}
