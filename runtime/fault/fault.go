package fault

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// Code is an API-visible error code: a stable snake_case string that clients
// match on (house style rule 10). Code implements error, so
//
//	errors.Is(err, fault.NotFound)
//
// reports whether err carries that code. The mapping from code to HTTP status
// lives only in runtime/httpapi.
type Code string

// The error codes of the engine. Codec errors keep their own codes
// (unsupported_payload_codec, invalid_payload_framing, …; see CodeOf), and
// plugin failures reported by an Executor carry the codes below from Trap
// on.
const (
	// Invalid: the request is malformed or breaks a rule (a missing
	// field, an unknown on_restart policy, a bad name).
	Invalid Code = "invalid_request"
	// NotFound: the object does not exist, or belongs to another client.
	NotFound Code = "not_found"
	// Conflict: the object is not in a state that allows the operation.
	Conflict Code = "conflict"
	// Internal: an unexpected failure; its details are logged, never
	// shown.
	Internal Code = "internal"
	// Unavailable: the engine is not open, or is shutting down.
	Unavailable Code = "unavailable"

	// MissingCredential: the request carries no bearer token.
	MissingCredential Code = "missing_credential"
	// InvalidCredential: the token is unknown, malformed or revoked.
	InvalidCredential Code = "invalid_credential"
	// InsufficientScope: the token lacks the scope the operation needs.
	InsufficientScope Code = "insufficient_scope"
	// RateLimited: too many attempts in a short time (pairing).
	RateLimited Code = "rate_limited"
	// PairingExpired: the pairing code is past its expiry.
	PairingExpired Code = "pairing_code_expired"
	// PairingUsed: the pairing code was already redeemed.
	PairingUsed Code = "pairing_code_used"

	// IdempotencyKeyReused: the idempotency key was first used with a
	// different request.
	IdempotencyKeyReused Code = "idempotency_key_reused"
	// IdempotencyKeyInFlight: the first request with the idempotency key
	// is still running.
	IdempotencyKeyInFlight Code = "idempotency_key_in_flight"

	// ServerRestarted: the task was unfinished when the server stopped
	// and its policy is fail (persistence §11.3).
	ServerRestarted Code = store.CodeServerRestarted
	// TaskNotFinished: the task has no response yet.
	TaskNotFinished Code = "task_not_finished"
	// SignalTargetFinished: a signal was sent to a finished task.
	SignalTargetFinished Code = "signal_target_finished"
	// ModuleNotFound: no module of that name is deployed, or its file is
	// missing.
	ModuleNotFound Code = "module_not_found"
	// FunctionNotFound: the module exports no function of that name.
	FunctionNotFound Code = "function_not_found"
	// ModuleInvalid: the module is not valid WebAssembly, lacks the ABI
	// exports, or has a bad manifest.
	ModuleInvalid Code = "module_invalid"
	// PayloadTooLarge: a request body or payload exceeds its limit.
	PayloadTooLarge Code = "payload_too_large"
	// Nondeterminism: a workflow asked for something other than what its
	// journal recorded at the same step.
	Nondeterminism Code = "nondeterminism"
	// ReplayDivergence: a deploy with the replay check found running
	// workflows whose journals the new module version would not replay.
	ReplayDivergence Code = "replay_divergence"

	// Timeout: an attempt or the whole task ran out of time.
	Timeout Code = "timeout"
	// Cancelled: the call was cancelled.
	Cancelled Code = "cancelled"
	// Trap: the plugin trapped (unreachable, out-of-bounds access, a
	// guest panic).
	Trap Code = "trap"
	// MemoryLimit: the plugin grew past its memory limit.
	MemoryLimit Code = "memory_limit"
	// Application: the plugin returned an application error; the task
	// error's type field holds the plugin's own error type.
	Application Code = "application_error"
	// ExecutionTimeout: a workflow outlived its execution timeout, across
	// all its attempts and its waits; never retried.
	ExecutionTimeout Code = "execution_timeout"
	// RunTimeout: one attempt of a workflow outlived its run timeout, its
	// waits included; retried as its retry policy allows.
	RunTimeout Code = "run_timeout"
	// ScheduleToStartTimeout: a task stayed queued past its
	// schedule-to-start timeout without a worker taking it; never retried.
	ScheduleToStartTimeout Code = "schedule_to_start_timeout"
	// HeartbeatTimeout: an activity's attempt went longer than its
	// heartbeat timeout without a heartbeat and was stopped; retried as
	// its retry policy allows.
	HeartbeatTimeout Code = "heartbeat_timeout"

	// MemoryLimitTooHigh: a task asked for a memory limit above the
	// client's ceiling, or above the daemon's whole memory budget.
	MemoryLimitTooHigh Code = "memory_limit_too_high"
	// SignalLimitExceeded: the workflow holds as many pending signals
	// (or bytes of them) as it may; retry once it consumed some.
	SignalLimitExceeded Code = "signal_limit_exceeded"

	// HistoryLimitExceeded: a workflow's log would grow past the engine's
	// limit (Config.MaxHistoryEvents); never retried.
	HistoryLimitExceeded Code = "history_limit_exceeded"
	// WorkflowIDInUse: an open run of the caller already holds the
	// workflow id.
	WorkflowIDInUse Code = "workflow_id_in_use"
	// WorkflowIDReuseRefused: the workflow id's latest run ended in a way
	// the reuse policy does not let a new run follow.
	WorkflowIDReuseRefused Code = "workflow_id_reuse_refused"

	// QueryNotSupported: the task cannot answer queries: it is an
	// activity, or its workflow registered no query handler by the point
	// its replay reached.
	QueryNotSupported Code = "query_not_supported"
	// QueryNotFound: the workflow has no query handler of that name.
	QueryNotFound Code = "query_not_found"
	// QueryCommand: the query handler called a workflow command (an
	// activity, a timer, a signal wait, an await); a query only reads.
	QueryCommand Code = "query_command"
	// QueryFailed: the query handler returned an error, or the replay
	// that answers the query failed.
	QueryFailed Code = "query_failed"
	// QueryLimitExceeded: as many queries run as the engine allows;
	// retry after the Retry-After delay.
	QueryLimitExceeded Code = "query_limit_exceeded"

	// ScheduleExists: the caller already has a schedule of that id.
	ScheduleExists Code = "schedule_exists"
	// ScheduleLimitExceeded: the caller has as many schedules as the
	// daemon allows a client.
	ScheduleLimitExceeded Code = "schedule_limit_exceeded"
	// ScheduleOverlap: a trigger the overlap policy refuses (skip) while
	// a run of the schedule is open.
	ScheduleOverlap Code = "schedule_overlap"
)

