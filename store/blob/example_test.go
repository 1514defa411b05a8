package blob_test

import (
	"context"
	"fmt"
	"os"

	"github.com/weft-run/weft/store/blob"
)

func Example() {
	dir, err := os.MkdirTemp("", "weft-example")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := blob.New(blob.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	digest, err := files.Put(ctx, []byte("hello"))
	if err != nil {
		panic(err)
	}
	data, err := files.Get(ctx, digest)
	if err != nil {
		panic(err)
	}
	fmt.Println(digest)
	fmt.Println(string(data))
	// Output:
	// sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
	// hello
}
