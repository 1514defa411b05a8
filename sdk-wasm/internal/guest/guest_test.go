package guest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// reset clears the package's registry for a test.
func reset(t *testing.T) {
	t.Helper()
	registry, order, manifest, last = map[string]*function{}, nil, nil, nil
	t.Cleanup(func() { registry, order, manifest, last = map[string]*function{}, nil, nil, nil })
}

func echo(v codec.Value) (codec.Value, error) { return v, nil }

func TestRegisterAndManifest(t *testing.T) {
	reset(t)
	Register("b", abi.KindActivity, echo)
	RegisterFrame("a", abi.KindWorkflow, func(f Frame) (Frame, error) { return f, nil })
	v, err := codec.DecodeFrame(Manifest())
	require.NoError(t, err)
	fn := func(name, kind string) codec.Value {
		return codec.Map(codec.Entry{Key: "name", Value: codec.String(name)}, codec.Entry{Key: "kind", Value: codec.String(kind)})
	}
	require.True(t, codec.Equal(codec.Map(
		codec.Entry{Key: "abi_version", Value: codec.Long(1)},
		codec.Entry{Key: "functions", Value: codec.List(fn("b", "activity"), fn("a", "workflow"))},
	), v))
	require.PanicsWithValue(t, `weft: register "c" after the manifest was read; register in an init function`, func() {
		Register("c", abi.KindActivity, echo)
	})
}

func TestRegisterRejects(t *testing.T) {
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{name: "Empty", fn: func() { Register("", abi.KindActivity, echo) }, want: `weft: invalid function name ""`},
		{name: "TooLong", fn: func() { Register(string(make([]byte, 257)), abi.KindActivity, echo) }, want: "1 to 256 bytes"},
		{name: "Duplicate", fn: func() { Register("x", abi.KindActivity, echo); Register("x", abi.KindActivity, echo) }, want: `"x" registered twice`},
		{name: "NilHandler", fn: func() { Register("y", abi.KindActivity, nil) }, want: "nil handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reset(t)
			defer func() {
				r := recover()
				require.NotNil(t, r)
				require.Contains(t, fmt.Sprint(r), tc.want)
			}()
			tc.fn()
		})
	}
}

func TestRegisterFunc(t *testing.T) {
	reset(t)
	type in struct {
		N int `json:"n"`
	}
	RegisterFunc("typed", abi.KindActivity, 10, func(c int, i in) (int, error) { return c + i.N, nil })
	RegisterFunc("raw", abi.KindActivity, 0, func(_ int, v codec.Value) (codec.Value, error) { return v, nil })
	RegisterFunc("frame", abi.KindActivity, 0, func(_ int, f Frame) (Frame, error) { return f, nil })
	RegisterFunc("failing", abi.KindActivity, 0, func(int, in) (int, error) { return 0, errors.New("boom") })

	out, err := registry["typed"].handler(codec.Map(codec.Entry{Key: "n", Value: codec.Long(5)}))
	require.NoError(t, err)
	require.True(t, codec.Equal(codec.Long(15), out))

	_, err = registry["typed"].handler(codec.String("x"))
	var ae *ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "weft.invalid_input", ae.Type)
	require.True(t, ae.NonRetryable)

	out, err = registry["raw"].handler(codec.Long(1))
	require.NoError(t, err)
	require.True(t, codec.Equal(codec.Long(1), out))

	require.Nil(t, registry["frame"].handler)
	f, err := registry["frame"].frame(Frame("abc"))
	require.NoError(t, err)
	require.Equal(t, Frame("abc"), f)

	_, err = registry["failing"].handler(codec.Map())
	require.EqualError(t, err, "boom")
}

func TestProtect(t *testing.T) {
	susp, err := protect(func() error { panic("oops") })
	require.False(t, susp)
	var ae *ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "panic", ae.Type)
	require.Equal(t, "oops", ae.Message)
	s, _ := ae.Details.AsString()
	require.Contains(t, s, "goroutine")

	susp, err = protect(func() error { Suspend(); return nil })
	require.True(t, susp)
	require.NoError(t, err)
}

func TestErrorValue(t *testing.T) {
	tests := []struct {
		name string
		in   *ApplicationError
		want *ApplicationError
	}{
		{name: "Full", in: &ApplicationError{Type: "t", Message: "m", NonRetryable: true, Details: codec.Long(1)}, want: &ApplicationError{Type: "t", Message: "m", NonRetryable: true, Details: codec.Long(1)}},
		{name: "DefaultType", in: &ApplicationError{Message: "m"}, want: &ApplicationError{Type: "error", Message: "m"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ErrorFromValue(tc.in.Value())
			require.NoError(t, err)
			require.Equal(t, tc.want.Type, got.Type)
			require.Equal(t, tc.want.Message, got.Message)
			require.Equal(t, tc.want.NonRetryable, got.NonRetryable)
			require.True(t, codec.Equal(tc.want.Details, got.Details))
		})
	}
	_, err := ErrorFromValue(codec.Map(codec.Entry{Key: "message", Value: codec.String("m")}))
	require.ErrorContains(t, err, "no string field type")
	_, err = ErrorFromValue(codec.List())
	require.ErrorContains(t, err, "not a map")
}

func TestAsApplicationError(t *testing.T) {
	ae := &ApplicationError{Type: "x", Message: "y"}
	require.Same(t, ae, AsApplicationError(fmt.Errorf("wrapped: %w", ae)))
	got := AsApplicationError(errors.New("plain"))
	require.Equal(t, "error", got.Type)
	require.Equal(t, "plain", got.Message)
	require.False(t, got.NonRetryable)
	require.Equal(t, "x: y", ae.Error())
	require.Equal(t, "x", (&ApplicationError{Type: "x"}).Error())
}

func TestFormat(t *testing.T) {
	require.Equal(t, "msg", Format("msg", nil))
	require.Equal(t, "msg a=1 b=two", Format("msg", []any{"a", 1, "b", "two"}))
	require.Equal(t, "msg a=(missing)", Format("msg", []any{"a"}))
}

func Named(Frame) (Frame, error) { return nil, nil }

func TestFuncName(t *testing.T) {
	require.Equal(t, "Named", FuncName(Named))
	require.Panics(t, func() { FuncName(func() {}) })
}

func TestSlices(t *testing.T) {
	t.Cleanup(func() { allocs = map[uint32][]byte{}; lastPtr, lastAlloc = 0, nil })
	p := Alloc(16)
	require.NotZero(t, p)
	copy(allocs[p], "echoINPUT")
	name, input, ok := slices(p, 4, p+4, 5)
	require.True(t, ok)
	require.Equal(t, "echo", string(name))
	require.Equal(t, "INPUT", string(input))
	_, _, ok = slices(p, 4, p+5, 5)
	require.False(t, ok, "input must follow the name")
	_, _, ok = slices(p, 4, p+4, 13)
	require.False(t, ok, "beyond the buffer")
	Free(p, 16)
	_, _, ok = slices(p, 4, p+4, 5)
	require.False(t, ok, "freed")
	require.Zero(t, Alloc(0))
}
