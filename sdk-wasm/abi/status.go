package abi

import "strconv"

// Status is what weft_call returns (docs/abi.md, "weft_call").
type Status int32

// The statuses of a call. Any other value fails the call with
// CodeABIViolation.
const (
	// StatusOK: the function succeeded and called set_output exactly once.
	StatusOK Status = 0
	// StatusError: the function failed with an application error and called
	// set_error exactly once.
	StatusError Status = 1
	// StatusSuspended: a workflow awaited a future the host answered with
	// AwaitSuspended; the workflow unwound and will be replayed when woken.
	StatusSuspended Status = 2
)

// String returns "ok", "error", "suspended" or "status(N)".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusSuspended:
		return "suspended"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Kind is the kind of a guest function, as the manifest declares it.
type Kind string

// The two kinds of function.
const (
	KindActivity Kind = "activity"
	KindWorkflow Kind = "workflow"
)

// Valid reports whether k is KindActivity or KindWorkflow.
func (k Kind) Valid() bool { return k == KindActivity || k == KindWorkflow }

// LogLevel is the level argument of the log import.
type LogLevel int32

// The log levels. A level outside this range is logged at LevelInfo.
const (
	LevelTrace LogLevel = 0
	LevelDebug LogLevel = 1
	LevelInfo  LogLevel = 2
	LevelWarn  LogLevel = 3
	LevelError LogLevel = 4
)

// String returns "trace", "debug", "info", "warn" or "error"; any other
// level reads "info".
func (l LogLevel) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "info"
}

// Outcome is how a workflow future resolved: the high 32 bits of what
// future_result returns.
type Outcome int32

// The outcomes of a future.
const (
	// OutcomeValue: the pending blob is the result Value (an activity
	// result, a signal payload, null for a timer).
	OutcomeValue Outcome = 0
	// OutcomeError: the pending blob is an error Value (an activity that
	// failed for good).
	OutcomeError Outcome = 1
	// OutcomeTimeout: a signal wait reached its timeout; there is no blob.
	OutcomeTimeout Outcome = 2
)

// String returns "value", "error", "timeout" or "outcome(N)".
func (o Outcome) String() string {
	switch o {
	case OutcomeValue:
		return "value"
	case OutcomeError:
		return "error"
	case OutcomeTimeout:
		return "timeout"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}
