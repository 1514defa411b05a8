package fault

import (
	"errors"
	"time"
)

// RetryAfter is the cause of an error that the caller may retry once the
// delay has passed, such as RateLimited and IdempotencyKeyInFlight. The HTTP
// API sends it as the Retry-After header.
type RetryAfter time.Duration

// Error returns "retry after <delay>".
func (d RetryAfter) Error() string { return "retry after " + time.Duration(d).String() }

// RetryAfterOf returns the delay err asks the caller to wait before a
// retry, 0 when it names none.
func RetryAfterOf(err error) time.Duration {
	var d RetryAfter
	if errors.As(err, &d) {
		return time.Duration(d)
	}
	return 0
}
