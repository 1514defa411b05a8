package codec

import (
	"errors"
	"fmt"
)

// Code is a stable, snake_case error code of the Avro Value protocol
// (reference §4.1). Every codec error message starts with its code, as
// "<code>: <explanation>", the way the SDKs write them.
//
// Code implements error, so a code can be matched with errors.Is:
//
//	errors.Is(err, codec.CodeInvalidPayloadFraming)
type Code string

// The error codes of the Avro Value protocol (BRIEF §3.1, reference §4.1),
// plus the limit and projection codes of this package.
const (
	// CodeUnsupportedPayloadCodec: the codec tag is not exactly "avro"
	// (json, unknown, empty, wrong case, missing, null or not a string), or
	// the blob holds raw JSON instead of an Avro frame. The tag is checked
	// before any decoding.
	CodeUnsupportedPayloadCodec Code = "unsupported_payload_codec"
	// CodeUnsupportedPayloadSchema: the frame's fingerprint is not the one of
	// schema v1 (e2a33dff55802237).
	CodeUnsupportedPayloadSchema Code = "unsupported_payload_schema"
	// CodeInvalidPayloadFraming: bad base64, a frame shorter than its header,
	// no C3 01 magic, or a truncated or malformed datum (bad union index,
	// boolean byte, overlong or overflowing long, non-finite double, invalid
	// UTF-8, trailing bytes). Also a string that is not UTF-8 on encode.
	CodeInvalidPayloadFraming Code = "invalid_payload_framing"
	// CodeInvalidPayloadEnvelope: the envelope is not a JSON object with
	// both "codec" and "blob" as strings.
	CodeInvalidPayloadEnvelope Code = "invalid_payload_envelope"
	// CodeInvalidMapKey: a map key that cannot be written: not UTF-8 on
	// encode, or a duplicate or reserved ("$"-prefixed) key in a plain JSON
	// object of the projection.
	CodeInvalidMapKey Code = "invalid_map_key"
	// CodeIntegerOverflow: an integer outside the signed 64-bit range.
	CodeIntegerOverflow Code = "integer_overflow"
	// CodeNonFiniteFloat: NaN or an infinity where a finite double is needed.
	CodeNonFiniteFloat Code = "non_finite_float"
	// CodePayloadLimit: a value nested deeper than Limits.MaxDepth, or a
	// frame larger than Limits.MaxSize.
	CodePayloadLimit Code = "payload_limit_exceeded"
	// CodeInvalidProjection: text that is not a valid typed JSON projection
	// (malformed JSON, trailing data, or a bad {"$type":…} object).
	CodeInvalidProjection Code = "invalid_projection"
)

// Error returns the code itself.
func (c Code) Error() string { return string(c) }

// Sentinel errors, one per code. Each is the Code itself, so
// errors.Is(err, codec.ErrUnsupportedSchema) and
// errors.Is(err, codec.CodeUnsupportedPayloadSchema) are the same test.
var (
	// ErrUnsupportedCodec matches errors with CodeUnsupportedPayloadCodec.
	ErrUnsupportedCodec error = CodeUnsupportedPayloadCodec
	// ErrUnsupportedSchema matches errors with CodeUnsupportedPayloadSchema.
	ErrUnsupportedSchema error = CodeUnsupportedPayloadSchema
	// ErrInvalidFraming matches errors with CodeInvalidPayloadFraming.
	ErrInvalidFraming error = CodeInvalidPayloadFraming
	// ErrInvalidEnvelope matches errors with CodeInvalidPayloadEnvelope.
	ErrInvalidEnvelope error = CodeInvalidPayloadEnvelope
	// ErrInvalidMapKey matches errors with CodeInvalidMapKey.
	ErrInvalidMapKey error = CodeInvalidMapKey
	// ErrIntegerOverflow matches errors with CodeIntegerOverflow.
	ErrIntegerOverflow error = CodeIntegerOverflow
	// ErrNonFiniteFloat matches errors with CodeNonFiniteFloat.
	ErrNonFiniteFloat error = CodeNonFiniteFloat
	// ErrPayloadLimit matches errors with CodePayloadLimit.
	ErrPayloadLimit error = CodePayloadLimit
	// ErrInvalidProjection matches errors with CodeInvalidProjection.
	ErrInvalidProjection error = CodeInvalidProjection
)

// Error is a codec error: a stable Code and a human-readable explanation.
// Its text is "<code>: <message>" (reference §4.1). It unwraps to its Code,
// so errors.Is(err, code) reports whether err carries that code.
type Error struct {
	Code    Code
	Message string
}

// Error returns "<code>: <message>".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the error's Code.
func (e *Error) Unwrap() error { return e.Code }

// ErrorCode returns the code of the first codec error in err's chain (an
// *Error or a bare Code), or "" if there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return ""
}

// errorf returns an *Error with code and a formatted message.
func errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// codecHelp is the explanation every unsupported_payload_codec error ends
// with, in the SDKs' wording (reference §4.1).
const codecHelp = `is not supported by Durable Workflow 2.0; use codec="avro" with the fixed Avro Value schema and single-object framing. JSON remains the HTTP document transport, not a workflow payload codec.`

// unsupportedCodec returns the unsupported_payload_codec error for a codec
// tag described by desc: a quoted string, "(missing)", or raw JSON.
func unsupportedCodec(desc string) error {
	return &Error{Code: CodeUnsupportedPayloadCodec, Message: "workflow payload codec " + desc + " " + codecHelp}
}
