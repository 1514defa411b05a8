package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Start a task and follow its events until it ends.
func Example() {
	ctx := context.Background()
	c, err := client.New(client.Config{BaseURL: "127.0.0.1:7700", Token: os.Getenv("WEFT_TOKEN")})
	if err != nil {
		panic(err)
	}
	env, err := codec.EncodeEnvelope(codec.String("world"))
	if err != nil {
		panic(err)
	}
	task, err := c.TaskCreate(ctx, &client.TaskRequest{Module: "testkit", Function: "echo", Input: client.InputOf(env)})
	if err != nil {
		panic(err) // a *client.Error says why: client.IsCode(err, "module_not_found"), …
	}
	err = c.EventStream(ctx, task.ID, client.EventStreamParams{}, func(ev *client.StreamEvent) (bool, error) {
		fmt.Println(ev.ID, ev.Type)
		return client.IsTerminalEvent(ev.Type), nil
	})
	if err != nil {
		panic(err)
	}
	done, err := c.TaskGet(ctx, task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(done.Status, string(done.Output))
}
