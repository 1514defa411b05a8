package schema_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// v1SHA256 is the SHA-256 of the packaged schema file, the same in every SDK
// (reference §1.1).
const v1SHA256 = "956ad2c63f8ab6ea04eb1a0832c234bb6ec1c6267946e454b2c316310d5a9986"

// v1Canonical is the Parsing Canonical Form of v1 as reference §1.2 derives
// it from the Avro specification's rules.
const v1Canonical = `{"name":"durable_workflow.protocol.Value","type":"record","fields":[{"name":"value","type":["null",{"name":"durable_workflow.protocol.BooleanValue","type":"record","fields":[{"name":"boolean","type":"boolean"}]},{"name":"durable_workflow.protocol.LongValue","type":"record","fields":[{"name":"long","type":"long"}]},{"name":"durable_workflow.protocol.DoubleValue","type":"record","fields":[{"name":"double","type":"double"}]},{"name":"durable_workflow.protocol.BytesValue","type":"record","fields":[{"name":"bytes","type":"bytes"}]},{"name":"durable_workflow.protocol.StringValue","type":"record","fields":[{"name":"string","type":"string"}]},{"name":"durable_workflow.protocol.ArrayValue","type":"record","fields":[{"name":"items","type":{"type":"array","items":"durable_workflow.protocol.Value"}}]},{"name":"durable_workflow.protocol.MapValue","type":"record","fields":[{"name":"entries","type":{"type":"map","values":"durable_workflow.protocol.Value"}}]}]}]}`

func TestPackagedSchemaFile(t *testing.T) {
	sum := sha256.Sum256([]byte(schema.V1().Text()))
	require.Equal(t, v1SHA256, hex.EncodeToString(sum[:]))
	require.True(t, strings.HasSuffix(schema.V1().Text(), "}\n"), "the file is one line ending in a newline")
}

func TestCanonicalForm(t *testing.T) {
	s := schema.V1()
	require.Len(t, s.CanonicalForm(), 961)
	require.Equal(t, v1Canonical, s.CanonicalForm())
	// Parsing the canonical form again gives the same canonical form.
	again, err := schema.Parse(s.CanonicalForm())
	require.NoError(t, err)
	require.Equal(t, s.CanonicalForm(), again.CanonicalForm())
	require.Equal(t, s.Fingerprint(), again.Fingerprint())
}

