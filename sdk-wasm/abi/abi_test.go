package abi_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

func TestPack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ptr  uint32
		n    uint32
		want uint64
	}{
		{name: "Zero", want: 0},
		{name: "Small", ptr: 0x10, n: 3, want: 0x10_0000_0003},
		{name: "Max", ptr: math.MaxUint32, n: math.MaxUint32, want: math.MaxUint64},
		{name: "HighPointer", ptr: 0xfff00000, n: 1, want: 0xfff00000_00000001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, abi.Pack(tc.ptr, tc.n))
			ptr, n := abi.Unpack(tc.want)
			require.Equal(t, tc.ptr, ptr)
			require.Equal(t, tc.n, n)
		})
	}
}

func TestPackOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    abi.Outcome
		n    uint32
	}{
		{name: "Value", o: abi.OutcomeValue, n: 12},
		{name: "Error", o: abi.OutcomeError, n: math.MaxUint32},
		{name: "Timeout", o: abi.OutcomeTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, n := abi.UnpackOutcome(abi.PackOutcome(tc.o, tc.n))
			require.Equal(t, tc.o, o)
			require.Equal(t, tc.n, n)
		})
	}
	require.Equal(t, int64(1)<<32|5, abi.PackOutcome(abi.OutcomeError, 5))
}

func TestStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{name: "StatusOK", got: abi.StatusOK, want: "ok"},
		{name: "StatusError", got: abi.StatusError, want: "error"},
		{name: "StatusSuspended", got: abi.StatusSuspended, want: "suspended"},
		{name: "StatusUnknown", got: abi.Status(9), want: "status(9)"},
		{name: "LevelWarn", got: abi.LevelWarn, want: "warn"},
		{name: "LevelUnknown", got: abi.LogLevel(42), want: "info"},
		{name: "OutcomeTimeout", got: abi.OutcomeTimeout, want: "timeout"},
		{name: "OutcomeUnknown", got: abi.Outcome(7), want: "outcome(7)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.got.String())
		})
	}
}

func TestKindValid(t *testing.T) {
	t.Parallel()
	require.True(t, abi.KindActivity.Valid())
	require.True(t, abi.KindWorkflow.Valid())
	require.False(t, abi.Kind("job").Valid())
	require.False(t, abi.Kind("").Valid())
}

func TestCodeIsAnError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("call: %w", abi.CodeTrap)
	require.ErrorIs(t, err, abi.CodeTrap)
	require.False(t, errors.Is(err, abi.CodeTimeout))
	require.Equal(t, "trap", abi.CodeTrap.Error())
}

func ExamplePack() {
	packed := abi.Pack(0x1000, 42)
	ptr, n := abi.Unpack(packed)
	fmt.Printf("%#x %#x %d\n", packed, ptr, n)
	// Output: 0x10000000002a 0x1000 42
}
