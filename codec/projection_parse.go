package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseProjection reads one JSON value in the typed projection (see
// MarshalProjection) and returns its Value:
//
//   - a JSON integer is a long (outside int64: integer_overflow); a number
//     with a fraction or an exponent is a double (beyond the double range:
//     non_finite_float);
//   - an object whose first key is "$type" is a typed form:
//     {"$type":"bytes","base64":"…"} with strict standard base64, or
//     {"$type":"map","entries":[{"key":"…","value":…},…]}, whose entries
//     keep their order and may repeat a key;
//   - any other object is a map in the object's key order. Such a plain
//     object must not repeat a key or use a key that starts with "$" (the
//     projection reserves those): both fail with invalid_map_key, and need
//     the typed map form.
//
// Text that is not exactly one JSON value, is not UTF-8, or holds a bad
// typed form fails with invalid_projection. Lists and maps nested deeper
// than DefaultLimits.MaxDepth fail with payload_limit_exceeded.
func ParseProjection(data []byte) (Value, error) {
	if !utf8.Valid(data) {
		return Value{}, errorf(CodeInvalidProjection, "JSON text is not valid UTF-8")
	}
	p := projectionParser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return Value{}, errorf(CodeInvalidProjection, "unexpected data after the JSON value")
	}
	return v, nil
}

// projectionParser reads a projection token by token, so object keys keep
// their order.
type projectionParser struct {
	dec *json.Decoder
}

// token returns the next JSON token.
func (p *projectionParser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errorf(CodeInvalidProjection, "JSON text is empty or truncated")
		}
		return nil, errorf(CodeInvalidProjection, "invalid JSON: %v", err)
	}
	return tok, nil
}

// value reads one value that sits inside depth lists and maps. Recursion is
// bounded: containers deeper than the limit fail before they are entered.
func (p *projectionParser) value(depth int) (Value, error) {
	tok, err := p.token()
	if err != nil {
		return Value{}, err
	}
	switch t := tok.(type) {
	case nil:
		return Null(), nil
	case bool:
		return Bool(t), nil
	case string:
		return String(t), nil
	case json.Number:
		return parseNumber(string(t))
	case json.Delim:
		if t == '[' {
			return p.list(depth)
		}
		return p.object(depth)
	}
	return Value{}, errorf(CodeInvalidProjection, "unexpected JSON token %v", tok)
}

// parseNumber turns a JSON number into a long or a double.
func parseNumber(s string) (Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Value{}, errorf(CodeIntegerOverflow, "integer %s is outside the signed 64-bit range", clip(s))
		}
		return Long(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return Value{}, errorf(CodeNonFiniteFloat, "number %s is beyond the double range", clip(s))
	}
	return Double(f), nil
}

// list reads the items of a JSON array after its '['.
func (p *projectionParser) list(depth int) (Value, error) {
	if depth >= defaultMaxDepth {
		return Value{}, depthError(defaultMaxDepth)
	}
	var items []Value
	for p.dec.More() {
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		items = append(items, v)
	}
	if _, err := p.token(); err != nil { // ']'
		return Value{}, err
	}
	return List(items...), nil
}

