package schema_test

import (
	"fmt"
	"strings"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

func Example() {
	v1 := schema.V1()
	fmt.Println(len(v1.CanonicalForm()), "bytes of canonical form")
	fp := v1.Fingerprint()
	fmt.Printf("fingerprint %x, codec %x\n", fp, codec.Fingerprint)

	// A frame names its writer schema by fingerprint.
	frame, _ := codec.EncodeFrame(codec.List(codec.Long(7), codec.String("seven")))
	writer, _ := schema.Lookup([8]byte(frame[2:10]))
	v, _ := schema.Resolve(writer, v1, frame[10:])
	fmt.Println(v.Kind(), v.Len())

	_, err := schema.Lookup([8]byte{})
	fmt.Println(err)
	// Output:
	// 961 bytes of canonical form
	// fingerprint e2a33dff55802237, codec e2a33dff55802237
	// list 2
	// unsupported_payload_schema: unknown CRC-64-AVRO fingerprint 0000000000000000
}

func ExampleResolve() {
	// A later version appends a new named branch to the union.
	text := strings.TrimSuffix(strings.TrimSpace(schema.V1().Text()), "]}]}") +
		`,{"type":"record","name":"DecimalValue","fields":[{"name":"decimal","type":"string"}]}]}]}`
	v2, err := schema.Parse(text)
	if err != nil {
		panic(err)
	}

	// It reads v1 data.
	datum, _ := codec.AppendDatum(nil, codec.String("old"))
	v, err := schema.Resolve(schema.V1(), v2, datum)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.AsString())

	// A v1 reader rejects a datum that uses the new branch (union index 8).
	_, err = schema.Resolve(v2, schema.V1(), []byte{0x10, 0x08, '1', '.', '5', '0'})
	fmt.Println(codec.ErrorCode(err))
	// Output:
	// old true
	// unsupported_payload_schema
}
