package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/weft-run/weft/runtime/fault"
)

// writeJSON writes v as the JSON body of a response with the given status.
// It is the only place that encodes a response body.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		s.log.Error("encode response", "error", err)
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"type":"server_error","code":"internal","message":"Internal Server Error","param":null}}` + "\n")
	}
	writeBody(w, status, body)
}

// encodeJSON returns the bytes writeJSON sends for v.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a JSON API, never embedded in HTML
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeBody writes an encoded JSON body with the given status.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readBody reads the whole request body. The body is already bounded by
// limitBody; going past the bound is payload_too_large (413).
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errorf(fault.PayloadTooLarge, "", "request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, errorf(fault.Invalid, "", "read request body: %v", err)
	}
	return data, nil
}

// decodeJSON decodes the request body into dst, strictly: the body must be one
// JSON object with only known fields, named exactly (case-sensitive) and
// once each, of the right types, and nothing after it. Every failure is invalid_request (400) with param naming the field where
// one is at fault, or payload_too_large (413). The Content-Type header is not
// checked: a client that sends JSON without it is served all the same.
func decodeJSON(r *http.Request, dst any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeStrict(data, dst)
}

// decodeStrict is decodeJSON over bytes already read.
func decodeStrict(data []byte, dst any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errorf(fault.Invalid, "", "request body is empty: expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(data, dst, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(fault.Invalid, "", "malformed JSON: unexpected data after the JSON object")
	}
	return checkMemberNames(data, reflect.TypeOf(dst))
}

// jsonError turns an encoding/json error into an API error.
func jsonError(data []byte, dst any, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return errorf(fault.Invalid, "", "malformed JSON at byte %d: %s", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(fault.Invalid, "", "malformed JSON: unexpected end of input")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errorf(fault.Invalid, "", "request body must be a JSON object, not %s", jsonKind(typ.Value))
		}
		return errorf(fault.Invalid, typ.Field, "%s must be %s, not %s", typ.Field, jsonTypeName(typ.Type), jsonKind(typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if path := unknownField(data, reflect.TypeOf(dst)); path != "" {
			name = path
		}
		return errorf(fault.Invalid, name, "unknown field %s", name)
	default:
		return errorf(fault.Invalid, "", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// jsonKind names the JSON kind encoding/json reports in UnmarshalTypeError.Value.
func jsonKind(v string) string {
	switch {
	case v == "bool":
		return "a boolean"
	case v == "array" || v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number"):
		return "a number"
	default:
		return "a " + v
	}
}

// jsonTypeName names the JSON kind that a Go type is decoded from.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// unknownField returns the dotted path of the first object member in data
// that type t has no field for, "" if there is none. encoding/json names only
// the member, not where it sits; this walk finds "retry.max_tries" as well as
// "modul".
func unknownField(data []byte, t reflect.Type) string {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return ""
	}
	return unknownIn(v, t, "")
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func unknownIn(v any, t reflect.Type, prefix string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		return ""
	}
	switch val := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			for name, member := range val {
				f, ok := fieldByJSONName(t, name)
				if !ok {
					return prefix + name
				}
				if p := unknownIn(member, f.Type, prefix+name+"."); p != "" {
					return p
				}
			}
		case reflect.Map:
			for name, member := range val {
				if p := unknownIn(member, t.Elem(), prefix+name+"."); p != "" {
					return p
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, item := range val {
				if p := unknownIn(item, t.Elem(), fmt.Sprintf("%s%d.", prefix, i)); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// fieldByJSONName finds the struct field encoding/json would decode the
// object member name into: an exact tag match first, then a case-insensitive
// one, as encoding/json does.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	var fold reflect.StructField
	found := false
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, _, _ := strings.Cut(tag, ",")
		if jsonName == "" {
			jsonName = f.Name
		}
		if jsonName == name {
			return f, true
		}
		if !found && strings.EqualFold(jsonName, name) {
			fold, found = f, true
		}
	}
	return fold, found
}
