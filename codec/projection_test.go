package codec_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

func TestProjectionRoundTrip(t *testing.T) {
	manyKeys := make([]codec.Entry, 0, 20)
	for i := range 20 {
		manyKeys = append(manyKeys, kv(fmt.Sprintf("k%d", i), codec.Long(int64(i))))
	}
	tests := []struct {
		name  string
		value codec.Value
		json  string
	}{
		{name: "null", value: codec.Null(), json: `null`},
		{name: "true", value: codec.Bool(true), json: `true`},
		{name: "false", value: codec.Bool(false), json: `false`},
		{name: "long 0", value: codec.Long(0), json: `0`},
		{name: "long max", value: codec.Long(math.MaxInt64), json: `9223372036854775807`},
		{name: "long min", value: codec.Long(math.MinInt64), json: `-9223372036854775808`},
		{name: "long 2^53+1", value: codec.Long(1<<53 + 1), json: `9007199254740993`},
		{name: "double 7.0", value: codec.Double(7), json: `7.0`},
		{name: "double -0.0", value: codec.Double(math.Copysign(0, -1)), json: `-0.0`},
		{name: "double 0.0", value: codec.Double(0), json: `0.0`},
		{name: "double -2.5", value: codec.Double(-2.5), json: `-2.5`},
		{name: "double 0.1", value: codec.Double(0.1), json: `0.1`},
		{name: "double 1e300", value: codec.Double(1e300), json: `1e+300`},
		{name: "double 1e21", value: codec.Double(1e21), json: `1e+21`},
		{name: "double 1e20", value: codec.Double(1e20), json: `100000000000000000000.0`},
		{name: "double 2^53+2", value: codec.Double(1<<53 + 2), json: `9007199254740994.0`},
		{name: "double 1e-6", value: codec.Double(1e-6), json: `0.000001`},
		{name: "double 1e-7", value: codec.Double(1e-7), json: `1e-7`},
		{name: "double 1.5e-10", value: codec.Double(1.5e-10), json: `1.5e-10`},
		{name: "double 5e-324", value: codec.Double(5e-324), json: `5e-324`},
		{name: "double max", value: codec.Double(math.MaxFloat64), json: `1.7976931348623157e+308`},
		{name: "string", value: codec.String("héllo"), json: `"héllo"`},
		{name: "string escapes", value: codec.String("a\"b\\c\n\r\t\b\f\x01\x1f/<>&\u2028"), json: `"a\"b\\c\n\r\t\b\f\u0001\u001f/<>&` + "\u2028" + `"`},
		{name: "empty string", value: codec.String(""), json: `""`},
		{name: "bytes", value: codec.Bytes([]byte{0x00, 0xff}), json: `{"$type":"bytes","base64":"AP8="}`},
		{name: "empty bytes", value: codec.Bytes(nil), json: `{"$type":"bytes","base64":""}`},
		{name: "empty list", value: codec.List(), json: `[]`},
		{name: "list", value: codec.List(codec.Null(), codec.Long(7), codec.Double(7), codec.List()), json: `[null,7,7.0,[]]`},
		{name: "plain map", value: codec.Map(kv("a", codec.Long(1)), kv("b", codec.List(codec.Bool(false)))), json: `{"a":1,"b":[false]}`},
		{name: "plain map keeps order", value: codec.Map(kv("z", codec.Null()), kv("a", codec.Null())), json: `{"z":null,"a":null}`},
		{name: "empty key", value: codec.Map(kv("", codec.Long(1))), json: `{"":1}`},
		{
			name: "near-numeric keys stay plain", value: codec.Map(kv("01", codec.Null()), kv("1.5", codec.Null()), kv("+1", codec.Null()), kv("-0", codec.Null()), kv("1e3", codec.Null()), kv("-", codec.Null()), kv(" 1", codec.Null())),
			json: `{"01":null,"1.5":null,"+1":null,"-0":null,"1e3":null,"-":null," 1":null}`,
		},
		{name: "empty map", value: codec.Map(), json: `{"$type":"map","entries":[]}`},
		{name: "key 0", value: codec.Map(kv("0", codec.String("zero"))), json: `{"$type":"map","entries":[{"key":"0","value":"zero"}]}`},
		{name: "key -5", value: codec.Map(kv("a", codec.Null()), kv("-5", codec.Null())), json: `{"$type":"map","entries":[{"key":"a","value":null},{"key":"-5","value":null}]}`},
		{name: "huge numeric key", value: codec.Map(kv("123456789012345678901234567890", codec.Null())), json: `{"$type":"map","entries":[{"key":"123456789012345678901234567890","value":null}]}`},
		{name: "dollar key", value: codec.Map(kv("$x", codec.Long(1))), json: `{"$type":"map","entries":[{"key":"$x","value":1}]}`},
		{
			name: "$type key", value: codec.Map(kv("$type", codec.String("bytes")), kv("base64", codec.String("AP8="))),
			json: `{"$type":"map","entries":[{"key":"$type","value":"bytes"},{"key":"base64","value":"AP8="}]}`,
		},
		{name: "duplicate keys", value: codec.Map(kv("a", codec.Long(1)), kv("a", codec.Long(2))), json: `{"$type":"map","entries":[{"key":"a","value":1},{"key":"a","value":2}]}`},
		{name: "many keys", value: codec.Map(manyKeys...), json: `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19}`},
		{
			name: "many keys with a late duplicate", value: codec.Map(append(manyKeys[:18:18], kv("k3", codec.Null()))...),
			json: `{"$type":"map","entries":[` + func() string {
				var parts []string
				for i := range 18 {
					parts = append(parts, fmt.Sprintf(`{"key":"k%d","value":%d}`, i, i))
				}
				return strings.Join(append(parts, `{"key":"k3","value":null}`), ",")
			}() + `]}`,
		},
		{
			name: "nested bytes", value: codec.Map(kv("items", codec.List(codec.Map(kv("enabled", codec.Bool(true))), codec.Bytes([]byte("bytes")), codec.Double(-2.5)))),
			json: `{"items":[{"enabled":true},{"$type":"bytes","base64":"Ynl0ZXM="},-2.5]}`,
		},
		{
			name: "typed map inside typed map", value: codec.Map(kv("1", codec.Map(kv("2", codec.Bytes([]byte{1}))))),
			json: `{"$type":"map","entries":[{"key":"1","value":{"$type":"map","entries":[{"key":"2","value":{"$type":"bytes","base64":"AQ=="}}]}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.MarshalProjection(tt.value)
			require.NoError(t, err)
			require.Equal(t, tt.json, string(got))

			back, err := codec.ParseProjection([]byte(tt.json))
			require.NoError(t, err)
			requireEqualValue(t, tt.value, back)

			want, err := codec.EncodeFrame(tt.value)
			require.NoError(t, err)
			again, err := codec.EncodeFrame(back)
			require.NoError(t, err)
			require.Equal(t, want, again)
		})
	}
}

func TestParseProjectionForms(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		value codec.Value
	}{
		{name: "empty plain object", json: `{}`, value: codec.Map()},
		{name: "numeric key in a plain object", json: `{"0":"zero","1":"one"}`, value: codec.Map(kv("0", codec.String("zero")), kv("1", codec.String("one")))},
		{name: "fraction makes a double", json: `1.0`, value: codec.Double(1)},
		{name: "exponent makes a double", json: `1E2`, value: codec.Double(100)},
		{name: "negative exponent", json: `25e-1`, value: codec.Double(2.5)},
		{name: "integer -0 is long 0", json: `-0`, value: codec.Long(0)},
		{name: "underflow rounds to zero", json: `1e-400`, value: codec.Double(0)},
		{name: "whitespace", json: " \n\t[ 1 , {\"a\" : null} ]\r\n", value: codec.List(codec.Long(1), codec.Map(kv("a", codec.Null())))},
		{name: "unicode escapes", json: `"\u00e9\ud83d\ude00"`, value: codec.String("é😀")},
		{name: "typed empty bytes", json: `{"$type":"bytes","base64":""}`, value: codec.Bytes(nil)},
		{name: "typed empty map", json: `{"$type":"map","entries":[]}`, value: codec.Map()},
		{name: "typed entry value before key", json: `{"$type":"map","entries":[{"value":1,"key":"a"}]}`, value: codec.Map(kv("a", codec.Long(1)))},
		{name: "typed map with plain keys", json: `{"$type":"map","entries":[{"key":"b","value":2},{"key":"a","value":1}]}`, value: codec.Map(kv("b", codec.Long(2)), kv("a", codec.Long(1)))},
		{name: "64 levels", json: strings.Repeat("[", 64) + strings.Repeat("]", 64), value: func() codec.Value {
			v := codec.List()
			for range 63 {
				v = codec.List(v)
			}
			return v
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.ParseProjection([]byte(tt.json))
			require.NoError(t, err)
			requireEqualValue(t, tt.value, got)
		})
	}
}

func TestParseProjectionRejects(t *testing.T) {
	tests := []struct {
		name string
		json string
		code codec.Code
	}{
		{name: "empty", json: ``, code: codec.CodeInvalidProjection},
		{name: "only whitespace", json: " \n", code: codec.CodeInvalidProjection},
		{name: "truncated", json: `[1,`, code: codec.CodeInvalidProjection},
		{name: "two values", json: `[1] [2]`, code: codec.CodeInvalidProjection},
		{name: "trailing comma", json: `{"a":1,}`, code: codec.CodeInvalidProjection},
		{name: "bad literal", json: `nul`, code: codec.CodeInvalidProjection},
		{name: "invalid UTF-8", json: "\"\xff\"", code: codec.CodeInvalidProjection},
		{name: "long above int64", json: `9223372036854775808`, code: codec.CodeIntegerOverflow},
		{name: "long below int64", json: `-9223372036854775809`, code: codec.CodeIntegerOverflow},
		{name: "double beyond range", json: `1e309`, code: codec.CodeNonFiniteFloat},
		{name: "negative double beyond range", json: `[-1.5e400]`, code: codec.CodeNonFiniteFloat},
		{name: "duplicate key", json: `{"a":1,"a":2}`, code: codec.CodeInvalidMapKey},
		{name: "late duplicate key", json: `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k2":2}`, code: codec.CodeInvalidMapKey},
		{name: "dollar key", json: `{"$avro_bytes":"AP8="}`, code: codec.CodeInvalidMapKey},
		{name: "$type not first", json: `{"base64":"AP8=","$type":"bytes"}`, code: codec.CodeInvalidMapKey},
		{name: "unknown $type", json: `{"$type":"uuid","value":"x"}`, code: codec.CodeInvalidProjection},
		{name: "non-string $type", json: `{"$type":1}`, code: codec.CodeInvalidProjection},
		{name: "bytes without base64", json: `{"$type":"bytes"}`, code: codec.CodeInvalidProjection},
		{name: "bytes with another key", json: `{"$type":"bytes","data":"AP8="}`, code: codec.CodeInvalidProjection},
		{name: "bytes with an extra key", json: `{"$type":"bytes","base64":"AP8=","x":1}`, code: codec.CodeInvalidProjection},
		{name: "bytes base64 not a string", json: `{"$type":"bytes","base64":[0,255]}`, code: codec.CodeInvalidProjection},
		{name: "bytes non-canonical base64", json: `{"$type":"bytes","base64":"AP9="}`, code: codec.CodeInvalidProjection},
		{name: "bytes base64 without padding", json: `{"$type":"bytes","base64":"AP8"}`, code: codec.CodeInvalidProjection},
		{name: "bytes URL-safe base64", json: `{"$type":"bytes","base64":"AP_="}`, code: codec.CodeInvalidProjection},
		{name: "bytes base64 with newline", json: `{"$type":"bytes","base64":"AP8=\n"}`, code: codec.CodeInvalidProjection},
		{name: "map without entries", json: `{"$type":"map"}`, code: codec.CodeInvalidProjection},
		{name: "map entries not an array", json: `{"$type":"map","entries":{}}`, code: codec.CodeInvalidProjection},
		{name: "map entry not an object", json: `{"$type":"map","entries":[["a",1]]}`, code: codec.CodeInvalidProjection},
		{name: "map entry without value", json: `{"$type":"map","entries":[{"key":"a"}]}`, code: codec.CodeInvalidProjection},
		{name: "map entry without key", json: `{"$type":"map","entries":[{"value":1}]}`, code: codec.CodeInvalidProjection},
		{name: "map entry with number key", json: `{"$type":"map","entries":[{"key":1,"value":1}]}`, code: codec.CodeInvalidMapKey},
		{name: "map entry with extra key", json: `{"$type":"map","entries":[{"key":"a","value":1,"x":2}]}`, code: codec.CodeInvalidProjection},
		{name: "map entry with repeated key", json: `{"$type":"map","entries":[{"key":"a","key":"b","value":1}]}`, code: codec.CodeInvalidProjection},
		{name: "map with an extra key", json: `{"$type":"map","entries":[],"x":1}`, code: codec.CodeInvalidProjection},
		{name: "bad value inside a typed map", json: `{"$type":"map","entries":[{"key":"a","value":1e999}]}`, code: codec.CodeNonFiniteFloat},
		{name: "65 levels of lists", json: strings.Repeat("[", 65) + strings.Repeat("]", 65), code: codec.CodePayloadLimit},
		{name: "65 levels of objects", json: strings.Repeat(`{"a":`, 64) + `{}` + strings.Repeat("}", 64), code: codec.CodePayloadLimit},
		{name: "65 levels of typed maps", json: strings.Repeat(`{"$type":"map","entries":[{"key":"a","value":`, 65) + `null` + strings.Repeat("}]}", 65), code: codec.CodePayloadLimit},
		{name: "a million open brackets", json: strings.Repeat("[", 1_000_000), code: codec.CodePayloadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.ParseProjection([]byte(tt.json))
			require.ErrorIs(t, err, tt.code)
			require.True(t, strings.HasPrefix(err.Error(), string(tt.code)+": "), "message %q", err)
		})
	}
}

func TestMarshalProjectionRejects(t *testing.T) {
	tests := []struct {
		name  string
		value codec.Value
		code  codec.Code
	}{
		{name: "NaN", value: codec.Double(math.NaN()), code: codec.CodeNonFiniteFloat},
		{name: "-Inf in a list", value: codec.List(codec.Double(math.Inf(-1))), code: codec.CodeNonFiniteFloat},
		{name: "invalid UTF-8 string", value: codec.String("\xff"), code: codec.CodeInvalidPayloadFraming},
		{name: "invalid UTF-8 key", value: codec.Map(kv("\xff", codec.Null())), code: codec.CodeInvalidMapKey},
		{name: "65 levels", value: nest(65), code: codec.CodePayloadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.MarshalProjection(tt.value)
			require.ErrorIs(t, err, tt.code)
		})
	}
}
