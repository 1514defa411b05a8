package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// CodecAvro is the only payload codec tag of the protocol.
const CodecAvro = "avro"

// Envelope is the JSON carrier of a durable value:
// {"codec":"avro","blob":"<standard base64 of the frame>"} (reference §4.2).
type Envelope struct {
	Codec string `json:"codec"`
	Blob  string `json:"blob"`
}

// strictBase64 is standard base64 with padding that rejects non-zero
// trailing bits, so every blob has exactly one accepted spelling.
var strictBase64 = base64.StdEncoding.Strict()

// EncodeEnvelope encodes v as a frame and returns its avro envelope. Errors
// are those of AppendDatum.
func EncodeEnvelope(v Value) (Envelope, error) {
	var scratch [512]byte
	buf := scratch[:0]
	if n := HeaderSize + datumSize(v, 0); n > len(scratch) {
		buf = make([]byte, 0, n)
	}
	frame, err := AppendFrame(buf, v)
	if err != nil {
		return Envelope{}, err
	}
	return EnvelopeOf(frame), nil
}

// EnvelopeOf returns the avro envelope of frame as it is, without checking
// it.
func EnvelopeOf(frame []byte) Envelope {
	var sb strings.Builder
	sb.Grow(base64.StdEncoding.EncodedLen(len(frame)))
	// Encode in chunks through a stack buffer, so the blob string is the
	// only allocation. Chunks are multiples of 3 bytes: no inner padding.
	var chunk [768]byte
	const step = len(chunk) / 4 * 3
	for len(frame) > 0 {
		n := min(step, len(frame))
		m := base64.StdEncoding.EncodedLen(n)
		base64.StdEncoding.Encode(chunk[:m], frame[:n])
		sb.Write(chunk[:m])
		frame = frame[n:]
	}
	return Envelope{Codec: CodecAvro, Blob: sb.String()}
}

// CheckCodec returns nil if codec is exactly "avro", and an
// unsupported_payload_codec error otherwise: json, unknown, empty or
// wrong-case tags are all rejected (reference §1.4 step 1).
func CheckCodec(codec string) error {
	if codec == CodecAvro {
		return nil
	}
	return unsupportedCodec(strconv.Quote(codec))
}

// Frame checks the codec tag first (anything but "avro" fails with
// unsupported_payload_codec, before the blob is looked at), then decodes the
// blob as strict standard base64: padding required, no line breaks or other
// characters outside the alphabet, zero trailing bits. Bad base64 fails with
// invalid_payload_framing. The frame itself is not checked; see DecodeFrame.
func (e Envelope) Frame() ([]byte, error) {
	if err := CheckCodec(e.Codec); err != nil {
		return nil, err
	}
	// encoding/base64 skips \r and \n even in strict mode; the protocol's
	// decoders do not.
	if strings.ContainsAny(e.Blob, "\r\n") {
		return nil, base64Error(e.Blob)
	}
	frame, err := strictBase64.DecodeString(e.Blob)
	if err != nil {
		return nil, base64Error(e.Blob)
	}
	return frame, nil
}

// base64Error is the invalid_payload_framing error for a blob that is not
// strict base64, with the Python and PHP SDKs' hint when it looks like JSON.
func base64Error[T string | []byte](blob T) error {
	if len(blob) > 0 && strings.IndexByte(`{["-tfn0123456789`, blob[0]) >= 0 {
		return errorf(CodeInvalidPayloadFraming, "expected strict base64 Avro single-object bytes; payload bytes look like JSON, not base64-encoded Avro")
	}
	return errorf(CodeInvalidPayloadFraming, "expected strict base64 Avro single-object bytes")
}

// DecodeEnvelope checks e's codec, decodes its blob (see Envelope.Frame) and
// decodes the frame with DefaultLimits (see DecodeFrameLimits).
func DecodeEnvelope(e Envelope) (Value, error) {
	frame, err := e.Frame()
	if err != nil {
		return Value{}, err
	}
	return decodeFrame(frame, Limits{}, true)
}

// MarshalJSON returns the compact envelope, codec first:
// {"codec":"avro","blob":"…"}.
func (e Envelope) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(`{"codec":"","blob":""}`)+len(e.Codec)+len(e.Blob))
	b = append(b, `{"codec":`...)
	b = appendJSONString(b, e.Codec)
	b = append(b, `,"blob":`...)
	b = appendJSONString(b, e.Blob)
	return append(b, '}'), nil
}

