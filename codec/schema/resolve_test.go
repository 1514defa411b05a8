package schema_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// decimalBranch is the branch a later version of the schema appends in these
// tests: a new, uniquely named record (reference §1.5, schema evolution).
const decimalBranch = `{"type":"record","name":"DecimalValue","fields":[{"name":"decimal","type":"string"}]}`

// futureText returns v1's text with extra branch records appended to the
// union.
func futureText(tb testing.TB, branches ...string) string {
	tb.Helper()
	text := strings.TrimSpace(schema.V1().Text())
	// The text ends with the union's "]", then the closing of the field, of
	// the field list and of the root record.
	const tail = "]}]}"
	require.True(tb, strings.HasSuffix(text, tail))
	return strings.TrimSuffix(text, tail) + "," + strings.Join(branches, ",") + tail
}

// MustParseFuture parses v1 plus the appended DecimalValue branch.
func MustParseFuture(tb testing.TB) *schema.Schema {
	tb.Helper()
	s, err := schema.Parse(futureText(tb, decimalBranch))
	require.NoError(tb, err)
	return s
}

// reorderedText returns a schema whose union holds v1's branches in another
// order. The protocol never reorders released branches; resolution by name
// must still read it.
func reorderedText(tb testing.TB) string {
	tb.Helper()
	text := strings.TrimSpace(schema.V1().Text())
	start := strings.Index(text, `["null",`)
	require.Positive(tb, start)
	end := len(text) - len("]}]}")
	inner := text[start+len(`["null",`) : end]
	// Split the seven branch records at their top-level commas.
	var parts []string
	depth, from := 0, 0
	for i, c := range inner {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, inner[from:i])
				from = i + 1
			}
		}
	}
	parts = append(parts, inner[from:])
	require.Len(tb, parts, 7)
	// MapValue, ArrayValue, …, BooleanValue, then null last.
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return text[:start] + "[" + strings.Join(parts, ",") + `,"null"]}]}`
}

// testDecimal is the Go mapping of the DecimalValue branch for hamba.
type testDecimal struct {
	Decimal string `avro:"decimal"`
}

// hambaWriter returns a hamba API that writes s, with every branch record
// registered, hamba's default block-size headers included.
func hambaWriter(tb testing.TB) avro.API {
	tb.Helper()
	api := avro.Config{}.Freeze()
	for name, typ := range map[string]any{
		"durable_workflow.protocol.BooleanValue": schema.HambaBoolean{},
		"durable_workflow.protocol.LongValue":    schema.HambaLong{},
		"durable_workflow.protocol.DoubleValue":  schema.HambaDouble{},
		"durable_workflow.protocol.BytesValue":   schema.HambaBytes{},
		"durable_workflow.protocol.StringValue":  schema.HambaString{},
		"durable_workflow.protocol.ArrayValue":   schema.HambaList{},
		"durable_workflow.protocol.MapValue":     schema.HambaMap{},
		"durable_workflow.protocol.DecimalValue": testDecimal{},
	} {
		api.Register(name, typ)
	}
	return api
}

// MustHambaDatum writes hv under s with hamba.
func MustHambaDatum(tb testing.TB, s *schema.Schema, hv schema.HambaValue) []byte {
	tb.Helper()
	b, err := hambaWriter(tb).Marshal(s.Avro(), hv)
	require.NoError(tb, err)
	return b
}

func TestResolveReadsAcrossVersions(t *testing.T) {
	v1 := schema.V1()
	future := MustParseFuture(t)
	reordered, err := schema.Parse(reorderedText(t))
	require.NoError(t, err)
	require.NotEqual(t, v1.Fingerprint(), reordered.Fingerprint())

	for _, tc := range sampleValues() {
		t.Run(tc.name, func(t *testing.T) {
			datum, err := codec.AppendDatum(nil, tc.value)
			require.NoError(t, err)
			hv, err := schema.FromValue(tc.value)
			require.NoError(t, err)

			// v1 data under v1 and under the newer reader.
			for _, reader := range []*schema.Schema{v1, future} {
				got, err := schema.Resolve(v1, reader, datum)
				require.NoError(t, err)
				MustSameValue(t, tc.value, got, true)
			}

			// hamba reads the same v1 bytes under the newer schema: the
			// union indexes of v1 are unchanged in it.
			var fromHamba schema.HambaValue
			require.NoError(t, hambaWriter(t).Unmarshal(future.Avro(), datum, &fromHamba))
			got, err := schema.ToValue(fromHamba)
			require.NoError(t, err)
			MustSameValue(t, tc.value, got, false)

			// Data written by hamba under the newer schema, with block-size
			// headers, using only v1 branches: a v1 reader reads it.
			got, err = schema.Resolve(future, v1, MustHambaDatum(t, future, hv))
			require.NoError(t, err)
			MustSameValue(t, tc.value, got, false)

			// Data written under a schema with the branches in another
			// order: every union index differs, and resolution by name
			// still gives the same value.
			rd := MustHambaDatum(t, reordered, hv)
			if tc.value.Kind() != codec.KindNull {
				require.NotEqual(t, datum[0], rd[0], "the union index must differ")
			}
			got, err = schema.Resolve(reordered, v1, rd)
			require.NoError(t, err)
			MustSameValue(t, tc.value, got, false)
		})
	}
}

