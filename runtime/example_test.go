package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// upper is an Executor whose one function, "shout", returns its string
// input in capitals. The daemon uses the wasm host instead.
type upper struct{}

func (upper) Compile(context.Context, []byte) (*runtime.ModuleInfo, error) {
	return &runtime.ModuleInfo{Functions: []runtime.Function{{Name: "shout", Kind: "activity"}}}, nil
}

func (upper) Call(_ context.Context, call *runtime.Call) (*runtime.CallResult, error) {
	v, err := codec.DecodeFrame(call.Input)
	if err != nil {
		return nil, err
	}
	s, _ := v.AsString()
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		out = append(out, r)
	}
	frame, err := codec.EncodeFrame(codec.String(string(out)))
	return &runtime.CallResult{Output: frame}, err
}

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "weft-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "weft.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = db.Close(ctx) }()
	files, err := blob.New(blob.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := runtime.New(runtime.Config{Store: db, Executor: upper{}, Modules: files})
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.Open(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = eng.Close(ctx) }()

	// The HTTP layer authenticates the client and checks its scope
	// (package runtime/access); the engine takes whose tasks to show.
	caller := runtime.Caller{ClientID: "cli_docs"}
	if _, err := eng.Modules().Deploy(ctx, "text", []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		log.Fatal(err)
	}
	input, err := codec.EncodeEnvelope(codec.String("hello, weft"))
	if err != nil {
		log.Fatal(err)
	}
	task, err := eng.TaskCreate(ctx, &runtime.TaskCreateParams{
		ClientID: caller.ClientID, Module: "text", Function: "shout", Input: input,
	})
	if err != nil {
		log.Fatal(err)
	}
	events, err := eng.EventSubscribe(ctx, caller, task.ID, -1)
	if err != nil {
		log.Fatal(err)
	}
	for ev := range events {
		fmt.Println(ev.Seq, ev.Type)
	}
	resp, err := eng.ResponseGet(ctx, caller, store.ResponseIDFor(task.ID))
	if err != nil {
		log.Fatal(err)
	}
	out, err := codec.DecodeFrame(resp.Output.Data)
	if err != nil {
		log.Fatal(err)
	}
	s, _ := out.AsString()
	fmt.Println(resp.Status, s)
	// Output:
	// 0 response.created
	// 1 task.status_changed
	// 2 response.in_progress
	// 3 response.completed
	// completed HELLO, WEFT
}
