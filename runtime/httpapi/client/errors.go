package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrResponseTooLarge is returned when an answer, or one event of a stream,
// is larger than Config.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response too large")

// Error is the error document of a refused request, and the error the
// client returns for it: Status is the HTTP status, Code the API's error
// code. An answer that carries no error document gets the code
// "http_<status>" and its body, trimmed, as the message.
type Error struct {
	// Status is the HTTP status code; it is not part of the document.
	Status  int    `json:"-"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Param names the request member, header or parameter at fault; ""
	// when none is (JSON null).
	Param string `json:"param"`
}

// Error returns "code: message", with the param when one is named.
func (e *Error) Error() string {
	msg := e.Code + ": " + e.Message
	if e.Param != "" {
		msg += " (param " + e.Param + ")"
	}
	return msg
}

// errorJSON is Error as it is written: a missing param is null.
type errorJSON struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// MarshalJSON writes the error document, with "param":null when Param is
// empty.
func (e *Error) MarshalJSON() ([]byte, error) {
	d := errorJSON{Type: e.Type, Code: e.Code, Message: e.Message}
	if e.Param != "" {
		d.Param = &e.Param
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as the server writes every document
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// IsCode reports whether err is an *Error with the given API error code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// DecodeError is an answer that is not the JSON document it should be.
type DecodeError struct {
	// What names the document, e.g. "task".
	What string
	Err  error
}

// Error returns "decode <what>: <cause>".
func (e *DecodeError) Error() string { return "decode " + e.What + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

func errNotTerminal(typ string) error { return fmt.Errorf("event %q is not terminal", typ) }

// maxErrorBody is how much of a refused answer is read.
const maxErrorBody = 1 << 20

// errorOf decodes a non-2xx answer.
func errorOf(status int, body []byte) *Error {
	var doc ErrorBody
	if json.Unmarshal(body, &doc) == nil && doc.Error != nil && doc.Error.Code != "" {
		doc.Error.Status = status
		return doc.Error
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return &Error{Status: status, Code: "http_" + strconv.Itoa(status), Message: msg}
}
