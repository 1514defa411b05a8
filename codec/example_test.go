package codec_test

import (
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/codec"
)

func Example() {
	v := codec.Map(
		codec.Entry{Key: "attempt", Value: codec.Long(7)},
		codec.Entry{Key: "ratio", Value: codec.Double(7)},
		codec.Entry{Key: "blob", Value: codec.Bytes([]byte{0x00, 0xff})},
	)

	// Encode to the {"codec":"avro","blob":…} envelope.
	env, err := codec.EncodeEnvelope(v)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(env)
	fmt.Println(string(out))

	// Decode it back and show the typed JSON projection.
	back, err := codec.DecodeEnvelope(env)
	if err != nil {
		panic(err)
	}
	proj, _ := codec.MarshalProjection(back)
	fmt.Println(string(proj))

	// The codec tag is checked before anything is decoded.
	_, err = codec.DecodeEnvelope(codec.Envelope{Codec: "json", Blob: "e30="})
	fmt.Println(codec.ErrorCode(err))
	// Output:
	// {"codec":"avro","blob":"wwHioz3/VYAiNw4GDmF0dGVtcHQEDgpyYXRpbwYAAAAAAAAcQAhibG9iCAQA/wA="}
	// {"attempt":7,"ratio":7.0,"blob":{"$type":"bytes","base64":"AP8="}}
	// unsupported_payload_codec
}

func ExampleParseProjection() {
	v, err := codec.ParseProjection([]byte(`{"$type":"map","entries":[{"key":"0","value":9007199254740993}]}`))
	if err != nil {
		panic(err)
	}
	n, _ := v.Entries()[0].Value.AsLong()
	fmt.Println(v.Kind(), v.Entries()[0].Key, n)
	// Output:
	// map 0 9007199254740993
}
