package valuebench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Object is a JSON object that keeps the order of its members, the native
// form of a map in this benchmark: what a Go program holds after decoding
// JSON with insertion order kept, as the Python and PHP SDKs do.
//
// Native values are nil, bool, int64 (a JSON number without fraction or
// exponent), Float (one with), string, []any and Object. They encode to
// compact JSON with encoding/json.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// MarshalJSON writes the object compactly, members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), v...)
	}
	return append(buf, '}'), nil
}

// Get returns the value of the first member called key.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Float is a JSON number written with a fraction or an exponent: a double,
// kept apart from integers so that 7.0 stays 7.0 (reference §1.5).
type Float float64

// MarshalJSON writes f the way encoding/json writes a float64, with ".0"
// added when that would read as an integer (7.0, not 7). NaN and the
// infinities have no JSON form and fail.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("json: unsupported value %v", x)
	}
	var b []byte
	if abs := math.Abs(x); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(nil, x, 'e', -1, 64)
		// 1e-07 becomes 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b, nil
	}
	b = strconv.AppendFloat(nil, x, 'f', -1, 64)
	if bytes.IndexByte(b, '.') < 0 {
		b = append(b, '.', '0')
	}
	return b, nil
}

// ParseJSON decodes one JSON value into its native form (see Object),
// keeping the order of object members and telling integers from doubles by
// their spelling. Trailing data after the value fails.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, fmt.Errorf("parse json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("parse json: trailing data after the value")
	}
	return v, nil
}

// parseValue reads the next value from dec.
func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			items := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				items = append(items, v)
			}
			_, err := dec.Token() // ]
			return items, err
		}
		obj := Object{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, Member{Key: key.(string), Value: v})
		}
		_, err := dec.Token() // }
		return obj, err
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			f, err := strconv.ParseFloat(string(t), 64)
			return Float(f), err
		}
		return strconv.ParseInt(string(t), 10, 64)
	default: // nil, bool, string
		return t, nil
	}
}
