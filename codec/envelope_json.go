package codec

import (
	"bytes"
	"encoding/base64"
	"slices"
)

// envelopePrefix and envelopeSuffix surround the blob of the compact avro
// envelope JSON (reference §4.2).
const (
	envelopePrefix = `{"codec":"avro","blob":"`
	envelopeSuffix = `"}`
)

// AppendEnvelopeJSON appends the compact envelope JSON of v,
// {"codec":"avro","blob":"<standard base64 of the frame>"}, to dst and
// returns the extended slice: the same bytes as EncodeEnvelope followed by
// Envelope.MarshalJSON, without the intermediate Envelope. The frame is
// built in a scratch buffer on the stack (on the heap only for frames over
// 512 bytes) and base64-encoded straight into dst, so with room in dst a
// small value is encoded without allocating.
//
// Errors are those of AppendDatum; on error dst is returned unchanged.
func AppendEnvelopeJSON(dst []byte, v Value) ([]byte, error) {
	var scratch [512]byte
	frame, err := AppendFrame(scratch[:0], v)
	if err != nil {
		return dst, err
	}
	return AppendFrameEnvelopeJSON(dst, frame), nil
}

// AppendFrameEnvelopeJSON appends the compact envelope JSON of frame as it
// is, {"codec":"avro","blob":"<standard base64 of frame>"}, to dst and
// returns the extended slice. It grows dst at most once, to the exact size
// needed, and does not check frame.
func AppendFrameEnvelopeJSON(dst, frame []byte) []byte {
	dst = slices.Grow(dst, len(envelopePrefix)+base64.StdEncoding.EncodedLen(len(frame))+len(envelopeSuffix))
	dst = append(dst, envelopePrefix...)
	dst = base64.StdEncoding.AppendEncode(dst, frame)
	return append(dst, envelopeSuffix...)
}

// ParseEnvelopeFrame reads envelope JSON and returns the frame its blob
// holds, with exactly the results of ParseEnvelope followed by
// Envelope.Frame: the codec is checked before the blob is looked at
// (unsupported_payload_codec), a malformed envelope fails with
// invalid_payload_envelope, and a blob that is not strict standard base64
// fails with invalid_payload_framing. The frame itself is not checked; see
// DecodeFrame.
//
// The compact shape {"codec":"avro","blob":"…"} (either key order, any JSON
// whitespace) whose blob decodes as strict base64 is read by a small scanner
// into one new slice, the only allocation. Anything else, including every
// input that fails, takes the general path of ParseEnvelope and
// Envelope.Frame, so errors and their order are exactly theirs.
func ParseEnvelopeFrame(data []byte) ([]byte, error) {
	return parseEnvelopeFrame(nil, data)
}

// parseEnvelopeFrame is ParseEnvelopeFrame, decoding the frame into dst
// when it has room (the fast path only).
func parseEnvelopeFrame(dst, data []byte) ([]byte, error) {
	// encoding/base64 skips line breaks even in strict mode; apart from
	// them, a blob that decodes holds only base64 characters: no escapes, no
	// control characters, nothing the general path would read otherwise.
	if blob, ok := scanAvroEnvelope(data); ok && bytes.IndexByte(blob, '\n') < 0 && bytes.IndexByte(blob, '\r') < 0 {
		frame := dst[:0]
		if n := base64.StdEncoding.DecodedLen(len(blob)); frame == nil || cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:cap(frame)]
		if n, err := strictBase64.Decode(frame, blob); err == nil {
			return frame[:n], nil
		}
	}
	e, err := ParseEnvelope(data)
	if err != nil {
		return nil, err
	}
	return e.Frame()
}

// scanAvroEnvelope reports whether data has the shape
// {"codec":"avro","blob":"…"}, keys in either order, with optional
// whitespace, and returns the raw bytes between the blob's quotes (which
// may still hold escapes or other characters the caller must reject).
func scanAvroEnvelope(data []byte) (blob []byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	var haveCodec, haveBlob bool
	for n := range 2 {
		i = skipSpace(data, i+1) // after the brace or the comma
		switch {
		case !haveCodec && hasAt(data, i, `"codec"`):
			if i = skipSpace(data, i+len(`"codec"`)); !hasAt(data, i, ":") {
				return nil, false
			}
			if i = skipSpace(data, i+1); !hasAt(data, i, `"avro"`) {
				return nil, false
			}
			i += len(`"avro"`)
			haveCodec = true
		case !haveBlob && hasAt(data, i, `"blob"`):
			if i = skipSpace(data, i+len(`"blob"`)); !hasAt(data, i, ":") {
				return nil, false
			}
			if i = skipSpace(data, i+1); !hasAt(data, i, `"`) {
				return nil, false
			}
			end := bytes.IndexByte(data[i+1:], '"')
			if end < 0 {
				return nil, false
			}
			blob = data[i+1 : i+1+end]
			i += end + 2
			haveBlob = true
		default:
			return nil, false
		}
		sep := byte(',')
		if n == 1 {
			sep = '}'
		}
		if i = skipSpace(data, i); i >= len(data) || data[i] != sep {
			return nil, false
		}
	}
	return blob, skipSpace(data, i+1) == len(data)
}

// hasAt reports whether data holds s at offset i.
func hasAt(data []byte, i int, s string) bool {
	return i <= len(data) && len(data)-i >= len(s) && string(data[i:i+len(s)]) == s
}

// DecodeEnvelopeJSON reads envelope JSON and decodes the value it carries
// with DefaultLimits: the same result as ParseEnvelope followed by
// DecodeEnvelope, with every check in the same order (codec tag, envelope
// shape, strict base64, then the frame checks of DecodeFrameLimits).
//
// It allocates the frame (see ParseEnvelopeFrame) and at most one slice of
// list items and one of map entries; the Value's strings, keys and bytes are
// views of the frame, which no one else holds.
func DecodeEnvelopeJSON(data []byte) (Value, error) {
	frame, err := ParseEnvelopeFrame(data)
	if err != nil {
		return Value{}, err
	}
	return decodeFrame(frame, Limits{}, true)
}
