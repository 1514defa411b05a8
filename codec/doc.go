// Package codec encodes and decodes durable values in the Avro Value protocol
// of Durable Workflow 2.0: every workflow input, result, signal, query,
// update and history payload is one value of the fixed schema
// durable_workflow.protocol.Value v1, framed as Avro single-object bytes and
// carried in a {"codec":"avro","blob":…} envelope.
//
// The package is standard library only and builds for GOOS=wasip1, so the
// host and guest SDKs share the same bytes. It never logs. Parsing the
// schema, its canonical form and fingerprint, and schema resolution live in
// the host-only package codec/schema.
//
// # Values
//
// A Value is one of eight kinds, in union order: null, boolean, long (int64),
// double (finite float64), bytes, string (UTF-8), list and map. Maps have
// string keys and keep their insertion order, which is also their wire order,
// so a decoded value re-encodes to the same bytes. Build values with Null,
// Bool, Long, Double, Bytes, String, List and Map; compare them with Equal,
// which compares doubles by bits (-0.0 is not 0.0).
//
// # Wire format
//
// A frame is the 2-byte Magic C3 01, the 8-byte Fingerprint e2a33dff55802237
// (CRC-64-AVRO of the schema's canonical form, little-endian), then the Avro
// binary datum: the union index as a zig-zag varint, then the branch's field
// (Avro Value protocol: wire format; reference §1). AppendDatum and
// AppendFrame append into a caller's buffer without allocating; EncodeFrame
// allocates the frame once. Lists and maps are written as one block and a
// 00 terminator, as every SDK does.
//
// DecodeFrame and DecodeDatum accept every valid Avro encoding of the schema,
// including several blocks per list or map and blocks with a negative count
// followed by a byte size. Decoding first validates the whole datum without
// allocating (ValidateFrame does only that), then builds the Value with a
// handful of allocations: one slice for all list items, one for all map
// entries, and one buffer for the contents of all strings, keys and bytes
// values. Decoding an envelope needs no such buffer: the frame decoded from
// base64 belongs to the Value alone, and its strings and bytes are views of
// it. Parts of a decoded Value share that memory, so keeping any part of it
// keeps all of it alive.
//
// The envelope's blob is strict standard base64: padding required, no line
// breaks, zero trailing bits. EncodeEnvelope and DecodeEnvelope go from a
// Value to an Envelope and back; ParseEnvelope reads one from JSON and
// Envelope.MarshalJSON writes {"codec":"avro","blob":"…"}.
//
// # Fast paths
//
// The hot paths go between envelope JSON and values directly.
// AppendEnvelopeJSON writes the envelope JSON of a Value into a caller's
// buffer, base64-encoding the frame from a stack scratch buffer, and
// AppendFrameEnvelopeJSON does the same for a ready frame. DecodeEnvelopeJSON
// reads envelope JSON back into a Value and ParseEnvelopeFrame into a frame:
// a small scanner reads the compact shape and decodes the blob into the one
// slice the Value then owns, and anything unusual takes the general
// ParseEnvelope path, so results, error codes and their order are the same
// as ParseEnvelope followed by DecodeEnvelope.
//
// Adapters from other types need not build a Value at all. An Encoder takes
// a stream of calls (Long, String, BeginMap, Key, End, …) and writes the
// datum, frame or envelope JSON directly, with the checks of AppendDatum and
// of the call order; a Decoder validates a whole datum, frame or envelope as
// the decode functions do, then hands out its values one by one (Next,
// More, Key, String, …), so an adapter builds its own types straight from
// the wire. Both are reusable; once warm, an Encoder does not allocate, and
// a Decoder allocates one buffer per value, for the contents of all its
// strings, keys and bytes.
//
// # Hostile input
//
// Decoders never trust a claimed length or count: a string or bytes length
// must fit the remaining input, and a block count may not exceed the
// remaining bytes (every item takes at least one byte, every map entry two),
// so nothing is allocated beyond what the input could hold. Nesting is
// walked with an explicit stack and bounded by Limits.MaxDepth (default 64
// levels of lists and maps); frames are bounded by Limits.MaxSize (default
// 16 MiB). A malformed input returns an error, never a panic. Encoders and
// the projection apply the default depth limit too.
//
// # Errors
//
// Every error is an *Error whose text starts with its Code, as
// "<code>: <explanation>", and matches that code with errors.Is; ErrorCode
// extracts it. Checks run in the SDKs' order (reference §1.4):
//
//   - unsupported_payload_codec: the codec tag is not exactly "avro", checked
//     before anything is decoded; or the blob holds a JSON document;
//   - invalid_payload_framing: bad base64, a frame shorter than 10 bytes or
//     without the magic, a truncated or malformed datum, a union index outside
//     0..7, a boolean byte other than 00 or 01, a long over 10 bytes or
//     beyond int64, a non-finite double, invalid UTF-8, trailing bytes;
//   - unsupported_payload_schema: an unknown fingerprint;
//   - invalid_payload_envelope: an envelope without both codec and blob as
//     strings, or with other keys;
//   - non_finite_float, invalid_map_key, integer_overflow: values that cannot
//     be written;
//   - payload_limit_exceeded: the depth or size limit;
//   - invalid_projection: text that is not a valid typed JSON projection.
//
// # Typed JSON projection
//
// MarshalProjection shows a Value as ordinary JSON where that is lossless,
// and ParseProjection reads it back (BRIEF §3.1; reference §3):
//
//   - longs are JSON integers over the whole int64 range; doubles always have
//     a fraction or an exponent (7.0, -0.0, 1e+300) and round-trip exactly;
//   - bytes are {"$type":"bytes","base64":"AP8="};
//   - maps are JSON objects in entry order, except empty maps, maps with a
//     numeric-looking key such as "0" or "-5", maps with a key that starts
//     with "$", and maps that repeat a key, which are
//     {"$type":"map","entries":[{"key":"0","value":…}]}.
//
// When parsing, a plain JSON object must not repeat a key or use a key
// starting with "$"; such maps need the typed form. So decoding a frame,
// projecting it and parsing the projection gives back the same bytes.
package codec
