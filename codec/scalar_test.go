package codec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScalarFastPath checks that the scalar shortcut of decodeDatum gives
// exactly what the general scan-and-build path gives, and leaves every
// datum it does not take, malformed ones included, to that path.
func TestScalarFastPath(t *testing.T) {
	t.Parallel()
	general := func(d []byte) (Value, error) {
		c, err := scan(d, defaultMaxDepth)
		if err != nil {
			return Value{}, err
		}
		return build(d, c, false), nil
	}
	var datums [][]byte
	for _, v := range []Value{
		Null(), Bool(false), Bool(true), Long(0), Long(-1), Long(63), Long(64), Long(-65),
		Long(math.MaxInt64), Long(math.MinInt64), Double(1.5), String("x"), Bytes([]byte{1}), List(Long(1)),
	} {
		d, err := AppendDatum(nil, v)
		require.NoError(t, err)
		datums = append(datums, d)
	}
	datums = append(datums,
		[]byte{}, []byte{0, 0}, []byte{2}, []byte{2, 2}, []byte{4}, []byte{4, 0x80}, []byte{4, 0, 0},
		[]byte{4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},       // overflows
		[]byte{4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, // 11 bytes
		[]byte{4, 0x80, 0x00}, // overlong but valid varint
	)
	taken := 0
	for _, d := range datums {
		want, wantErr := general(d)
		got, ok := scalar(d)
		if ok {
			taken++
			require.NoError(t, wantErr, "%x", d)
			require.True(t, Equal(want, got), "%x: %v vs %v", d, want, got)
		}
		v, err := decodeDatum(d, Limits{}, false)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error(), "%x", d)
			continue
		}
		require.NoError(t, err, "%x", d)
		require.True(t, Equal(want, v), "%x", d)
	}
	require.Equal(t, 11, taken, "null, two booleans, seven longs and the overlong long take the shortcut")
}
