package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec/codectest"
)

// runValue runs `weft` with args and stdin, and returns the exit status,
// stdout and stderr.
func runValue(tb testing.TB, stdin string, args ...string) (int, string, string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// envelopeLine is the envelope `weft value encode` prints for a blob.
func envelopeLine(blob string) string {
	return `{"codec":"avro","blob":"` + blob + `"}` + "\n"
}

func TestValueDecodeEncodeGolden(t *testing.T) {
	g := codectest.LoadGolden(t)
	wires := map[string]string{}
	for _, c := range g.Cases {
		wires[c.Name] = c.WireBase64
	}
	for _, c := range g.AlternateMapOrders {
		for i, w := range c.WireBase64 {
			wires[c.Name+"/"+string(rune('a'+i))] = w
		}
	}
	for name, wire := range wires {
		t.Run(name, func(t *testing.T) {
			code, projection, stderr := runValue(t, envelopeLine(wire), "value", "decode")
			require.Equal(t, 0, code, stderr)
			require.Empty(t, stderr)
			require.Equal(t, 1, strings.Count(projection, "\n"), "one line ending in a newline: %q", projection)
			require.True(t, strings.HasSuffix(projection, "\n"))
			require.True(t, json.Valid([]byte(projection)), "projection %q", projection)

			code, envelope, stderr := runValue(t, projection, "value", "encode")
			require.Equal(t, 0, code, stderr)
			require.Equal(t, envelopeLine(wire), envelope, "decode | encode gives back the golden blob")
		})
	}
}

func TestValueEncode(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		blob  string
	}{
		{name: "null", stdin: "null\n", blob: "wwHioz3/VYAiNwA="},
		{name: "long 7", stdin: "7", blob: "wwHioz3/VYAiNwQO"},
		{name: "double 7.0", stdin: "7.0", blob: "wwHioz3/VYAiNwYAAAAAAAAcQA=="},
		{name: "negative zero", stdin: "-0.0", blob: "wwHioz3/VYAiNwYAAAAAAAAAgA=="},
		{name: "long min", stdin: "-9223372036854775808", blob: "wwHioz3/VYAiNwT///////////8B"},
		{name: "bytes", stdin: `{"$type":"bytes","base64":"AP8="}`, blob: "wwHioz3/VYAiNwgEAP8="},
		{name: "string", stdin: ` "héllo" `, blob: "wwHioz3/VYAiNwoMaMOpbGxv"},
		{name: "empty map", stdin: `{"$type":"map","entries":[]}`, blob: "wwHioz3/VYAiNw4A"},
		{name: "plain object with a numeric key", stdin: `{"0":"zero"}`, blob: "wwHioz3/VYAiNw4CAjAKCHplcm8A"},
		{name: "map", stdin: `{"a": 1, "b": [false]}`, blob: "wwHioz3/VYAiNw4EAmEEAgJiDAICAAAA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runValue(t, tt.stdin, "value", "encode")
			require.Equal(t, 0, code, stderr)
			require.Empty(t, stderr)
			require.Equal(t, envelopeLine(tt.blob), stdout)
		})
	}
}

func TestValueFailures(t *testing.T) {
	g := codectest.LoadGolden(t)
	type failure struct {
		name  string
		args  []string
		stdin string
		exit  int
		code  string // stderr prefix "<code>: " when exit is 1
	}
	tests := []failure{
		{name: "encode duplicate key", args: []string{"value", "encode"}, stdin: `{"a":1,"a":2}`, exit: 1, code: "invalid_map_key"},
		{name: "encode dollar key", args: []string{"value", "encode"}, stdin: `{"$avro_bytes":"AP8="}`, exit: 1, code: "invalid_map_key"},
		{name: "encode integer overflow", args: []string{"value", "encode"}, stdin: `18446744073709551615`, exit: 1, code: "integer_overflow"},
		{name: "encode infinite double", args: []string{"value", "encode"}, stdin: `[1e999]`, exit: 1, code: "non_finite_float"},
		{name: "encode empty input", args: []string{"value", "encode"}, stdin: ``, exit: 1, code: "invalid_projection"},
		{name: "encode bad JSON", args: []string{"value", "encode"}, stdin: `{"a":`, exit: 1, code: "invalid_projection"},
		{name: "encode two values", args: []string{"value", "encode"}, stdin: `1 2`, exit: 1, code: "invalid_projection"},
		{name: "encode bad base64", args: []string{"value", "encode"}, stdin: `{"$type":"bytes","base64":"AP9="}`, exit: 1, code: "invalid_projection"},
		{name: "encode too deep", args: []string{"value", "encode"}, stdin: strings.Repeat("[", 100) + strings.Repeat("]", 100), exit: 1, code: "payload_limit_exceeded"},
		{name: "decode json codec", args: []string{"value", "decode"}, stdin: `{"codec":"json","blob":"e30="}`, exit: 1, code: "unsupported_payload_codec"},
		{name: "decode missing codec", args: []string{"value", "decode"}, stdin: `{"blob":"wwHioz3/VYAiNwA="}`, exit: 1, code: "unsupported_payload_codec"},
		{name: "decode wrong-case codec", args: []string{"value", "decode"}, stdin: `{"codec":"Avro","blob":"not base64"}`, exit: 1, code: "unsupported_payload_codec"},
		{name: "decode raw JSON blob", args: []string{"value", "decode"}, stdin: `{"codec":"avro","blob":"eyJzdGFsZSI6dHJ1ZX0="}`, exit: 1, code: "unsupported_payload_codec"},
		{name: "decode missing blob", args: []string{"value", "decode"}, stdin: `{"codec":"avro"}`, exit: 1, code: "invalid_payload_envelope"},
		{name: "decode not an object", args: []string{"value", "decode"}, stdin: `"wwHioz3/VYAiNwA="`, exit: 1, code: "invalid_payload_envelope"},
		{name: "decode non-canonical base64", args: []string{"value", "decode"}, stdin: `{"codec":"avro","blob":"wwHioz3/VYAiNwB="}`, exit: 1, code: "invalid_payload_framing"},
		{name: "encode with an argument", args: []string{"value", "encode", "7"}, exit: 2},
		{name: "decode with an argument", args: []string{"value", "decode", "x"}, exit: 2},
		{name: "unknown flag", args: []string{"value", "encode", "--pretty"}, exit: 2},
		{name: "no subcommand", args: []string{"value"}, exit: 2},
		{name: "unknown subcommand", args: []string{"value", "print"}, exit: 2},
	}
	for _, m := range g.MalformedFrames {
		tests = append(tests, failure{name: "decode " + m.Name, args: []string{"value", "decode"}, stdin: envelopeLine(m.WireBase64), exit: 1, code: m.Error})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exit, stdout, stderr := runValue(t, tt.stdin, tt.args...)
			require.Equal(t, tt.exit, exit, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.NotEmpty(t, stderr)
			if tt.exit == 1 {
				require.True(t, strings.HasPrefix(stderr, tt.code+": "), "stderr %q", stderr)
				require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			}
		})
	}
}

func TestValueHelp(t *testing.T) {
	for _, args := range [][]string{{"value", "--help"}, {"value", "encode", "--help"}, {"value", "decode", "--help"}} {
		exit, stdout, stderr := runValue(t, "", args...)
		require.Equal(t, 0, exit, stderr)
		require.Contains(t, stdout, "Usage:")
	}
}
