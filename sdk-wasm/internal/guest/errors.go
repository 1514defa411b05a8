package guest

import (
	"errors"
	"fmt"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// ApplicationError is a typed error a function returns, or a workflow
// receives from an activity. Type is a stable name that retry policies
// match (for example "card_declined"); NonRetryable ends retries at once.
// It crosses the ABI as the error Value {type, message, non_retryable,
// details} (docs/abi.md, "Error value").
type ApplicationError struct {
	// Type is the error's stable name. Required; "error" when empty.
	Type string
	// Message is the human-readable text.
	Message string
	// NonRetryable stops any retry policy from trying again.
	NonRetryable bool
	// Details is any Value attached to the error; null when unset.
	Details codec.Value
}

// Error returns "type: message".
func (e *ApplicationError) Error() string {
	if e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

// Value returns the error Value of e.
func (e *ApplicationError) Value() codec.Value {
	typ := e.Type
	if typ == "" {
		typ = "error"
	}
	entries := []codec.Entry{
		{Key: abi.ErrorType, Value: codec.String(typ)},
		{Key: abi.ErrorMessage, Value: codec.String(e.Message)},
		{Key: abi.ErrorNonRetryable, Value: codec.Bool(e.NonRetryable)},
	}
	if !e.Details.IsNull() {
		entries = append(entries, codec.Entry{Key: abi.ErrorDetails, Value: e.Details})
	}
	return codec.Map(entries...)
}

// ErrorFromValue reads an error Value back into an ApplicationError.
func ErrorFromValue(v codec.Value) (*ApplicationError, error) {
	if v.Kind() != codec.KindMap {
		return nil, fmt.Errorf("error value is a %s, not a map", v.Kind())
	}
	e := &ApplicationError{}
	t, _ := v.Get(abi.ErrorType)
	typ, ok := t.AsString()
	if !ok || typ == "" {
		return nil, errors.New("error value has no string field type")
	}
	e.Type = typ
	if m, ok := v.Get(abi.ErrorMessage); ok {
		e.Message, _ = m.AsString()
	}
	if nr, ok := v.Get(abi.ErrorNonRetryable); ok {
		e.NonRetryable, _ = nr.AsBool()
	}
	e.Details, _ = v.Get(abi.ErrorDetails)
	return e, nil
}

// AsApplicationError returns err as an ApplicationError: the one it wraps,
// or a retryable one of type "error" carrying err's text.
func AsApplicationError(err error) *ApplicationError {
	var ae *ApplicationError
	if errors.As(err, &ae) {
		return ae
	}
	return &ApplicationError{Type: "error", Message: err.Error()}
}