func TestFingerprint(t *testing.T) {
	v1 := schema.V1()
	require.Equal(t, uint64(0x37228055ff3da3e2), schema.CRC64Avro([]byte(v1.CanonicalForm())))
	require.Equal(t, [8]byte{0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}, v1.Fingerprint())
	require.Equal(t, codec.Fingerprint, v1.Fingerprint())
	require.Equal(t, "durable_workflow.protocol.Value@e2a33dff55802237", v1.String())

	// The Avro specification defines the fingerprint of no bytes as EMPTY.
	require.Equal(t, uint64(0xc15d213aa4d7a795), schema.CRC64Avro(nil))

	// Our CRC-64-AVRO agrees with hamba's over schemas of every shape, in
	// both byte orders.
	tests := []struct {
		name string
		text string
	}{
		{name: "null", text: `"null"`},
		{name: "int", text: `"int"`},
		{name: "string", text: `"string"`},
		{name: "array", text: `{"type":"array","items":"long"}`},
		{name: "map", text: `{"type":"map","values":["null","double"]}`},
		{name: "enum", text: `{"type":"enum","name":"E","namespace":"n","symbols":["A","B"]}`},
		{name: "fixed", text: `{"type":"fixed","name":"F","size":16}`},
		{name: "record", text: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"array","items":"R"}}]}`},
		{name: "value v1", text: v1.Text()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := avro.ParseWithCache(tc.text, "", &avro.SchemaCache{})
			require.NoError(t, err)
			le, err := s.FingerprintUsing(avro.CRC64AvroLE)
			require.NoError(t, err)
			be, err := s.FingerprintUsing(avro.CRC64Avro)
			require.NoError(t, err)
			fp := schema.FingerprintOf(s.String())
			require.Equal(t, le, fp[:])
			require.Equal(t, binary.BigEndian.Uint64(be), schema.CRC64Avro([]byte(s.String())))
		})
	}
}

func TestLookup(t *testing.T) {
	s, err := schema.Lookup(codec.Fingerprint)
	require.NoError(t, err)
	require.Same(t, schema.V1(), s)
	require.Equal(t, []*schema.Schema{schema.V1()}, schema.Known())

	future := MustParseFuture(t)
	fp := future.Fingerprint()
	_, err = schema.Lookup(fp)
	require.ErrorIs(t, err, codec.CodeUnsupportedPayloadSchema)
	require.EqualError(t, err, "unsupported_payload_schema: unknown CRC-64-AVRO fingerprint "+hex.EncodeToString(fp[:]))

	_, err = schema.Lookup([8]byte{})
	require.Equal(t, codec.CodeUnsupportedPayloadSchema, codec.ErrorCode(err))
}

func TestParse(t *testing.T) {
	v1 := schema.V1()
	require.Equal(t, []string{
		"null",
		"durable_workflow.protocol.BooleanValue",
		"durable_workflow.protocol.LongValue",
		"durable_workflow.protocol.DoubleValue",
		"durable_workflow.protocol.BytesValue",
		"durable_workflow.protocol.StringValue",
		"durable_workflow.protocol.ArrayValue",
		"durable_workflow.protocol.MapValue",
	}, v1.Branches())

	future := MustParseFuture(t)
	require.Equal(t, append(v1.Branches(), "durable_workflow.protocol.DecimalValue"), future.Branches())
	require.NotEqual(t, v1.Fingerprint(), future.Fingerprint())
	require.Equal(t, schema.FingerprintOf(future.CanonicalForm()), future.Fingerprint())
	// Parsing a later version with the same names leaves v1 untouched.
	require.Equal(t, v1Canonical, schema.V1().CanonicalForm())
	require.Equal(t, codec.Fingerprint, schema.V1().Fingerprint())

	tests := []struct {
		name string
		text string
	}{
		{name: "not json", text: `{"type":`},
		{name: "not a record", text: `"string"`},
		{name: "wrong name", text: strings.Replace(v1.Text(), `"name":"Value"`, `"name":"Other"`, 1)},
		{name: "wrong namespace", text: strings.Replace(v1.Text(), `"namespace":"durable_workflow.protocol"`, `"namespace":"x"`, 1)},
		{name: "two fields", text: `{"type":"record","name":"Value","namespace":"durable_workflow.protocol","fields":[{"name":"value","type":["null"]},{"name":"x","type":"int"}]}`},
		{name: "field not named value", text: `{"type":"record","name":"Value","namespace":"durable_workflow.protocol","fields":[{"name":"v","type":["null"]}]}`},
		{name: "field not a union", text: `{"type":"record","name":"Value","namespace":"durable_workflow.protocol","fields":[{"name":"value","type":"string"}]}`},
		{name: "unnamed branch", text: `{"type":"record","name":"Value","namespace":"durable_workflow.protocol","fields":[{"name":"value","type":["null","string"]}]}`},
		{name: "released branch redefined", text: strings.Replace(v1.Text(), `{"name":"boolean","type":"boolean"}`, `{"name":"boolean","type":"long"}`, 1)},
		{name: "released branch field renamed", text: strings.Replace(v1.Text(), `{"name":"items","type"`, `{"name":"values","type"`, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Parse(tc.text)
			require.ErrorIs(t, err, schema.ErrInvalidSchema)
		})
	}
}

func TestAvroSchema(t *testing.T) {
	// The hamba schema is the parsed packaged file: its canonical form and
	// fingerprint are the ones the package reports.
	s := schema.V1().Avro()
	require.Equal(t, schema.V1().CanonicalForm(), s.String())
	fp, err := s.FingerprintUsing(avro.CRC64AvroLE)
	require.NoError(t, err)
	require.Equal(t, codec.Fingerprint[:], fp)
}
