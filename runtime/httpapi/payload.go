package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

// jsonNull is the JSON null literal.
var jsonNull = json.RawMessage("null")

// nullEnvelope is the envelope of the null value: the input of a request that
// names none.
var nullEnvelope = mustEnvelope(codec.Null())

func mustEnvelope(v codec.Value) codec.Envelope {
	e, err := codec.EncodeEnvelope(v)
	if err != nil {
		panic("encode null envelope: " + err.Error())
	}
	return e
}

// parseInput reads the input member of a request: absent or null means the
// null value; anything else must be a {codec, blob} envelope, parsed strictly
// by the codec (the codec tag is checked first). Errors carry the codec's
// code and name param.
func parseInput(raw json.RawMessage, param string) (codec.Envelope, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nullEnvelope, nil
	}
	e, err := codec.ParseEnvelope(raw)
	if err != nil {
		return codec.Envelope{}, withParam(err, param)
	}
	return e, nil
}

// envelopeOf returns the envelope of a stored payload, nil for no value.
func envelopeOf(p store.Payload) *codec.Envelope {
	if p.IsZero() {
		return nil
	}
	if p.Codec == codec.CodecAvro {
		e := codec.EnvelopeOf(p.Data)
		return &e
	}
	return &codec.Envelope{Codec: p.Codec, Blob: base64.StdEncoding.EncodeToString(p.Data)}
}

// projection returns the typed JSON projection of an envelope (Avro Value
// protocol: typed JSON projection), for people; the envelope stays the
// lossless form. No value, or a payload that does not decode, projects to
// null; the latter is logged, and the envelope beside it still carries every
// byte.
//
// A frame larger than Config.MaxProjectionBytes projects to null as well
// (see projectionOmitted): the envelope is the authoritative form, and a
// big tree of JSON for people would cost many times the stored bytes.
func (s *Server) projection(e *codec.Envelope) json.RawMessage {
	if e == nil || s.projectionOmitted(e) {
		return jsonNull
	}
	v, err := codec.DecodeEnvelope(*e)
	if err == nil {
		var p []byte
		if p, err = codec.MarshalProjection(v); err == nil {
			return p
		}
	}
	s.log.Warn("project stored payload", "code", string(fault.CodeOf(err)), "error", err)
	return jsonNull
}

// projectionOmitted reports whether the frame of e is too large for a
// projection.
func (s *Server) projectionOmitted(e *codec.Envelope) bool {
	return e != nil && int64(base64.StdEncoding.DecodedLen(len(e.Blob))) > s.cfg.MaxProjectionBytes
}

// timeOrNil returns t in UTC, or nil for the zero time (JSON null).
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func (s *Server) errorDoc(e *store.TaskError) *client.TaskError {
	if e == nil {
		return nil
	}
	d := &client.TaskError{Code: e.Code, Message: e.Message, Type: e.Type, NonRetryable: e.NonRetryable}
	if env := envelopeOf(e.Details); env != nil {
		d.DetailsEnvelope = env
		d.Details = s.projection(env)
		d.DetailsProjectionOmitted = s.projectionOmitted(env)
	}
	return d
}
