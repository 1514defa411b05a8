package valuebench

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The retired JSON-in-Avro wrapper, measured as a baseline only and never a
// runtime path (reference §5): a 0x00 byte, then the Avro datum of
//
//	{"type":"record","name":"Payload","namespace":"durable_workflow",
//	 "fields":[{"name":"json","type":"string"},{"name":"version","type":"int","default":1}]}
//
// holding the compact JSON of the value. For the corpus the datum is 196
// bytes: a two-byte length, 193 bytes of JSON and the version.
const wrapperVersion = 1

// JSONEnvelope is the {codec, blob} object the JSON baselines travel in,
// with codec "json" (reference §5.2, §5.3).
type JSONEnvelope struct {
	Codec string `json:"codec"`
	Blob  string `json:"blob"`
}

// jsonCodec is the codec tag of the JSON baselines' envelopes.
const jsonCodec = "json"

// appendWrapper appends the wrapper frame (0x00, then the Payload datum) of
// the compact JSON text j.
func appendWrapper(dst, j []byte) []byte {
	dst = append(dst, 0x00)
	dst = appendLong(dst, int64(len(j)))
	dst = append(dst, j...)
	return appendLong(dst, wrapperVersion)
}

// readWrapper returns the JSON text of a wrapper frame, checking its marker,
// its version and that nothing follows the datum.
func readWrapper(frame []byte) ([]byte, error) {
	if len(frame) == 0 || frame[0] != 0x00 {
		return nil, errors.New("read wrapper: missing 0x00 marker")
	}
	n, pos, err := readLong(frame, 1)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(frame)-pos) {
		return nil, fmt.Errorf("read wrapper: json length %d exceeds the frame", n)
	}
	j := frame[pos : pos+int(n)]
	version, end, err := readLong(frame, pos+int(n))
	if err != nil {
		return nil, err
	}
	if version != wrapperVersion || end != len(frame) {
		return nil, fmt.Errorf("read wrapper: version %d and %d trailing bytes", version, len(frame)-end)
	}
	return j, nil
}

// appendLong appends the Avro zig-zag varint of i.
func appendLong(dst []byte, i int64) []byte {
	u := uint64(i<<1) ^ uint64(i>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// readLong reads the zig-zag varint at pos and returns it and the position
// after it.
func readLong(b []byte, pos int) (int64, int, error) {
	var u uint64
	for i := 0; i < 10; i++ {
		if pos >= len(b) {
			return 0, 0, errors.New("read wrapper: truncated long")
		}
		c := b[pos]
		pos++
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos, nil
		}
	}
	return 0, 0, errors.New("read wrapper: long longer than 10 bytes")
}

// marshalJSONEnvelope returns the compact JSON of a JSON-codec envelope.
func marshalJSONEnvelope(blob string) ([]byte, error) {
	return json.Marshal(JSONEnvelope{Codec: jsonCodec, Blob: blob})
}