// object reads a JSON object after its '{': a typed form if the first key is
// "$type", a plain map otherwise.
func (p *projectionParser) object(depth int) (Value, error) {
	if !p.dec.More() {
		if _, err := p.token(); err != nil { // '}'
			return Value{}, err
		}
		if depth >= defaultMaxDepth {
			return Value{}, depthError(defaultMaxDepth)
		}
		return Map(), nil
	}
	key, err := p.key()
	if err != nil {
		return Value{}, err
	}
	if key == "$type" {
		return p.typed(depth)
	}
	if depth >= defaultMaxDepth {
		return Value{}, depthError(defaultMaxDepth)
	}
	var entries []Entry
	var seen map[string]struct{}
	for {
		if key != "" && key[0] == '$' {
			return Value{}, errorf(CodeInvalidMapKey, "key %q of a plain JSON object starts with \"$\", which the projection reserves; write the map as {\"$type\":\"map\",\"entries\":[…]}", clip(key))
		}
		if dupKey(entries, &seen, key) {
			return Value{}, errorf(CodeInvalidMapKey, "key %q appears twice in a JSON object; write the map as {\"$type\":\"map\",\"entries\":[…]}", clip(key))
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		entries = append(entries, Entry{Key: key, Value: v})
		if !p.dec.More() {
			break
		}
		if key, err = p.key(); err != nil {
			return Value{}, err
		}
	}
	if _, err := p.token(); err != nil { // '}'
		return Value{}, err
	}
	return Map(entries...), nil
}

// dupKey reports whether key is already among entries, tracking keys in a
// set once there are many.
func dupKey(entries []Entry, seen *map[string]struct{}, key string) bool {
	if len(entries) < 16 {
		for i := range entries {
			if entries[i].Key == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(entries))
		for i := range entries {
			(*seen)[entries[i].Key] = struct{}{}
		}
	}
	if _, ok := (*seen)[key]; ok {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

// key reads an object key.
func (p *projectionParser) key() (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", errorf(CodeInvalidProjection, "expected an object key, got %v", tok)
	}
	return key, nil
}

// typed reads the rest of a {"$type":…} object after its "$type" key.
func (p *projectionParser) typed(depth int) (Value, error) {
	tok, err := p.token()
	if err != nil {
		return Value{}, err
	}
	kind, _ := tok.(string)
	switch kind {
	case "bytes":
		return p.typedBytes()
	case "map":
		if depth >= defaultMaxDepth {
			return Value{}, depthError(defaultMaxDepth)
		}
		return p.typedMap(depth)
	}
	return Value{}, errorf(CodeInvalidProjection, `unknown $type %v; expected "bytes" or "map"`, jsonText(tok))
}

// typedBytes reads {"$type":"bytes","base64":"…"} after the type name.
func (p *projectionParser) typedBytes() (Value, error) {
	if !p.dec.More() {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"bytes"} needs a "base64" key`)
	}
	key, err := p.key()
	if err != nil {
		return Value{}, err
	}
	if key != "base64" {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"bytes"} has key %q; it takes exactly "base64"`, clip(key))
	}
	tok, err := p.token()
	if err != nil {
		return Value{}, err
	}
	s, ok := tok.(string)
	if !ok {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"bytes"} base64 must be a string, got %v`, jsonText(tok))
	}
	if strings.ContainsAny(s, "\r\n") {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"bytes"} base64 is not strict standard base64`)
	}
	b, err := strictBase64.DecodeString(s)
	if err != nil {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"bytes"} base64 is not strict standard base64`)
	}
	if err := p.end(`{"$type":"bytes"}`); err != nil {
		return Value{}, err
	}
	return Bytes(b), nil
}

// typedMap reads {"$type":"map","entries":[…]} after the type name.
func (p *projectionParser) typedMap(depth int) (Value, error) {
	if !p.dec.More() {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"map"} needs an "entries" key`)
	}
	key, err := p.key()
	if err != nil {
		return Value{}, err
	}
	if key != "entries" {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"map"} has key %q; it takes exactly "entries"`, clip(key))
	}
	tok, err := p.token()
	if err != nil {
		return Value{}, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return Value{}, errorf(CodeInvalidProjection, `{"$type":"map"} entries must be an array, got %v`, jsonText(tok))
	}
	var entries []Entry
	for p.dec.More() {
		e, err := p.entry(depth)
		if err != nil {
			return Value{}, err
		}
		entries = append(entries, e)
	}
	if _, err := p.token(); err != nil { // ']'
		return Value{}, err
	}
	if err := p.end(`{"$type":"map"}`); err != nil {
		return Value{}, err
	}
	return Map(entries...), nil
}

// entry reads one {"key":"…","value":…} object of a typed map, its two keys
// in either order.
func (p *projectionParser) entry(depth int) (Entry, error) {
	const form = `{"$type":"map"} entry`
	tok, err := p.token()
	if err != nil {
		return Entry{}, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Entry{}, errorf(CodeInvalidProjection, `%s must be an object {"key":…,"value":…}, got %v`, form, jsonText(tok))
	}
	var e Entry
	var haveKey, haveValue bool
	for p.dec.More() {
		k, err := p.key()
		if err != nil {
			return Entry{}, err
		}
		switch {
		case k == "key" && !haveKey:
			tok, err := p.token()
			if err != nil {
				return Entry{}, err
			}
			s, ok := tok.(string)
			if !ok {
				return Entry{}, errorf(CodeInvalidMapKey, "%s key must be a string, got %v", form, jsonText(tok))
			}
			e.Key, haveKey = s, true
		case k == "value" && !haveValue:
			if e.Value, err = p.value(depth + 1); err != nil {
				return Entry{}, err
			}
			haveValue = true
		default:
			return Entry{}, errorf(CodeInvalidProjection, `%s has unexpected or repeated key %q; it takes exactly "key" and "value"`, form, clip(k))
		}
	}
	if _, err := p.token(); err != nil { // '}'
		return Entry{}, err
	}
	if !haveKey || !haveValue {
		return Entry{}, errorf(CodeInvalidProjection, `%s needs both "key" and "value"`, form)
	}
	return e, nil
}

// end reads the closing brace of a typed form, which takes no more keys.
func (p *projectionParser) end(form string) error {
	if p.dec.More() {
		key, err := p.key()
		if err != nil {
			return err
		}
		return errorf(CodeInvalidProjection, "%s has unexpected key %q", form, clip(key))
	}
	_, err := p.token()
	return err
}

// jsonText renders a token for an error message.
func jsonText(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(clip(t))
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		if t == '{' {
			return "an object"
		}
		return t.String()
	}
	b, _ := json.Marshal(tok)
	return clip(string(b))
}
