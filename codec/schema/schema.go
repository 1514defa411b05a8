package schema

import (
	_ "embed"
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/weft-run/weft/codec"
)

// v1Text is the packaged schema file durable_workflow.protocol.Value.v1.avsc,
// byte-identical to the copies in the Durable Workflow SDKs (reference §1.1,
// SHA-256 956ad2c6…5d9986).
//
//go:embed durable_workflow.protocol.Value.v1.avsc
var v1Text string

// ValueName is the full name of the record every version of the schema
// defines at its root.
const ValueName = "durable_workflow.protocol.Value"

// nullBranch names the null branch of the union in Branches.
const nullBranch = "null"

// kindBranches names the union branch of each codec.Kind, in union order
// (reference §1.1). Released branches are never reordered or reused.
var kindBranches = [...]string{
	codec.KindNull:    nullBranch,
	codec.KindBoolean: "durable_workflow.protocol.BooleanValue",
	codec.KindLong:    "durable_workflow.protocol.LongValue",
	codec.KindDouble:  "durable_workflow.protocol.DoubleValue",
	codec.KindBytes:   "durable_workflow.protocol.BytesValue",
	codec.KindString:  "durable_workflow.protocol.StringValue",
	codec.KindList:    "durable_workflow.protocol.ArrayValue",
	codec.KindMap:     "durable_workflow.protocol.MapValue",
}

// Sentinel errors of this package. Payload errors are codec errors instead
// (codec.CodeUnsupportedPayloadSchema, codec.CodeInvalidPayloadFraming, …).
var (
	// ErrInvalidSchema is returned by Parse for text that is not a valid
	// Avro schema of the durable_workflow.protocol.Value shape.
	ErrInvalidSchema = errors.New("invalid value schema")
)

// Schema is one parsed version of the durable_workflow.protocol.Value
// schema, with its Parsing Canonical Form and CRC-64-AVRO fingerprint.
//
// A Schema is immutable and safe for concurrent use.
type Schema struct {
	text      string
	avro      avro.Schema
	canonical string
	fp        [8]byte
	// branches holds the full name of each union branch, "null" for the null
	// branch, in union order.
	branches []string
	// kinds holds, per branch, the codec.Kind it carries, or -1 for a branch
	// this codec cannot represent.
	kinds []int8
}

// v1 is schema version 1, parsed from the packaged file at start-up.
var v1 = mustParseV1()

// mustParseV1 parses the packaged v1 schema and checks it against the codec:
// its branches are the eight kinds in order and its fingerprint is
// codec.Fingerprint. A mismatch is a build defect, so it panics.
func mustParseV1() *Schema {
	s, err := parse(v1Text, nil)
	if err != nil {
		panic("schema: packaged v1 schema: " + err.Error())
	}
	for k, name := range kindBranches {
		if k >= len(s.branches) || s.branches[k] != name || len(s.branches) != len(kindBranches) {
			panic(fmt.Sprintf("schema: packaged v1 schema: branch %d is not %s", k, name))
		}
		s.kinds[k] = int8(k)
	}
	if s.fp != codec.Fingerprint {
		panic(fmt.Sprintf("schema: packaged v1 schema: fingerprint %x, codec expects %x", s.fp, codec.Fingerprint))
	}
	return s
}

// V1 returns schema version 1, the only version of the protocol today
// (reference §1): fingerprint e2a33dff55802237, the same as
// codec.Fingerprint.
func V1() *Schema { return v1 }

// Parse parses the JSON text of a version of the Value schema: a record
// named durable_workflow.protocol.Value whose single field "value" is a
// union of null and named branch records. A branch that reuses one of the
// names of v1 must have exactly its v1 definition, because released branches
// never change (reference §1.5, schema evolution); new kinds are new names.
//
// Parse fails with an error wrapping ErrInvalidSchema. Names are resolved in
// a cache private to the call, so parsing one version never affects another.
func Parse(text string) (*Schema, error) {
	return parse(text, v1)
}