// Error returns the code itself.
func (c Code) Error() string { return string(c) }

// Error is an error with an API-visible Code. Message is safe to show to
// clients; Err, when set, is the underlying cause, logged but never shown.
type Error struct {
	// Code is the API-visible code.
	Code Code
	// Message explains the error to people.
	Message string
	// Param names the request field at fault, when there is one.
	Param string
	// Err is the underlying cause, or nil.
	Err error
}

// Error returns "<code>: <message>", followed by the cause when there is one.
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's Code, so errors.Is(err, NotFound)
// matches an *Error with that code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ParamErrorf returns an invalid_request *Error naming the field param.
func ParamErrorf(param, format string, args ...any) *Error {
	return &Error{Code: Invalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the API-visible code of err: the Code of the first
// *Error or Code in its chain, the code of a codec error, Timeout or
// Cancelled for the context errors, NotFound for store.ErrNotFound,
// and Internal for anything else. A nil err has no code ("").
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	if cc := codec.ErrorCode(err); cc != "" {
		return Code(cc)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	case errors.Is(err, context.Canceled):
		return Cancelled
	case errors.Is(err, store.ErrNotFound):
		return NotFound
	}
	return Internal
}

// Message returns a message for err that is safe to show to clients:
// the Message of an *Error, the text of a codec error, the code's text for a
// bare Code, and "internal error" for anything whose code is internal, so
// paths, SQL and stack details never leak.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Code == Internal && e.Message == "" {
			return "internal error"
		}
		if e.Message != "" {
			return e.Message
		}
		return string(e.Code)
	}
	var ce *codec.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	switch code := CodeOf(err); code {
	case Internal:
		return "internal error"
	case Timeout:
		return "deadline exceeded"
	case Cancelled:
		return "cancelled"
	case NotFound:
		return "not found"
	default:
		return string(code)
	}
}

// Param returns the Param of the first *Error in err's chain, or "".
func Param(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Param
	}
	return ""
}

// Wrap returns err as an Internal *Error whose cause names op: the message
// shown to clients stays generic, the cause is kept for the logs. An err
// that already carries an *Error is returned as it is; a nil err stays nil.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: Internal, Err: fmt.Errorf("%s: %w", op, err)}
}
