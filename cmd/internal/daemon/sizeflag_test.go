package daemon

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestSizeFlag(t *testing.T) {
	var big int64
	var small int
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	SizeVar(f, &big, "big", 64<<20, "")
	SizeVar(f, &small, "small", 4096, "")
	require.Equal(t, "64MiB", f.Lookup("big").DefValue)
	require.Equal(t, "4KiB", f.Lookup("small").DefValue)

	for in, want := range map[string]int64{
		"8GiB": 8 << 30, "8G": 8 << 30, "512KiB": 512 << 10, "3MB": 3e6, "1000": 1000, "0": 0, " 2 MiB ": 2 << 20, "7B": 7,
	} {
		require.NoError(t, f.Set("big", in), in)
		require.Equal(t, want, big, in)
	}
	for _, bad := range []string{"lots", "-1", "1.5GiB", "GiB", "", "9223372036854775807GiB"} {
		require.Error(t, f.Set("big", bad), bad)
	}
	require.NoError(t, f.Set("small", "1MiB"))
	require.Equal(t, 1<<20, small)
	require.Equal(t, "1MiB", f.Lookup("small").Value.String())
	require.Equal(t, "1000", formatSize(1000))
}
