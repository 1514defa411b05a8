package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestParseActivityOptionsTimeouts: the timeout keys of schedule_activity's
// options are non-negative longs of at most abi.MaxTimeoutMS; anything
// else is bad_blob naming the key.
func TestParseActivityOptionsTimeouts(t *testing.T) {
	t.Parallel()
	frame := func(t *testing.T, entries ...codec.Entry) []byte {
		t.Helper()
		f, err := codec.EncodeFrame(codec.Map(entries...))
		require.NoError(t, err)
		return f
	}
	o, perr := parseActivityOptions(frame(t,
		codec.Entry{Key: abi.OptionTimeoutMS, Value: codec.Long(1000)},
		codec.Entry{Key: abi.OptionScheduleToStartTimeoutMS, Value: codec.Long(2000)},
		codec.Entry{Key: abi.OptionHeartbeatTimeoutMS, Value: codec.Long(abi.MaxTimeoutMS)},
	), codec.DefaultLimits)
	require.Nil(t, perr)
	require.Equal(t, ActivityOptions{
		Timeout: time.Second, ScheduleToStartTimeout: 2 * time.Second, HeartbeatTimeout: abi.MaxTimeoutMS * time.Millisecond,
	}, o)

	tests := []struct {
		name  string
		key   string
		value codec.Value
	}{
		{"NegativeScheduleToStart", abi.OptionScheduleToStartTimeoutMS, codec.Long(-1)},
		{"HugeHeartbeat", abi.OptionHeartbeatTimeoutMS, codec.Long(abi.MaxTimeoutMS + 1)},
		{"StringHeartbeat", abi.OptionHeartbeatTimeoutMS, codec.String("10")},
		{"DoubleScheduleToStart", abi.OptionScheduleToStartTimeoutMS, codec.Double(1.5)},
	}
	for _, tc := range tests {
		_, perr := parseActivityOptions(frame(t, codec.Entry{Key: tc.key, Value: tc.value}), codec.DefaultLimits)
		require.NotNil(t, perr, tc.name)
		require.Equal(t, abi.CodeBadBlob, perr.Code, tc.name)
		require.Contains(t, perr.Message, tc.key, tc.name)
	}
}
