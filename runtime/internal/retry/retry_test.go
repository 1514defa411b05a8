package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		policy  store.RetryPolicy
		attempt int
		want    time.Duration // before jitter
	}{
		{name: "first retry waits the initial interval", policy: store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2}, attempt: 1, want: time.Second},
		{name: "exponential", policy: store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2}, attempt: 4, want: 8 * time.Second},
		{name: "coefficient 1 is constant", policy: store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1}, attempt: 9, want: time.Second},
		{name: "capped", policy: store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 3, MaximumInterval: 5 * time.Second}, attempt: 6, want: 5 * time.Second},
		{name: "defaults", policy: store.RetryPolicy{}, attempt: 2, want: 2 * time.Second},
		{name: "default cap is 100 times the initial interval", policy: store.RetryPolicy{InitialInterval: time.Millisecond}, attempt: 30, want: 100 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ceiling := tc.policy.MaximumInterval
			if ceiling == 0 {
				ceiling = time.Hour
			}
			lo := time.Duration(float64(tc.want) * (1 - Jitter))
			hi := min(time.Duration(float64(tc.want)*(1+Jitter)), max(ceiling, tc.want))
			if tc.name == "default cap is 100 times the initial interval" {
				hi = tc.want
			}
			seen := map[time.Duration]bool{}
			for range 200 {
				d := Backoff(tc.policy, tc.attempt)
				require.GreaterOrEqual(t, d, lo)
				require.LessOrEqual(t, d, hi)
				seen[d] = true
			}
			require.Greater(t, len(seen), 1, "backoff has jitter")
		})
	}
}

func TestNextAttempt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3}
	tests := []struct {
		name     string
		policy   store.RetryPolicy
		attempt  int
		deadline time.Time
		ok       bool
	}{
		{name: "zero policy is one attempt", policy: store.RetryPolicy{}, attempt: 1, ok: false},
		{name: "attempts left", policy: p, attempt: 2, ok: true},
		{name: "attempts used up", policy: p, attempt: 3, ok: false},
		{name: "deadline far", policy: p, attempt: 1, deadline: now.Add(time.Hour), ok: true},
		{name: "next attempt past deadline", policy: p, attempt: 1, deadline: now.Add(500 * time.Millisecond), ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at, ok := Next(tc.policy, tc.attempt, now, tc.deadline)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.True(t, at.After(now))
			}
		})
	}
}

func TestRetryableCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code fault.Code
		want bool
	}{
		{fault.Trap, true},
		{fault.Timeout, true},
		{fault.MemoryLimit, true},
		{fault.Internal, true},
		{fault.FunctionNotFound, false},
		{fault.ModuleNotFound, false},
		{fault.ModuleInvalid, false},
		{fault.Code("invalid_payload_framing"), false},
		{fault.Cancelled, false},
		{fault.Code("exited"), true},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			require.Equal(t, tc.want, RetryableCode(tc.code))
		})
	}
}
