// Package activity is what a Go plugin imports to define activities: plain
// functions that weft runs in a sandbox, retries on failure and, with
// on_restart=resume, restarts from their last checkpoint.
//
// A plugin is a main package built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hello.wasm .
//
// Activities are registered from an init function (main is never called in
// a reactor), by name, with typed input and output:
//
//	type Greeting struct {
//		Name string `json:"name"`
//	}
//
//	func init() {
//		activity.RegisterWithOptions(Hello, activity.RegisterOptions{Name: "hello"})
//	}
//
//	func Hello(ctx context.Context, in Greeting) (string, error) {
//		if in.Name == "" {
//			return "", activity.NewNonRetryableApplicationError("name is empty", "invalid_name")
//		}
//		activity.GetLogger(ctx).Info("greeting", "name", in.Name)
//		return "hello, " + in.Name, nil
//	}
//
//	func main() {}
//
// # Values
//
// Inputs and outputs cross the sandbox as Avro Value frames (package
// codec). A function may take and return codec.Value directly, or any Go
// type that maps onto a Value the way encoding/json maps onto JSON: structs
// by their json tags, maps with string keys, slices, integers (long),
// floats (double), strings, []byte (bytes), bool, pointers (null when nil).
// A function on Frame in both directions gets the input frame itself and
// returns a frame, with no decoding: the fastest path for activities that
// pass payloads through.
//
// # Errors
//
// A returned *ApplicationError keeps its Type and NonRetryable flag; any
// other error becomes a retryable ApplicationError of type "error"; a panic
// becomes a retryable one of type "panic" whose details hold the stack.
//
// # Checkpoints, cancellation and progress
//
// Checkpoint records a Value that LastCheckpoint returns in the next attempt
// of the same task, so a long activity resumes where it stopped. Cancelled
// reports whether the task was asked to stop; a cancelled activity that keeps
// running is stopped by force once the host's grace period ends. Progress
// reports how far the activity got, for the user to watch live:
//
//	for i, f := range files {
//		copyFile(f)
//		_ = activity.Progress(ctx, int64(i+1), int64(len(files)), f.Name)
//	}
//
// The wire contract behind this package is docs/abi.md (weft ABI v1).
package activity
