package runtime

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
//	errors.Is(err, runtime.CodeNotFound)
//
// reports whether err carries that code. The mapping from code to HTTP status
// lives only in runtime/httpapi.
type Code string

// The error codes of the engine. Codec errors keep their own codes
// (unsupported_payload_codec, invalid_payload_framing, …; see ErrorCode), and
// plugin failures reported by an Executor carry the codes below from CodeTrap
// on.
const (
	// CodeInvalid: the request is malformed or breaks a rule (a missing
	// field, an unknown on_restart policy, a bad name).
	CodeInvalid Code = "invalid_request"
	// CodeNotFound: the object does not exist, or belongs to another client.
	CodeNotFound Code = "not_found"
	// CodeConflict: the object is not in a state that allows the operation.
	CodeConflict Code = "conflict"
	// CodeInternal: an unexpected failure; its details are logged, never
	// shown.
	CodeInternal Code = "internal"
	// CodeUnavailable: the engine is not open, or is shutting down.
	CodeUnavailable Code = "unavailable"

	// CodeMissingCredential: the request carries no bearer token.
	CodeMissingCredential Code = "missing_credential"
	// CodeInvalidCredential: the token is unknown, malformed or revoked.
	CodeInvalidCredential Code = "invalid_credential"
	// CodeInsufficientScope: the token lacks the scope the operation needs.
	CodeInsufficientScope Code = "insufficient_scope"
	// CodeRateLimited: too many attempts in a short time (pairing).
	CodeRateLimited Code = "rate_limited"
	// CodePairingExpired: the pairing code is past its expiry.
	CodePairingExpired Code = "pairing_code_expired"
	// CodePairingUsed: the pairing code was already redeemed.
	CodePairingUsed Code = "pairing_code_used"

	// CodeIdempotencyKeyReused: the idempotency key was first used with a
	// different request.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	// CodeIdempotencyKeyInFlight: the first request with the idempotency key
	// is still running.
	CodeIdempotencyKeyInFlight Code = "idempotency_key_in_flight"

	// CodeServerRestarted: the task was unfinished when the server stopped
	// and its policy is fail (persistence §11.3).
	CodeServerRestarted Code = store.CodeServerRestarted
	// CodeTaskNotFinished: the task has no response yet.
	CodeTaskNotFinished Code = "task_not_finished"
	// CodeSignalTargetFinished: a signal was sent to a finished task.
	CodeSignalTargetFinished Code = "signal_target_finished"
	// CodeModuleNotFound: no module of that name is deployed, or its file is
	// missing.
	CodeModuleNotFound Code = "module_not_found"
	// CodeFunctionNotFound: the module exports no function of that name.
	CodeFunctionNotFound Code = "function_not_found"
	// CodeModuleInvalid: the module is not valid WebAssembly, lacks the ABI
	// exports, or has a bad manifest.
	CodeModuleInvalid Code = "module_invalid"
	// CodePayloadTooLarge: a request body or payload exceeds its limit.
	CodePayloadTooLarge Code = "payload_too_large"
	// CodeNondeterminism: a workflow asked for something other than what its
	// journal recorded at the same step.
	CodeNondeterminism Code = "nondeterminism"
	// CodeReplayDivergence: a deploy with the replay check found running
	// workflows whose journals the new module version would not replay.
	CodeReplayDivergence Code = "replay_divergence"

	// CodeTimeout: an attempt or the whole task ran out of time.
	CodeTimeout Code = "timeout"
	// CodeCancelled: the call was cancelled.
	CodeCancelled Code = "cancelled"
	// CodeTrap: the plugin trapped (unreachable, out-of-bounds access, a
	// guest panic).
	CodeTrap Code = "trap"
	// CodeMemoryLimit: the plugin grew past its memory limit.
	CodeMemoryLimit Code = "memory_limit"
	// CodeApplication: the plugin returned an application error; the task
	// error's type field holds the plugin's own error type.
	CodeApplication Code = "application_error"

	// CodeMemoryLimitTooHigh: a task asked for a memory limit above the
	// client's ceiling, or above the daemon's whole memory budget.
	CodeMemoryLimitTooHigh Code = "memory_limit_too_high"
	// CodeSignalLimitExceeded: the workflow holds as many pending signals
	// (or bytes of them) as it may; retry once it consumed some.
	CodeSignalLimitExceeded Code = "signal_limit_exceeded"
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

// Is reports whether target is e's Code, so errors.Is(err, CodeNotFound)
// matches an *Error with that code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// paramErrorf returns an invalid_request *Error naming the field param.
func paramErrorf(param, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the API-visible code of err: the Code of the first
// *Error or Code in its chain, the code of a codec error, CodeTimeout or
// CodeCancelled for the context errors, CodeNotFound for store.ErrNotFound,
// and CodeInternal for anything else. A nil err has no code ("").
func ErrorCode(err error) Code {
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
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	case errors.Is(err, store.ErrNotFound):
		return CodeNotFound
	}
	return CodeInternal
}

// ErrorMessage returns a message for err that is safe to show to clients:
// the Message of an *Error, the text of a codec error, the code's text for a
// bare Code, and "internal error" for anything whose code is internal, so
// paths, SQL and stack details never leak.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Code == CodeInternal && e.Message == "" {
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
	switch code := ErrorCode(err); code {
	case CodeInternal:
		return "internal error"
	case CodeTimeout:
		return "deadline exceeded"
	case CodeCancelled:
		return "cancelled"
	case CodeNotFound:
		return "not found"
	default:
		return string(code)
	}
}

// ErrorParam returns the Param of the first *Error in err's chain, or "".
func ErrorParam(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Param
	}
	return ""
}

// Sentinel errors of package runtime. Each is also reachable by its code
// through ErrorCode.
var (
	// ErrClosed is returned by operations on an engine that is not open.
	ErrClosed = &Error{Code: CodeUnavailable, Message: "engine is not running"}
)
