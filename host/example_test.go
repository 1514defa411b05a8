package host_test

import (
	"context"
	"fmt"
	"os"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
)

// Example deploys the stock testkit plugin and calls two of its
// activities: echo, and trap, which fails on the host side with a code.
func Example() {
	ctx := context.Background()
	h, err := host.New(host.Config{CacheDir: cacheDir})
	if err != nil {
		panic(err)
	}
	defer func() { _ = h.Close(ctx) }()

	wasm, err := os.ReadFile("../plugins/testkit/testkit.wasm")
	if err != nil {
		panic(err)
	}
	info, err := h.Compile(ctx, wasm)
	if err != nil {
		panic(err)
	}
	in, _ := codec.EncodeFrame(codec.String("hello"))
	res, err := h.Call(ctx, &host.CallRequest{Digest: info.Digest, Function: "echo", Input: in})
	if err != nil {
		panic(err)
	}
	out, _ := codec.DecodeFrame(res.Output)
	s, _ := out.AsString()
	fmt.Println(res.Status, s)

	_, err = h.Call(ctx, &host.CallRequest{Digest: info.Digest, Function: "trap"})
	fmt.Println(host.ErrorCode(err))
	// Output:
	// ok hello
	// trap
}
