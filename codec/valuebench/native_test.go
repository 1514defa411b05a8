package valuebench

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name string
		text string
		want any
	}{
		{name: "null", text: `null`, want: nil},
		{name: "integer", text: `7`, want: int64(7)},
		{name: "double with fraction", text: `7.0`, want: Float(7)},
		{name: "double with exponent", text: `1e3`, want: Float(1000)},
		{name: "long beyond 2^53", text: `9007199254740993`, want: int64(9007199254740993)},
		{name: "string", text: `"héllo"`, want: "héllo"},
		{name: "members keep their order", text: `{"z":1,"a":[true,null],"m":{}}`, want: Object{
			{Key: "z", Value: int64(1)}, {Key: "a", Value: []any{true, nil}}, {Key: "m", Value: Object{}},
		}},
		{name: "empty list", text: `[]`, want: []any{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJSON([]byte(tc.text))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	for _, bad := range []string{``, `{`, `[1,]`, `1 2`, `99999999999999999999`, `1e999`} {
		_, err := ParseJSON([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestMarshalNative(t *testing.T) {
	tests := []struct {
		name   string
		native any
		want   string
	}{
		{name: "integral double", native: Float(7), want: `7.0`},
		{name: "double", native: Float(3.25), want: `3.25`},
		{name: "negative zero", native: Float(math.Copysign(0, -1)), want: `-0.0`},
		{name: "large double", native: Float(1e21), want: `1e+21`},
		{name: "small double", native: Float(1e-7), want: `1e-7`},
		{name: "ordered object", native: Object{{Key: "b", Value: int64(1)}, {Key: "a", Value: []any{Float(2), "x"}}}, want: `{"b":1,"a":[2.0,"x"]}`},
		{name: "empty object", native: Object{}, want: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.native)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
			back, err := ParseJSON(b)
			require.NoError(t, err)
			require.Equal(t, tc.native, back)
		})
	}

	_, err := json.Marshal(Float(math.NaN()))
	require.Error(t, err)
}

func TestCorpusCompactJSON(t *testing.T) {
	c, err := LoadCorpus()
	require.NoError(t, err)
	require.Equal(t, "durable_workflow.protocol.Value.benchmark/v1", c.Schema)
	require.Equal(t, "medium", c.Case)

	// The compact JSON of the native value is the corpus text without its
	// whitespace: same member order, same spelling of 7.0.
	var raw struct {
		Value json.RawMessage `json:"value"`
	}
	require.NoError(t, json.Unmarshal(corpusJSON, &raw))
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, raw.Value))
	b, err := json.Marshal(c.Value)
	require.NoError(t, err)
	require.Equal(t, compact.String(), string(b))
	require.Len(t, b, 193)

	obj := c.Value.(Object)
	ratio, _ := obj.Get("ratio")
	require.Equal(t, Float(7), ratio)
	attempt, _ := obj.Get("attempt")
	require.Equal(t, int64(7), attempt)
	_, ok := obj.Get("missing")
	require.False(t, ok)
}
