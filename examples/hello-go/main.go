// Command hello-go is a hello-world weft plugin in Go: one activity,
// "hello", that greets the name it is given.
//
// Build it as a WASI reactor (see README.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o hello.wasm .
//
// The committed hello.wasm is built from the repository root with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o examples/hello-go/hello.wasm ./examples/hello-go
package main

import (
	"context"
	"strings"

	"github.com/weft-run/weft/sdk-wasm/activity"
)

// Input is what hello takes: {"name": "..."}.
type Input struct {
	Name string `json:"name"`
}

// Output is what hello returns: {"greeting": "..."}.
type Output struct {
	Greeting string `json:"greeting"`
}

// Activities are registered from init: a reactor never runs main.
func init() {
	activity.RegisterWithOptions(Hello, activity.RegisterOptions{Name: "hello"})
}

func main() {}

// Hello greets in.Name. An empty name is an error no retry can fix, so it
// is non-retryable.
func Hello(ctx context.Context, in Input) (Output, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return Output{}, activity.NewNonRetryableApplicationError("name is empty", "invalid_name")
	}
	activity.GetLogger(ctx).Info("greeting", "name", name)
	return Output{Greeting: "hello, " + name + "!"}, nil
}
