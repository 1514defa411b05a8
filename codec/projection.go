package codec

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"
)

// MarshalProjection returns the typed JSON projection of v (BRIEF §3.1;
// reference §3), compact, with no trailing newline:
//
//   - null, booleans and strings are ordinary JSON values; lists are arrays;
//   - a long is a JSON integer, exact over the whole int64 range;
//   - a double always has a fraction or an exponent (7.0, -0.0, 1e+300), and
//     is the shortest text that parses back to the same bits;
//   - bytes are {"$type":"bytes","base64":"<standard base64>"};
//   - a map is a JSON object in entry order, unless it is empty, has a
//     numeric-looking key (a canonical decimal integer such as "0", "42" or
//     "-5"), a key starting with "$", or the same key twice: then it is
//     {"$type":"map","entries":[{"key":…,"value":…},…]}.
//
// ParseProjection reads every form back to the same Value, so
// ParseProjection(MarshalProjection(v)) re-encodes to v's bytes. It fails
// like AppendDatum: non_finite_float, invalid_payload_framing for a string
// that is not UTF-8, invalid_map_key for such a key, payload_limit_exceeded
// beyond DefaultLimits.MaxDepth.
func MarshalProjection(v Value) ([]byte, error) {
	return appendProjection(make([]byte, 0, 2*datumSize(v, 0)+16), v, 0)
}

// appendProjection appends the projection of v, which sits inside depth
// lists and maps. Recursion is bounded by defaultMaxDepth.
func appendProjection(dst []byte, v Value, depth int) ([]byte, error) {
	switch v.kind {
	case KindNull:
		return append(dst, "null"...), nil
	case KindBoolean:
		if v.num == 1 {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case KindLong:
		return strconv.AppendInt(dst, int64(v.num), 10), nil
	case KindDouble:
		f := math.Float64frombits(v.num)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, errorf(CodeNonFiniteFloat, "double %v is not finite", f)
		}
		return appendDouble(dst, f), nil
	case KindBytes:
		dst = append(dst, `{"$type":"bytes","base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, v.bytesv())
		return append(dst, `"}`...), nil
	case KindString:
		if !utf8.ValidString(v.strv()) {
			return dst, errorf(CodeInvalidPayloadFraming, "string %q is not valid UTF-8", clip(v.strv()))
		}
		return appendJSONString(dst, v.strv()), nil
	case KindList:
		if depth >= defaultMaxDepth {
			return dst, depthError(defaultMaxDepth)
		}
		dst = append(dst, '[')
		var err error
		for i := range v.itemsv() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendProjection(dst, v.itemsv()[i], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case KindMap:
		if depth >= defaultMaxDepth {
			return dst, depthError(defaultMaxDepth)
		}
		for i := range v.entriesv() {
			if !utf8.ValidString(v.entriesv()[i].Key) {
				return dst, errorf(CodeInvalidMapKey, "map key %q is not valid UTF-8", clip(v.entriesv()[i].Key))
			}
		}
		typed := needsTypedMap(v.entriesv())
		if typed {
			dst = append(dst, `{"$type":"map","entries":[`...)
		} else {
			dst = append(dst, '{')
		}
		var err error
		for i := range v.entriesv() {
			e := &v.entriesv()[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			if typed {
				dst = append(dst, `{"key":`...)
				dst = appendJSONString(dst, e.Key)
				dst = append(dst, `,"value":`...)
			} else {
				dst = appendJSONString(dst, e.Key)
				dst = append(dst, ':')
			}
			if dst, err = appendProjection(dst, e.Value, depth+1); err != nil {
				return dst, err
			}
			if typed {
				dst = append(dst, '}')
			}
		}
		if typed {
			return append(dst, "]}"...), nil
		}
		return append(dst, '}'), nil
	}
	return dst, errorf(CodeInvalidPayloadFraming, "value has no union branch %d", v.kind)
}

// needsTypedMap reports whether a map must use the {"$type":"map"} form: it
// is empty, or a key is numeric-looking, starts with "$", or repeats.
func needsTypedMap(entries []Entry) bool {
	if len(entries) == 0 {
		return true
	}
	for i := range entries {
		k := entries[i].Key
		if isNumericKey(k) || (k != "" && k[0] == '$') {
			return true
		}
	}
	if len(entries) <= 16 {
		for i := 1; i < len(entries); i++ {
			for j := 0; j < i; j++ {
				if entries[i].Key == entries[j].Key {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(entries))
	for i := range entries {
		if _, ok := seen[entries[i].Key]; ok {
			return true
		}
		seen[entries[i].Key] = struct{}{}
	}
	return false
}

// isNumericKey reports whether k is a canonical decimal integer: "0", or an
// optional "-" and a digit 1-9 followed by digits. These are the keys a PHP
// array turns into integers (reference §3); "01", "1.5", "+1" and "-0" are
// not.
func isNumericKey(k string) bool {
	if k == "0" {
		return true
	}
	if k != "" && k[0] == '-' {
		k = k[1:]
	}
	if k == "" || k[0] < '1' || k[0] > '9' {
		return false
	}
	for i := 1; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return false
		}
	}
	return true
}

// appendDouble appends f as a JSON number that always has a fraction or an
// exponent: the shortest decimal that parses back to f, in plain notation
// for 1e-6 <= |f| < 1e21 and exponent notation outside, with ".0" added to
// integral values.
func appendDouble(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Shorten a two-digit negative exponent with a leading zero:
		// 1e-07 becomes 1e-7.
		if n := len(dst); n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst
	}
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// appendJSONString appends s as a JSON string. s must be valid UTF-8; it is
// written as is, except for the quote, the backslash and control
// characters, which are escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
