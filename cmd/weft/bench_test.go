package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MustRunBench runs the weft command line with args and returns its exit
// status, stdout and stderr.
func MustRunBench(tb testing.TB, args ...string) (int, string, string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestBenchAvroValue(t *testing.T) {
	t.Setenv("AVRO_VALUE_ENCODE_BUDGET_US", "")
	t.Setenv("AVRO_VALUE_DECODE_BUDGET_US", "")
	code, stdout, stderr := MustRunBench(t, "bench", "avro-value", "--iterations", "10", "--samples", "3")
	require.Equal(t, 0, code, stderr)

	var report struct {
		Implementation string `json:"implementation"`
		Corpus         struct {
			Schema string `json:"schema"`
			Case   string `json:"case"`
			SHA256 string `json:"sha256"`
		} `json:"corpus"`
		Iterations int                                   `json:"iterations"`
		SizesBytes map[string]map[string]int             `json:"sizes_bytes"`
		LatencyUS  map[string]map[string]json.RawMessage `json:"latency_us"`
		Ratios     map[string]struct {
			Ratio  float64 `json:"ratio"`
			Target float64 `json:"target"`
			Passed bool    `json:"passed"`
		} `json:"ratios"`
		BudgetsUS   map[string]float64 `json:"budgets_us"`
		Enforcement struct {
			Enforced bool     `json:"enforced"`
			Passed   bool     `json:"passed"`
			Failures []string `json:"failures"`
		} `json:"enforcement"`
		WireContract struct {
			TypedWireSHA256 string `json:"typed_wire_sha256"`
		} `json:"wire_contract"`
	}
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &keys))
	for _, key := range []string{"implementation", "corpus", "iterations", "sizes_bytes", "latency_us", "ratios", "budgets_us", "enforcement"} {
		require.Contains(t, keys, key)
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report))
	require.True(t, strings.HasPrefix(stdout, "{\n  \"implementation\""), "indented JSON")

	require.Equal(t, "weft-go", report.Implementation)
	require.Equal(t, "durable_workflow.protocol.Value.benchmark/v1", report.Corpus.Schema)
	require.Equal(t, "medium", report.Corpus.Case)
	require.Equal(t, "588771404977f2a95fe7d8969c24a15e1c7dd78fe498af9aa2406f82be54b666", report.Corpus.SHA256)
	require.Equal(t, 10, report.Iterations)
	require.Equal(t, map[string]map[string]int{
		"plain_json":        {"raw": 193, "http_envelope": 249},
		"old_json_wrapper":  {"raw_datum": 196, "framed": 197, "http_envelope": 290},
		"fixed_typed_value": {"raw_datum": 154, "single_object": 164, "http_envelope": 246},
	}, report.SizesBytes)
	require.Equal(t, "8e0ec373f4a8163830bc319cbc55e242e35bed2e7fd4dba2d7ba12fa62bd42e3", report.WireContract.TypedWireSHA256)
	for _, name := range []string{
		"plain_json_encode", "plain_json_decode", "old_json_wrapper_encode", "old_json_wrapper_decode",
		"fixed_typed_value_encode", "fixed_typed_value_decode", "hamba_generic_encode", "hamba_generic_decode",
	} {
		require.Contains(t, report.LatencyUS, name)
		var median float64
		require.NoError(t, json.Unmarshal(report.LatencyUS[name]["median_us"], &median))
		require.Positive(t, median, name)
		var samples []float64
		require.NoError(t, json.Unmarshal(report.LatencyUS[name]["samples_us"], &samples))
		require.Len(t, samples, 3, name)
	}
	require.Len(t, report.Ratios, 4)
	require.Equal(t, 0.2, report.Ratios["fixed_typed_value_encode_vs_hamba_generic"].Target)
	require.Equal(t, map[string]float64{"encode": 75, "decode": 60}, report.BudgetsUS)
	require.False(t, report.Enforcement.Enforced)
}

func TestBenchAvroValueEnforce(t *testing.T) {
	tests := []struct {
		name   string
		encode string
		decode string
		code   int
		stderr string
	}{
		{name: "under budget", encode: "1e9", decode: "1e9", code: 0},
		{name: "encode over", encode: "0.001", decode: "", code: 1, stderr: "fixed_typed_value_encode median"},
		{name: "decode over", encode: "", decode: "0.001", code: 1, stderr: "fixed_typed_value_decode median"},
		{name: "bad budget", encode: "fast", decode: "", code: 1, stderr: "AVRO_VALUE_ENCODE_BUDGET_US must be a positive number"},
		{name: "zero budget", encode: "", decode: "0", code: 1, stderr: "AVRO_VALUE_DECODE_BUDGET_US must be a positive number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AVRO_VALUE_ENCODE_BUDGET_US", tc.encode)
			t.Setenv("AVRO_VALUE_DECODE_BUDGET_US", tc.decode)
			code, stdout, stderr := MustRunBench(t, "bench", "avro-value", "--enforce", "--iterations", "5", "--samples", "1")
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.stderr)
			if tc.code == 0 || strings.Contains(tc.stderr, "median") {
				var report struct {
					Enforcement struct {
						Enforced bool     `json:"enforced"`
						Passed   bool     `json:"passed"`
						Failures []string `json:"failures"`
					} `json:"enforcement"`
				}
				require.NoError(t, json.Unmarshal([]byte(stdout), &report), "the report is printed either way")
				require.True(t, report.Enforcement.Enforced)
				require.Equal(t, tc.code == 0, report.Enforcement.Passed)
			}
		})
	}

	// Without --enforce a run over budget still exits 0.
	t.Setenv("AVRO_VALUE_ENCODE_BUDGET_US", "0.001")
	code, _, stderr := MustRunBench(t, "bench", "avro-value", "--iterations", "5", "--samples", "1")
	require.Equal(t, 0, code, stderr)
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{name: "zero iterations", args: []string{"bench", "avro-value", "--iterations", "0"}, code: 2},
		{name: "bad iterations", args: []string{"bench", "avro-value", "--iterations", "many"}, code: 2},
		{name: "extra argument", args: []string{"bench", "avro-value", "now"}, code: 2},
		{name: "unknown benchmark", args: []string{"bench", "other"}, code: 2},
		{name: "no benchmark", args: []string{"bench"}, code: 2},
		{name: "help", args: []string{"bench", "avro-value", "--help"}, code: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := MustRunBench(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
		})
	}
}
