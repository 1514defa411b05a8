package host

import (
	"errors"
	"fmt"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// Error is a failure of a call or a compile on the host side, as opposed to
// an application error the guest returned (CallResult.Error). Code is one of
// the abi.Code constants; Message says what happened in words a plugin
// author understands; Err is the underlying cause (a wazero error, a codec
// error, or the error of an embedder's hook), if any.
//
// errors.Is(err, abi.CodeTrap) reports whether err carries that code, and
// errors.As reaches Err: a codec error's code or a hook's own error type.
type Error struct {
	// Code is the failure code.
	Code abi.Code
	// Message explains the failure.
	Message string
	// Err is the cause, or nil.
	Err error
}

// Error returns "<code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(abi.Code)
	return ok && c == e.Code
}

// ErrorCode returns the abi.Code of the first *Error in err's chain, or ""
// when there is none.
func ErrorCode(err error) abi.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(code abi.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func wrapf(code abi.Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...) + ": " + err.Error(), Err: err}
}

// ErrClosed is the error of every call and compile after Close.
var ErrClosed = &Error{Code: abi.CodeHostClosed, Message: "the plugin host is closed"}