func TestResolveRejectsNewBranch(t *testing.T) {
	v1 := schema.V1()
	future := MustParseFuture(t)
	decimal := schema.HambaValue{Value: testDecimal{Decimal: "1.50"}}

	tests := []struct {
		name  string
		value schema.HambaValue
	}{
		{name: "top level", value: decimal},
		{name: "in a list", value: schema.HambaValue{Value: schema.HambaList{Items: []schema.HambaValue{{Value: schema.HambaLong{Long: 1}}, decimal}}}},
		{name: "in a map", value: schema.HambaValue{Value: schema.HambaMap{Entries: map[string]schema.HambaValue{"price": decimal}}}},
		{name: "deep", value: schema.HambaValue{Value: schema.HambaList{Items: []schema.HambaValue{{Value: schema.HambaMap{Entries: map[string]schema.HambaValue{"a": {Value: schema.HambaList{Items: []schema.HambaValue{decimal}}}}}}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			datum := MustHambaDatum(t, future, tc.value)

			// A v1 reader does not know the branch.
			_, err := schema.Resolve(future, v1, datum)
			require.ErrorIs(t, err, codec.CodeUnsupportedPayloadSchema)
			require.ErrorContains(t, err, "branch durable_workflow.protocol.DecimalValue is not in reader schema e2a33dff55802237")

			// A reader that knows the branch still cannot give it a Value
			// kind of this codec.
			_, err = schema.Resolve(future, future, datum)
			require.ErrorIs(t, err, codec.CodeUnsupportedPayloadSchema)
			require.ErrorContains(t, err, "has no Value kind")

			// The v1 decoder alone sees an out-of-range union index: a
			// framing error, not a schema error. Resolution is what names
			// the branch.
			_, err = codec.DecodeDatum(datum)
			require.Error(t, err)
			require.NotEqual(t, codec.CodeUnsupportedPayloadSchema, codec.ErrorCode(err))
		})
	}
}

func TestResolveHambaCompatibility(t *testing.T) {
	// hamba's schema-level check agrees: the newer schema can read v1, and
	// v1 cannot read everything the newer schema writes. (hamba's Resolve
	// itself recurses without end on this recursive schema, so Resolve
	// maps union indexes itself.)
	v1 := schema.V1()
	future := MustParseFuture(t)
	sc := avro.NewSchemaCompatibility()
	require.NoError(t, sc.Compatible(future.Avro(), v1.Avro()))
	require.Error(t, sc.Compatible(v1.Avro(), future.Avro()))
}

func TestResolveMalformed(t *testing.T) {
	v1 := schema.V1()
	future := MustParseFuture(t)
	deep := func(n int) []byte {
		b := bytes.Repeat([]byte{0x0c, 0x02}, n) // a list of one item, n times
		b = append(b, 0x00)                      // null
		return append(b, bytes.Repeat([]byte{0x00}, n)...)
	}
	tests := []struct {
		name  string
		datum []byte
		code  codec.Code
	}{
		{name: "empty", datum: nil, code: codec.CodeInvalidPayloadFraming},
		{name: "union index beyond the writer", datum: []byte{0x12}, code: codec.CodeInvalidPayloadFraming},
		{name: "negative union index", datum: []byte{0x01}, code: codec.CodeInvalidPayloadFraming},
		{name: "truncated long", datum: []byte{0x04, 0x80}, code: codec.CodeInvalidPayloadFraming},
		{name: "overlong long", datum: append([]byte{0x04}, bytes.Repeat([]byte{0xff}, 11)...), code: codec.CodeInvalidPayloadFraming},
		{name: "truncated double", datum: []byte{0x06, 0, 0, 0}, code: codec.CodeInvalidPayloadFraming},
		{name: "string longer than input", datum: []byte{0x0a, 0x7e, 'a'}, code: codec.CodeInvalidPayloadFraming},
		{name: "block count beyond input", datum: []byte{0x0c, 0xfe, 0xff, 0xff, 0xff, 0x0f}, code: codec.CodeInvalidPayloadFraming},
		{name: "trailing byte", datum: []byte{0x00, 0x00}, code: codec.CodeInvalidPayloadFraming},
		{name: "invalid utf-8", datum: []byte{0x0a, 0x02, 0xff}, code: codec.CodeInvalidPayloadFraming},
		{name: "boolean byte 2", datum: []byte{0x02, 0x02}, code: codec.CodeInvalidPayloadFraming},
		{name: "non-finite double", datum: []byte{0x06, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, code: codec.CodeInvalidPayloadFraming},
		{name: "65 levels", datum: deep(65), code: codec.CodePayloadLimit},
		{name: "a million levels", datum: deep(1_000_000), code: codec.CodePayloadLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The newer writer forces the translating path; v1 to v1 takes
			// the codec's decoder directly. Both give the same code.
			for _, writer := range []*schema.Schema{future, v1} {
				_, err := schema.Resolve(writer, v1, tc.datum)
				require.Equal(t, tc.code, codec.ErrorCode(err), "writer %s: %v", writer, err)
			}
		})
	}

	got, err := schema.Resolve(future, v1, deep(64))
	require.NoError(t, err)
	require.Equal(t, codec.KindList, got.Kind())

	_, err = schema.Resolve(nil, v1, []byte{0})
	require.Error(t, err)
}

func TestResolveFrame(t *testing.T) {
	v := codec.List(codec.Long(7), codec.String("x"))
	frame, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	got, err := schema.ResolveFrame(MustParseFuture(t), frame)
	require.NoError(t, err)
	MustSameValue(t, v, got, true)

	unknown := bytes.Clone(frame)
	unknown[9] ^= 0xff
	_, err = schema.ResolveFrame(schema.V1(), unknown)
	require.ErrorIs(t, err, codec.CodeUnsupportedPayloadSchema)

	_, err = schema.ResolveFrame(schema.V1(), frame[:9])
	require.ErrorIs(t, err, codec.CodeInvalidPayloadFraming)
	_, err = schema.ResolveFrame(schema.V1(), append([]byte{0xc3, 0x02}, frame[2:]...))
	require.ErrorIs(t, err, codec.CodeInvalidPayloadFraming)
}
