package schema

import "github.com/weft-run/weft/codec"

// registry maps each known fingerprint to its schema. It is built once at
// start-up and never changes, so it is read without locks. Today it holds v1
// only: a frame names its writer schema by fingerprint, and there is no
// fallback for unknown ones (reference §1.3).
var registry = map[[8]byte]*Schema{
	v1.fp: v1,
}

// Lookup returns the schema whose CRC-64-AVRO fingerprint (frame byte order)
// is fp. An unknown fingerprint fails with an error of code
// codec.CodeUnsupportedPayloadSchema whose message names it, as
// "unsupported_payload_schema: unknown CRC-64-AVRO fingerprint 0011…".
//
// Lookup is safe for concurrent use.
func Lookup(fp [8]byte) (*Schema, error) {
	if s, ok := registry[fp]; ok {
		return s, nil
	}
	return nil, &codec.Error{
		Code:    codec.CodeUnsupportedPayloadSchema,
		Message: "unknown CRC-64-AVRO fingerprint " + hexFingerprint(fp),
	}
}

// Known returns the schemas of the registry, oldest version first. The
// caller owns the returned slice.
func Known() []*Schema { return []*Schema{v1} }
