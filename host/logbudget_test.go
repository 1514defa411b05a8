package host

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// admitted counts how many of n lines of size bytes s admits at now.
func admitted(s *logScope, l LogLimits, m *moduleLogs, now time.Time, n, size int) int {
	k := 0
	for range n {
		if s.admit(l, m, now, size) {
			k++
		}
	}
	return k
}

// TestLogScopeBuckets checks the budgets of one call: half the module's
// line burst at once, the rate's share after a second, the hard cap per
// call, and a byte bucket that stops long lines before the line bucket.
func TestLogScopeBuckets(t *testing.T) {
	l, err := LogLimits{Rate: 10, Burst: 100, ByteRate: 1 << 20, ByteBurst: 1 << 20, CallLines: 130}.withDefaults()
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	m := newModuleLogs(l)
	var s logScope
	s.begin(l, now)
	require.Equal(t, 50, admitted(&s, l, m, now, 1000, 10), "a call gets half the module's burst")
	require.Equal(t, 950, s.droppedLines)
	require.Equal(t, int64(9500), s.droppedBytes)
	require.Equal(t, 5, admitted(&s, l, m, now.Add(time.Second), 1000, 10), "and half its rate")

	// Other calls of the module share the module's bucket: 100 - 50 + 10
	// - 5 = 55 lines are left, 50 for a second call, 5 for a third.
	var s2, s3 logScope
	s2.begin(l, now)
	s3.begin(l, now)
	require.Equal(t, 50, admitted(&s2, l, m, now.Add(time.Second), 1000, 10))
	require.Equal(t, 5, admitted(&s3, l, m, now.Add(time.Second), 1000, 10))

	// The hard cap holds whatever the rates.
	l.Rate, l.Burst = 1e9, 1e9
	m = newModuleLogs(l)
	s.begin(l, now)
	require.Equal(t, 130, admitted(&s, l, m, now, 1000, 10))
	require.Equal(t, 0, admitted(&s, l, m, now.Add(time.Hour), 1000, 10), "the cap does not refill")

	// Bytes: lines of MaxLine bytes against a byte burst of 64 KiB, half
	// of it for the call.
	l, err = LogLimits{ByteBurst: 64 << 10, ByteRate: 1, MaxLine: 4096}.withDefaults()
	require.NoError(t, err)
	m = newModuleLogs(l)
	s.begin(l, now)
	require.Equal(t, 8, admitted(&s, l, m, now, 100, 1<<20), "a long line spends MaxLine bytes")
	require.Equal(t, int64(92<<20), s.droppedBytes, "dropped bytes count the whole lines")
}

// TestLogScopeReport checks when a scope reports what it dropped.
func TestLogScopeReport(t *testing.T) {
	l, err := LogLimits{Rate: 1, Burst: 2}.withDefaults()
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	m := newModuleLogs(l)
	var s logScope
	s.begin(l, now)
	require.False(t, s.due(l, now, true), "nothing dropped, nothing to say")
	admitted(&s, l, m, now, 5, 1)
	require.False(t, s.due(l, now.Add(time.Second), false))
	require.True(t, s.due(l, now.Add(l.ReportEvery), false))
	require.True(t, s.due(l, now, true))
	lines, bytes := s.take(now)
	require.Equal(t, 4, lines)
	require.Equal(t, int64(4), bytes)
	require.False(t, s.due(l, now, true))
}

// TestCutLine checks that a cut line stays valid UTF-8 within its bound.
func TestCutLine(t *testing.T) {
	require.Equal(t, "short", cutLine("short", 64))
	long := strings.Repeat("é", 100) // 200 bytes
	for n := 64; n < 80; n++ {
		got := cutLine(long, n)
		require.LessOrEqual(t, len(got), n)
		require.True(t, utf8.ValidString(got))
		require.True(t, strings.HasSuffix(got, "…(cut)"))
	}
}

// TestLogLimitsDefaults checks the defaults and the refusal of negative
// limits.
func TestLogLimitsDefaults(t *testing.T) {
	l, err := LogLimits{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, LogLimits{
		Rate: DefaultLogRate, Burst: DefaultLogBurst, ByteRate: DefaultLogByteRate,
		ByteBurst: DefaultLogByteBurst, CallLines: DefaultLogCallLines, MaxLine: DefaultLogMaxLine, ReportEvery: defaultLogReport,
	}, l)
	_, err = LogLimits{Rate: -1}.withDefaults()
	require.Error(t, err)
}