// ParseEnvelope parses an envelope from a JSON object, strictly:
//
//   - the codec is checked first: a missing, null, non-string or other than
//     "avro" codec fails with unsupported_payload_codec, whatever the rest of
//     the object holds (reference §1.4 step 1);
//   - text that is not one JSON object, a missing or non-string blob, a
//     duplicate key, or any key besides codec and blob fails with
//     invalid_payload_envelope.
//
// The blob is not decoded; see Envelope.Frame and DecodeEnvelope.
func ParseEnvelope(data []byte) (Envelope, error) {
	if codec, blob, ok := scanEnvelope(data); ok {
		if string(codec) != CodecAvro {
			return Envelope{}, CheckCodec(string(codec))
		}
		return Envelope{Codec: CodecAvro, Blob: string(blob)}, nil
	}
	return parseEnvelopeSlow(data)
}

// scanEnvelope is the fast path of ParseEnvelope for the common shape: one
// object with exactly the keys codec and blob, in either order, each a
// string of printable ASCII without escapes, with optional whitespace. For
// any other input it reports false and ParseEnvelope takes the general path,
// which gives the same result for the inputs accepted here. The returned
// slices are views of data.
func scanEnvelope(data []byte) (codec, blob []byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, nil, false
	}
	var haveCodec, haveBlob bool
	for n := 0; n < 2; n++ {
		if n == 1 {
			if i = skipSpace(data, i); i >= len(data) || data[i] != ',' {
				return nil, nil, false
			}
		}
		var k, v []byte
		if k, i, ok = scanSimpleString(data, skipSpace(data, i+1)); !ok {
			return nil, nil, false
		}
		if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
			return nil, nil, false
		}
		if v, i, ok = scanSimpleString(data, skipSpace(data, i+1)); !ok {
			return nil, nil, false
		}
		switch {
		case string(k) == "codec" && !haveCodec:
			haveCodec, codec = true, v
		case string(k) == "blob" && !haveBlob:
			haveBlob, blob = true, v
		default:
			return nil, nil, false
		}
	}
	if i = skipSpace(data, i); i >= len(data) || data[i] != '}' {
		return nil, nil, false
	}
	if skipSpace(data, i+1) != len(data) {
		return nil, nil, false
	}
	return codec, blob, true
}

// scanSimpleString reads a JSON string at data[i:] made only of printable
// ASCII other than backslash, and returns its contents and the offset after
// it.
func scanSimpleString(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, j, false
		}
	}
	return nil, len(data), false
}

// skipSpace returns the offset of the first non-whitespace byte at or after i.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// parseEnvelopeSlow is the general path of ParseEnvelope.
func parseEnvelopeSlow(data []byte) (Envelope, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return Envelope{}, envelopeSyntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "payload envelope must be a JSON object with codec and blob")
	}
	var codecRaw, blobRaw json.RawMessage
	var dup, other string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Envelope{}, envelopeSyntax(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Envelope{}, envelopeSyntax(err)
		}
		switch {
		case key == "codec" && codecRaw == nil:
			codecRaw = raw
		case key == "blob" && blobRaw == nil:
			blobRaw = raw
		case key == "codec" || key == "blob":
			if dup == "" {
				dup = key
			}
			if key == "codec" {
				// Every codec value must pass, not only the first.
				if err := checkRawCodec(raw); err != nil {
					return Envelope{}, err
				}
			}
		default:
			if other == "" {
				other = key
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Envelope{}, envelopeSyntax(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "unexpected data after the payload envelope object")
	}
	if err := checkRawCodec(codecRaw); err != nil {
		return Envelope{}, err
	}
	switch {
	case dup != "":
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "payload envelope has key %q more than once", dup)
	case other == "external_storage":
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "external payload references are not supported; the envelope must carry an inline blob")
	case other != "":
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "payload envelope has unknown key %q; it must have exactly codec and blob", other)
	case blobRaw == nil:
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "payload envelope has no blob")
	}
	var blob string
	if blobRaw[0] != '"' || json.Unmarshal(blobRaw, &blob) != nil {
		return Envelope{}, errorf(CodeInvalidPayloadEnvelope, "payload envelope blob must be a string, got %s", clip(string(blobRaw)))
	}
	return Envelope{Codec: CodecAvro, Blob: blob}, nil
}

// checkRawCodec checks a codec value as raw JSON (nil when the key is
// missing).
func checkRawCodec(raw json.RawMessage) error {
	if raw == nil {
		return unsupportedCodec("(missing)")
	}
	var codec string
	if raw[0] != '"' || json.Unmarshal(raw, &codec) != nil {
		return unsupportedCodec(clip(string(raw)))
	}
	return CheckCodec(codec)
}

// envelopeSyntax wraps a JSON syntax error of an envelope.
func envelopeSyntax(err error) error {
	if errors.Is(err, io.EOF) {
		return errorf(CodeInvalidPayloadEnvelope, "payload envelope is empty or truncated JSON")
	}
	return errorf(CodeInvalidPayloadEnvelope, "payload envelope is not valid JSON: %v", err)
}
