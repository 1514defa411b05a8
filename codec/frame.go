package codec

import (
	"encoding/hex"
	"encoding/json"
)

// Magic is the two-byte marker that starts every Avro single-object frame
// (Avro Value protocol: wire format).
var Magic = [2]byte{0xc3, 0x01}

// Fingerprint is the CRC-64-AVRO fingerprint of schema v1 in wire order
// (little-endian), the bytes 2..9 of every frame: e2a33dff55802237
// (reference §1.3).
var Fingerprint = [8]byte{0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}

// HeaderSize is the length of the frame header: magic and fingerprint.
const HeaderSize = 10

// header is Magic followed by Fingerprint; decoding compares against it, not
// against the exported variables.
const header = "\xc3\x01\xe2\xa3\x3d\xff\x55\x80\x22\x37"

// AppendFrame appends the single-object frame of v (header, then datum) to
// dst and returns the extended slice. It does not allocate when dst has
// room. Errors are those of AppendDatum; on error dst is returned unchanged.
func AppendFrame(dst []byte, v Value) ([]byte, error) {
	n := len(dst)
	out, err := appendValue(append(dst, header...), v, 0)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// EncodeFrame returns the single-object frame of v in a new slice of exactly
// the right size. Errors are those of AppendDatum.
func EncodeFrame(v Value) ([]byte, error) {
	return AppendFrame(make([]byte, 0, HeaderSize+datumSize(v, 0)), v)
}

// DecodeFrame decodes a single-object frame with DefaultLimits. See
// DecodeFrameLimits.
func DecodeFrame(frame []byte) (Value, error) {
	return DecodeFrameLimits(frame, Limits{})
}

// DecodeFrameLimits decodes a single-object frame, checking in the SDKs'
// order (reference §1.4):
//
//  1. bytes that are a JSON document fail with unsupported_payload_codec
//     (raw JSON mislabelled as Avro, as the Rust and PHP SDKs check);
//  2. a frame shorter than HeaderSize or without the C3 01 magic fails with
//     invalid_payload_framing;
//  3. another fingerprint fails with unsupported_payload_schema;
//  4. a frame over l.MaxSize fails with payload_limit_exceeded;
//  5. the datum is decoded as DecodeDatum does, with l.MaxDepth.
//
// A real frame never parses as JSON (C3 is not valid UTF-8), so step 1 runs
// only for input that already failed step 2. The returned Value does not
// alias frame.
func DecodeFrameLimits(frame []byte, l Limits) (Value, error) {
	return decodeFrame(frame, l, false)
}

// decodeFrame is DecodeFrameLimits; with owned set, bytes values may alias
// frame.
func decodeFrame(frame []byte, l Limits, owned bool) (Value, error) {
	if err := checkHeader(frame, l); err != nil {
		return Value{}, err
	}
	return decodeDatum(frame[HeaderSize:], l, owned)
}

// ValidateFrame runs every check of DecodeFrameLimits on frame without
// building a Value: it returns nil exactly when DecodeFrameLimits would
// succeed. It does not allocate on success.
func ValidateFrame(frame []byte, l Limits) error {
	if err := checkHeader(frame, l); err != nil {
		return err
	}
	l = l.withDefaults()
	_, err := scan(frame[HeaderSize:], l.MaxDepth)
	return err
}

// checkHeader runs the frame checks that come before the datum.
func checkHeader(frame []byte, l Limits) error {
	if len(frame) < HeaderSize || frame[0] != header[0] || frame[1] != header[1] {
		if json.Valid(frame) {
			return errorf(CodeUnsupportedPayloadCodec, "payload bytes are a JSON document, not an Avro single-object frame; "+
				"JSON remains the HTTP document transport, not a workflow payload codec")
		}
		if len(frame) < HeaderSize {
			return errorf(CodeInvalidPayloadFraming, "expected Avro single-object magic c301 and a %d-byte header, got %d bytes", HeaderSize, len(frame))
		}
		return errorf(CodeInvalidPayloadFraming, "expected Avro single-object magic c301, got %s", hex.EncodeToString(frame[:2]))
	}
	if string(frame[2:HeaderSize]) != header[2:] {
		return errorf(CodeUnsupportedPayloadSchema, "unknown CRC-64-AVRO fingerprint %s", hex.EncodeToString(frame[2:HeaderSize]))
	}
	if l = l.withDefaults(); len(frame) > l.MaxSize {
		return sizeError(len(frame), l.MaxSize)
	}
	return nil
}
