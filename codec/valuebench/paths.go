package valuebench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// The names of the measured paths, as the report's latency_us keys them.
const (
	PlainJSONEncode       = "plain_json_encode"
	PlainJSONDecode       = "plain_json_decode"
	OldJSONWrapperEncode  = "old_json_wrapper_encode"
	OldJSONWrapperDecode  = "old_json_wrapper_decode"
	FixedTypedValueEncode = "fixed_typed_value_encode"
	FixedTypedValueDecode = "fixed_typed_value_decode"
	HambaGenericEncode    = "hamba_generic_encode"
	HambaGenericDecode    = "hamba_generic_decode"
)

// pathDocs says what each path measures, one operation from end to end.
var pathDocs = map[string]string{
	PlainJSONEncode:       "native value -> compact JSON (encoding/json)",
	PlainJSONDecode:       "compact JSON -> native value (encoding/json tokens, member order kept)",
	OldJSONWrapperEncode:  "native value -> compact JSON -> 0x00 + Payload{json, version} datum -> base64 -> {\"codec\":\"json\"} envelope JSON",
	OldJSONWrapperDecode:  "envelope JSON -> base64 -> Payload datum -> compact JSON -> native value",
	FixedTypedValueEncode: "native value -> streaming adapter (codec.Encoder) -> datum -> single-object frame -> base64 -> {\"codec\":\"avro\"} envelope JSON",
	FixedTypedValueDecode: "envelope JSON -> codec check -> strict base64 -> frame checks -> whole-datum validation -> pull adapter (codec.Decoder) -> native value",
	HambaGenericEncode:    "native value -> hamba mapping -> hamba Marshal datum -> frame -> base64 -> envelope JSON (codec.AppendFrameEnvelopeJSON)",
	HambaGenericDecode:    "envelope JSON (codec.ParseEnvelopeFrame) -> strict base64 -> header check -> hamba Unmarshal (input trusted, no codec pre-check) -> native value",
}

// suite holds the corpus value and, for each decode path, the bytes its
// encode path produced. Its methods are the measured operations; each does
// the whole path and returns a result the caller owns.
type suite struct {
	native   any
	hamba    avro.API
	v1       avro.Schema
	json     []byte
	wrapper  []byte
	typed    []byte
	hambaEnv []byte
	// sink keeps each result alive, so no work can be optimised away.
	sink any
}

// newSuite prepares the paths over native and runs each encode once to
// produce the decode inputs.
func newSuite(native any) (*suite, error) {
	s := &suite{
		native: native,
		hamba:  schema.NewHamba(schema.HambaConfig{}).API(),
		v1:     schema.V1().Avro(),
	}
	var err error
	if s.json, err = s.plainJSONEncode(); err != nil {
		return nil, fmt.Errorf("%s: %w", PlainJSONEncode, err)
	}
	if s.wrapper, err = s.oldWrapperEncode(); err != nil {
		return nil, fmt.Errorf("%s: %w", OldJSONWrapperEncode, err)
	}
	if s.typed, err = s.typedEncode(); err != nil {
		return nil, fmt.Errorf("%s: %w", FixedTypedValueEncode, err)
	}
	if s.hambaEnv, err = s.hambaEncode(); err != nil {
		return nil, fmt.Errorf("%s: %w", HambaGenericEncode, err)
	}
	return s, nil
}

func (s *suite) plainJSONEncode() ([]byte, error) {
	return json.Marshal(s.native)
}

func (s *suite) plainJSONDecode() (any, error) {
	return ParseJSON(s.json)
}

func (s *suite) oldWrapperEncode() ([]byte, error) {
	j, err := json.Marshal(s.native)
	if err != nil {
		return nil, err
	}
	frame := appendWrapper(make([]byte, 0, len(j)+12), j)
	return marshalJSONEnvelope(base64.StdEncoding.EncodeToString(frame))
}

func (s *suite) oldWrapperDecode() (any, error) {
	var env JSONEnvelope
	if err := json.Unmarshal(s.wrapper, &env); err != nil {
		return nil, err
	}
	if env.Codec != jsonCodec {
		return nil, fmt.Errorf("wrapper envelope codec %q", env.Codec)
	}
	frame, err := strictBase64.DecodeString(env.Blob)
	if err != nil {
		return nil, err
	}
	j, err := readWrapper(frame)
	if err != nil {
		return nil, err
	}
	return ParseJSON(j)
}

func (s *suite) typedEncode() ([]byte, error) {
	return AppendEnvelope(nil, s.native)
}

func (s *suite) typedDecode() (any, error) {
	return DecodeEnvelope(s.typed)
}

func (s *suite) hambaEncode() ([]byte, error) {
	hv, err := ToHamba(s.native)
	if err != nil {
		return nil, err
	}
	datum, err := s.hamba.Marshal(s.v1, hv)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 0, codec.HeaderSize+len(datum))
	frame = append(append(append(frame, codec.Magic[:]...), codec.Fingerprint[:]...), datum...)
	return codec.AppendFrameEnvelopeJSON(nil, frame), nil
}

func (s *suite) hambaDecode() (any, error) {
	frame, err := codec.ParseEnvelopeFrame(s.hambaEnv)
	if err != nil {
		return nil, err
	}
	if len(frame) < codec.HeaderSize || !bytes.Equal(frame[:2], codec.Magic[:]) || !bytes.Equal(frame[2:codec.HeaderSize], codec.Fingerprint[:]) {
		return nil, fmt.Errorf("hamba frame header % x", frame[:min(len(frame), codec.HeaderSize)])
	}
	var hv schema.HambaValue
	if err := s.hamba.Unmarshal(s.v1, frame[codec.HeaderSize:], &hv); err != nil {
		return nil, err
	}
	return FromHamba(hv)
}

// op is one measured operation.
type op struct {
	name string
	run  func() error
}

// ops returns the eight paths in report order.
func (s *suite) ops() []op {
	enc := func(f func() ([]byte, error)) func() error {
		return func() error {
			b, err := f()
			s.sink = b
			return err
		}
	}
	dec := func(f func() (any, error)) func() error {
		return func() error {
			v, err := f()
			s.sink = v
			return err
		}
	}
	return []op{
		{PlainJSONEncode, enc(s.plainJSONEncode)},
		{PlainJSONDecode, dec(s.plainJSONDecode)},
		{OldJSONWrapperEncode, enc(s.oldWrapperEncode)},
		{OldJSONWrapperDecode, dec(s.oldWrapperDecode)},
		{FixedTypedValueEncode, enc(s.typedEncode)},
		{FixedTypedValueDecode, dec(s.typedDecode)},
		{HambaGenericEncode, enc(s.hambaEncode)},
		{HambaGenericDecode, dec(s.hambaDecode)},
	}
}
