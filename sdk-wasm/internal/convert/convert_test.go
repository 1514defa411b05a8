package convert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

type inner struct {
	N int64 `json:"n"`
}

type sample struct {
	Name     string            `json:"name"`
	Count    int               `json:"count"`
	Ratio    float64           `json:"ratio"`
	Raw      []byte            `json:"raw"`
	Tags     []string          `json:"tags"`
	Labels   map[string]string `json:"labels"`
	Inner    *inner            `json:"inner"`
	Skip     string            `json:"-"`
	Empty    string            `json:"empty,omitempty"`
	Untagged bool
	private  int //nolint:unused // present so the tests show unexported fields are skipped
}

func TestToValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      any
		want    codec.Value
		wantErr string
	}{
		{name: "Nil", in: nil, want: codec.Null()},
		{name: "Value", in: codec.Long(3), want: codec.Long(3)},
		{name: "String", in: "x", want: codec.String("x")},
		{name: "Bytes", in: []byte{1, 2}, want: codec.Bytes([]byte{1, 2})},
		{name: "Int", in: 7, want: codec.Long(7)},
		{name: "Int8", in: int8(-3), want: codec.Long(-3)},
		{name: "Uint32", in: uint32(9), want: codec.Long(9)},
		{name: "Uint64TooBig", in: uint64(math.MaxUint64), wantErr: "does not fit a long"},
		{name: "Float32", in: float32(1.5), want: codec.Double(1.5)},
		{name: "Bool", in: true, want: codec.Bool(true)},
		{name: "NilPointer", in: (*inner)(nil), want: codec.Null()},
		{name: "NilSlice", in: []string(nil), want: codec.Null()},
		{name: "Array", in: [2]int{1, 2}, want: codec.List(codec.Long(1), codec.Long(2))},
		{name: "ByteArray", in: [2]byte{1, 2}, want: codec.Bytes([]byte{1, 2})},
		{name: "MapSorted", in: map[string]int{"b": 2, "a": 1}, want: codec.Map(codec.Entry{Key: "a", Value: codec.Long(1)}, codec.Entry{Key: "b", Value: codec.Long(2)})},
		{name: "MapIntKey", in: map[int]int{1: 1}, wantErr: "not a string"},
		{name: "Chan", in: make(chan int), wantErr: "unsupported type"},
		{name: "Struct", in: sample{Name: "n", Count: 2, Ratio: 0.5, Raw: []byte{9}, Tags: []string{"t"}, Labels: map[string]string{"k": "v"}, Inner: &inner{N: 4}, Skip: "s", Untagged: true}, want: codec.Map(
			codec.Entry{Key: "name", Value: codec.String("n")},
			codec.Entry{Key: "count", Value: codec.Long(2)},
			codec.Entry{Key: "ratio", Value: codec.Double(0.5)},
			codec.Entry{Key: "raw", Value: codec.Bytes([]byte{9})},
			codec.Entry{Key: "tags", Value: codec.List(codec.String("t"))},
			codec.Entry{Key: "labels", Value: codec.Map(codec.Entry{Key: "k", Value: codec.String("v")})},
			codec.Entry{Key: "inner", Value: codec.Map(codec.Entry{Key: "n", Value: codec.Long(4)})},
			codec.Entry{Key: "Untagged", Value: codec.Bool(true)},
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ToValue(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.True(t, codec.Equal(tc.want, got), "want %s, got %s", show(tc.want), show(got))
		})
	}
}

func TestToValueCycle(t *testing.T) {
	t.Parallel()
	type node struct {
		Next *node `json:"next"`
	}
	n := &node{}
	n.Next = n
	_, err := ToValue(n)
	require.ErrorContains(t, err, "deeper than")
}

