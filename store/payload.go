package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Payload is a durable value as the store keeps it: the codec tag and the
// raw single-object frame (Avro Value protocol: wire format), held opaque and
// never decoded by the store. The zero Payload means "no value".
type Payload struct {
	// Codec is the codec tag stored beside the frame, "avro" for every value
	// weft writes.
	Codec string
	// Data is the raw frame.
	Data []byte
}

// IsZero reports whether p holds no value.
func (p Payload) IsZero() bool { return p.Codec == "" && len(p.Data) == 0 }

// MarshalJSON writes p as a {codec, blob} envelope with a standard base64
// blob, or null for the zero Payload. It does not look inside the frame.
func (p Payload) MarshalJSON() ([]byte, error) {
	if p.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(envelope{Codec: p.Codec, Blob: base64.StdEncoding.EncodeToString(p.Data)})
}

// UnmarshalJSON reads a {codec, blob} envelope written by MarshalJSON; null
// gives the zero Payload.
func (p *Payload) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*p = Payload{}
		return nil
	}
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("payload envelope: %w", err)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(e.Blob)
	if err != nil {
		return fmt.Errorf("payload envelope blob: %w", err)
	}
	*p = Payload{Codec: e.Codec, Data: b}
	return nil
}

type envelope struct {
	Codec string `json:"codec"`
	Blob  string `json:"blob"`
}
