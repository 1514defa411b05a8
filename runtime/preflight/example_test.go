package preflight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-run/weft/runtime/preflight"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// A data directory holding one input tagged "json" does not pass.
func Example() {
	dir, err := os.MkdirTemp("", "weft-example")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	path := filepath.Join(dir, sqlite.FileName)
	db, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		panic(err)
	}
	_, err = db.TaskInsert(ctx, &store.TaskInsertParams{
		Module: "echo", Function: "echo", Input: store.Payload{Codec: "json", Data: []byte(`{"n":1}`)},
		ModuleDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	})
	if err != nil {
		panic(err)
	}
	if err := db.Close(ctx); err != nil {
		panic(err)
	}

	ro, err := sqlite.Open(ctx, sqlite.Config{Path: path, ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer func() { _ = ro.Close(ctx) }()
	rep, err := preflight.Run(ctx, ro, preflight.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Println("ok:", rep.OK())
	for _, f := range rep.Findings {
		fmt.Println(f.Table, f.Field, f.Code)
	}
	// Output:
	// ok: false
	// tasks input unsupported_payload_codec
}
