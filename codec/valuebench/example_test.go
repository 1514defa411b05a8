package valuebench_test

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/codec/valuebench"
)

func Example() {
	r, err := valuebench.Run(context.Background(), valuebench.Config{Iterations: 10, Samples: 1})
	if err != nil {
		panic(err)
	}
	s := r.SizesBytes
	fmt.Println("plain json:", s.PlainJSON.Raw, s.PlainJSON.HTTPEnvelope)
	fmt.Println("old wrapper:", s.OldJSONWrapper.RawDatum, s.OldJSONWrapper.Framed, s.OldJSONWrapper.HTTPEnvelope)
	fmt.Println("typed value:", s.FixedTypedValue.RawDatum, s.FixedTypedValue.SingleObject, s.FixedTypedValue.HTTPEnvelope)
	fmt.Println("typed wire sha256 matches:", r.WireContract.Passed)
	// Output:
	// plain json: 193 249
	// old wrapper: 196 197 290
	// typed value: 154 164 246
	// typed wire sha256 matches: true
}