func TestFromValue(t *testing.T) {
	t.Parallel()
	t.Run("Struct", func(t *testing.T) {
		t.Parallel()
		v := codec.Map(
			codec.Entry{Key: "name", Value: codec.String("n")},
			codec.Entry{Key: "count", Value: codec.Long(2)},
			codec.Entry{Key: "ratio", Value: codec.Long(3)},
			codec.Entry{Key: "raw", Value: codec.Bytes([]byte{9})},
			codec.Entry{Key: "tags", Value: codec.List(codec.String("t"))},
			codec.Entry{Key: "labels", Value: codec.Map(codec.Entry{Key: "k", Value: codec.String("v")})},
			codec.Entry{Key: "inner", Value: codec.Map(codec.Entry{Key: "n", Value: codec.Long(4)})},
			codec.Entry{Key: "unknown", Value: codec.Long(1)},
			codec.Entry{Key: "Untagged", Value: codec.Bool(true)},
		)
		var s sample
		require.NoError(t, FromValue(v, &s))
		require.Equal(t, sample{Name: "n", Count: 2, Ratio: 3, Raw: []byte{9}, Tags: []string{"t"}, Labels: map[string]string{"k": "v"}, Inner: &inner{N: 4}, Untagged: true}, s)
	})
	t.Run("Any", func(t *testing.T) {
		t.Parallel()
		var x any
		v := codec.List(codec.Null(), codec.Bool(true), codec.Long(1), codec.Double(2), codec.Bytes([]byte{3}), codec.String("s"),
			codec.Map(codec.Entry{Key: "k", Value: codec.List()}))
		require.NoError(t, FromValue(v, &x))
		require.Equal(t, []any{nil, true, int64(1), 2.0, []byte{3}, "s", map[string]any{"k": []any{}}}, x)
	})
	t.Run("Value", func(t *testing.T) {
		t.Parallel()
		var v codec.Value
		require.NoError(t, FromValue(codec.Long(5), &v))
		require.True(t, codec.Equal(codec.Long(5), v))
	})
	t.Run("CommonTargets", func(t *testing.T) {
		t.Parallel()
		n, s, b := int64(9), "old", true
		require.NoError(t, FromValue(codec.Long(-7), &n))
		require.NoError(t, FromValue(codec.String("new"), &s))
		require.NoError(t, FromValue(codec.Bool(false), &b))
		require.Equal(t, int64(-7), n)
		require.Equal(t, "new", s)
		require.False(t, b)
		for _, p := range []any{&n, &s, &b} {
			require.NoError(t, FromValue(codec.Null(), p))
		}
		require.Zero(t, n)
		require.Zero(t, s)
		require.False(t, b)
		require.ErrorContains(t, FromValue(codec.String("x"), &n), "cannot store a string")
		require.ErrorContains(t, FromValue(codec.Long(1), &s), "cannot store a long")
		require.ErrorIs(t, FromValue(codec.Long(1), (*int64)(nil)), ErrTarget)
	})
	t.Run("NullZeroes", func(t *testing.T) {
		t.Parallel()
		n := 5
		require.NoError(t, FromValue(codec.Null(), &n))
		require.Zero(t, n)
	})
	tests := []struct {
		name    string
		v       codec.Value
		target  any
		wantErr string
	}{
		{name: "NotPointer", v: codec.Long(1), target: 1, wantErr: "non-nil pointer"},
		{name: "NilTarget", v: codec.Long(1), target: nil, wantErr: "non-nil pointer"},
		{name: "StringIntoInt", v: codec.String("x"), target: new(int), wantErr: "cannot store a string value in int"},
		{name: "DoubleIntoInt", v: codec.Double(1), target: new(int64), wantErr: "cannot store a double"},
		{name: "Overflow", v: codec.Long(300), target: new(int8), wantErr: "overflows int8"},
		{name: "NegativeUint", v: codec.Long(-1), target: new(uint), wantErr: "overflows uint"},
		{name: "ListIntoMap", v: codec.List(), target: new(map[string]int), wantErr: "cannot store a list"},
		{name: "WrongArrayLength", v: codec.List(codec.Long(1)), target: new([2]int), wantErr: "cannot store a list"},
		{name: "NestedError", v: codec.Map(codec.Entry{Key: "count", Value: codec.String("x")}), target: new(sample), wantErr: "count: convert"},
		{name: "Interface", v: codec.Long(1), target: new(error), wantErr: "cannot fill interface"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, FromValue(tc.v, tc.target), tc.wantErr)
		})
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	in := sample{Name: "n", Count: -2, Ratio: 0.25, Raw: []byte{}, Tags: []string{"a", "b"}, Labels: map[string]string{}, Inner: &inner{N: math.MinInt64}}
	v, err := ToValue(in)
	require.NoError(t, err)
	f, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	back, err := codec.DecodeFrame(f)
	require.NoError(t, err)
	var out sample
	require.NoError(t, FromValue(back, &out))
	require.Equal(t, in, out)
}

func show(v codec.Value) string {
	b, err := codec.MarshalProjection(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