// parse parses text and checks the branches that share a name with ref
// against ref's definition; ref is nil while v1 itself is parsed.
func parse(text string, ref *Schema) (*Schema, error) {
	parsed, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	root, ok := parsed.(*avro.RecordSchema)
	if !ok || root.FullName() != ValueName {
		return nil, fmt.Errorf("%w: the root must be the record %s", ErrInvalidSchema, ValueName)
	}
	fields := root.Fields()
	if len(fields) != 1 || fields[0].Name() != "value" {
		return nil, fmt.Errorf("%w: %s must have exactly one field, named value", ErrInvalidSchema, ValueName)
	}
	union, ok := fields[0].Type().(*avro.UnionSchema)
	if !ok {
		return nil, fmt.Errorf("%w: the field value must be a union", ErrInvalidSchema)
	}
	s := &Schema{
		text:      text,
		avro:      parsed,
		canonical: parsed.String(),
	}
	s.fp = FingerprintOf(s.canonical)
	for i, b := range union.Types() {
		if ref, ok := b.(*avro.RefSchema); ok {
			b = ref.Schema()
		}
		name := nullBranch
		if b.Type() != avro.Null {
			named, ok := b.(avro.NamedSchema)
			if !ok {
				return nil, fmt.Errorf("%w: union branch %d must be null or a named type, not %s", ErrInvalidSchema, i, b.Type())
			}
			name = named.FullName()
		}
		kind := int8(-1)
		if ref != nil {
			if k := ref.branchIndex(name); k >= 0 && ref.kinds[k] >= 0 {
				if want := ref.branchSchema(k); want != b.String() {
					return nil, fmt.Errorf("%w: branch %s differs from its released definition %s", ErrInvalidSchema, name, want)
				}
				kind = ref.kinds[k]
			}
		}
		s.branches = append(s.branches, name)
		s.kinds = append(s.kinds, kind)
	}
	return s, nil
}

// Fingerprint returns the CRC-64-AVRO fingerprint of the schema's Parsing
// Canonical Form in frame (little-endian) byte order (reference §1.3).
func (s *Schema) Fingerprint() [8]byte { return s.fp }

// CanonicalForm returns the schema's Parsing Canonical Form (Avro
// specification: parsing canonical form); 961 bytes for v1 (reference §1.2).
func (s *Schema) CanonicalForm() string { return s.canonical }

// Text returns the schema JSON text the Schema was parsed from.
func (s *Schema) Text() string { return s.text }

// Avro returns the schema as parsed by hamba/avro. It must not be modified.
func (s *Schema) Avro() avro.Schema { return s.avro }

// Branches returns the full names of the union branches in union order,
// "null" for the null branch. The caller owns the returned slice.
func (s *Schema) Branches() []string { return append([]string(nil), s.branches...) }

// String returns the schema's name and fingerprint, as
// "durable_workflow.protocol.Value@e2a33dff55802237".
func (s *Schema) String() string { return fmt.Sprintf("%s@%x", ValueName, s.fp) }

// branchIndex returns the union index of the branch called name, or -1.
func (s *Schema) branchIndex(name string) int {
	for i, b := range s.branches {
		if b == name {
			return i
		}
	}
	return -1
}

// branchSchema returns the canonical text of branch i.
func (s *Schema) branchSchema(i int) string {
	union := s.avro.(*avro.RecordSchema).Fields()[0].Type().(*avro.UnionSchema)
	b := union.Types()[i]
	if ref, ok := b.(*avro.RefSchema); ok {
		b = ref.Schema()
	}
	return b.String()
}

// hexFingerprint formats fp as 16 lowercase hex digits, as error messages
// print it (reference §1.3).
func hexFingerprint(fp [8]byte) string {
	return fmt.Sprintf("%x", fp[:])
}
