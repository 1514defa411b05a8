package access

import (
	"sync"
	"time"
)

// rateLimiter is a token bucket: rate tokens per period, holding at most
// rate.
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64
	period time.Duration
	tokens float64
	last   time.Time
}

func newRateLimiter(rate int, period time.Duration) *rateLimiter {
	return &rateLimiter{rate: float64(rate), period: period, tokens: float64(rate)}
}

// allow takes a token at time now, and reports whether there was one;
// without one, it also returns how long until the next one, at least a
// second.
func (l *rateLimiter) allow(now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.rate, l.tokens+l.rate*float64(now.Sub(l.last))/float64(l.period))
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens < 1 {
		wait := time.Duration((1 - l.tokens) * float64(l.period) / l.rate)
		return false, max(wait, time.Second)
	}
	l.tokens--
	return true, 0
}
