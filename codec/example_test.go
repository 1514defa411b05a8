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

func ExampleEncoder() {
	// An adapter streams its own data; no Value is built.
	tags := []string{"a", "b"}
	var e codec.Encoder
	e.BeginMap(2)
	e.Key("id")
	e.Long(7)
	e.Key("tags")
	e.BeginList(len(tags))
	for _, t := range tags {
		e.String(t)
	}
	e.End()
	e.End()
	env, err := e.AppendEnvelopeJSON(nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(env))

	// The same bytes as the Value API writes.
	same, _ := codec.AppendEnvelopeJSON(nil, codec.Map(
		codec.Entry{Key: "id", Value: codec.Long(7)},
		codec.Entry{Key: "tags", Value: codec.List(codec.String("a"), codec.String("b"))},
	))
	fmt.Println(string(same) == string(env))

	// Calls out of order fail when the datum is asked for.
	e.Reset()
	e.BeginList(2)
	e.Long(1)
	e.End()
	_, err = e.Datum()
	fmt.Println(err)
	// Output:
	// {"codec":"avro","blob":"wwHioz3/VYAiNw4EBGlkBA4IdGFncwwECgJhCgJiAAA="}
	// true
	// invalid_payload_framing: list or map closed with 1 of its declared items missing
}

func ExampleDecoder() {
	data := []byte(`{"codec":"avro","blob":"wwHioz3/VYAiNw4EBGlkBA4IdGFncwwECgJhCgJiAAA="}`)
	var d codec.Decoder
	if err := d.ResetEnvelopeJSON(data); err != nil {
		panic(err)
	}
	// An adapter pulls the values into its own types.
	var id int64
	var tags []string
	if d.Next() == codec.KindMap {
		for d.More() {
			switch key, kind := d.Key(), d.Next(); {
			case key == "id" && kind == codec.KindLong:
				id = d.Long()
			case key == "tags" && kind == codec.KindList:
				tags = make([]string, 0, d.Len())
				for d.More() {
					d.Next()
					tags = append(tags, d.String())
				}
			}
		}
	}
	if err := d.Finish(); err != nil {
		panic(err)
	}
	fmt.Println(id, tags)
	// Output:
	// 7 [a b]
}
