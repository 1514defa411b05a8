package valuebench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	r, err := Run(t.Context(), Config{Iterations: 20, Samples: 3, Enforce: true})
	require.NoError(t, err)

	require.Equal(t, "weft-go", r.Implementation)
	require.Equal(t, CorpusInfo{Schema: "durable_workflow.protocol.Value.benchmark/v1", Case: "medium", SHA256: CorpusSHA256}, r.Corpus)
	require.Equal(t, 20, r.Iterations)
	require.Equal(t, 3, r.Samples)
	require.Equal(t, Sizes{
		PlainJSON:       PlainJSONSizes{Raw: 193, HTTPEnvelope: 249},
		OldJSONWrapper:  OldJSONWrapperSizes{RawDatum: 196, Framed: 197, HTTPEnvelope: 290},
		FixedTypedValue: FixedTypedValueSizes{RawDatum: 154, SingleObject: 164, HTTPEnvelope: 246},
	}, r.SizesBytes)
	require.Equal(t, WireContract{TypedWireSHA256: "8e0ec373f4a8163830bc319cbc55e242e35bed2e7fd4dba2d7ba12fa62bd42e3", Passed: true}, r.WireContract)
	require.Equal(t, Budgets{Encode: 75, Decode: 60}, r.BudgetsUS)
	require.True(t, r.Enforcement.Enforced)

	for _, name := range []string{
		PlainJSONEncode, PlainJSONDecode, OldJSONWrapperEncode, OldJSONWrapperDecode,
		FixedTypedValueEncode, FixedTypedValueDecode, HambaGenericEncode, HambaGenericDecode,
	} {
		l := r.LatencyUS.byName(name)
		require.NotNil(t, l, name)
		require.Len(t, l.SamplesUS, 3, name)
		require.Positive(t, l.MedianUS, name)
		require.Contains(t, r.Paths, name)
	}
	require.InDelta(t, r.LatencyUS.FixedTypedValueEncode.MedianUS/r.LatencyUS.PlainJSONEncode.MedianUS,
		r.Ratios.EncodeVsPlainJSON.Ratio, 0.001)
	require.InDelta(t, r.LatencyUS.FixedTypedValueDecode.MedianUS/r.LatencyUS.HambaGenericDecode.MedianUS,
		r.Ratios.DecodeVsHambaGeneric.Ratio, 0.001)
	require.InDelta(t, r.LatencyUS.FixedTypedValueEncode.MedianUS/r.LatencyUS.HambaGenericEncode.MedianUS,
		r.Ratios.EncodeVsHambaGeneric.Ratio, 0.001)
	require.Equal(t, 0.2, r.Ratios.EncodeVsHambaGeneric.Target)

	// The report serialises with the Rust SDK's keys.
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var shape map[string]any
	require.NoError(t, json.Unmarshal(b, &shape))
	for _, key := range []string{"implementation", "corpus", "iterations", "sizes_bytes", "latency_us", "ratios", "budgets_us", "enforcement"} {
		require.Contains(t, shape, key)
	}
	require.Equal(t, map[string]any{"raw": 193.0, "http_envelope": 249.0}, shape["sizes_bytes"].(map[string]any)["plain_json"])
	require.Contains(t, shape["latency_us"].(map[string]any)["fixed_typed_value_decode"], "median_us")
}

func TestRunBudgets(t *testing.T) {
	tests := []struct {
		name     string
		encode   float64
		decode   float64
		passed   bool
		failures int
	}{
		{name: "generous", encode: 1e6, decode: 1e6, passed: true},
		{name: "encode over", encode: 0.001, decode: 1e6, failures: 1},
		{name: "both over", encode: 0.001, decode: 0.001, failures: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(t.Context(), Config{Iterations: 5, Samples: 1, EncodeBudgetUS: tc.encode, DecodeBudgetUS: tc.decode})
			require.NoError(t, err)
			require.Equal(t, tc.passed, r.Enforcement.Passed)
			require.Len(t, r.Enforcement.Failures, tc.failures)
			require.False(t, r.Enforcement.Enforced)
		})
	}

	_, err := Run(t.Context(), Config{Iterations: -1})
	require.Error(t, err)
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Run(ctx, Config{Iterations: 1000, Samples: 1})
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunChecksPaths(t *testing.T) {
	// Another value gives other sizes: the run refuses to report them.
	s, err := newSuite(Object{{Key: "a", Value: int64(1)}})
	require.NoError(t, err)
	require.ErrorContains(t, s.check(&Report{}), "differ from the published")

	// A decode input that holds another value fails its round trip.
	c, err := LoadCorpus()
	require.NoError(t, err)
	s, err = newSuite(c.Value)
	require.NoError(t, err)
	require.NoError(t, s.check(&Report{}))
	s.hambaEnv, err = (&suite{native: Object{{Key: "x", Value: nil}}}).typedEncode()
	require.NoError(t, err)
	require.ErrorContains(t, s.check(&Report{}), "hamba_generic_decode does not give back the corpus value")
}
