// Package retry is the arithmetic of an activity's retry policy
// (store.RetryPolicy): the exponential backoff with jitter, when the next
// attempt may start within the attempts and the total timeout, which
// failures are never retried, and the validation of a policy from a
// request. It holds no state and does no I/O.
package retry
