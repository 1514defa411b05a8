// Command wfkit is a test guest of workflows written with the Go SDK. The
// host's tests replay it against a journal kept in the test
// (workflow_test.go).
//
// Build (the committed host/testdata/wfkit.wasm is this command's output):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o host/testdata/wfkit.wasm ./host/testdata/wfkit
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/sdk-wasm/activity"
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

func init() {
	workflow.RegisterWithOptions(Greet, workflow.RegisterOptions{Name: "greet"})
	workflow.RegisterWithOptions(Fanout, workflow.RegisterOptions{Name: "fanout"})
	workflow.RegisterWithOptions(Checkpointer, workflow.RegisterOptions{Name: "checkpointer"})
	activity.RegisterWithOptions(Shout, activity.RegisterOptions{Name: "shout"})
	activity.RegisterWithOptions(Clock, activity.RegisterOptions{Name: "clock"})
}

func main() {}

// Greet runs the activity shout, sleeps on a durable timer, waits for the
// signal "approve" for an hour, and returns a summary that includes the
// deterministic time and randomness.
func Greet(ctx workflow.Context, name string) (map[string]any, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy:         &workflow.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{"bad_name"}},
	})
	var shouted string
	if err := workflow.ExecuteActivity(ctx, "shout", name).Get(ctx, &shouted); err != nil {
		return nil, err
	}
	workflow.GetLogger(ctx).Info("shouted", "result", shouted)
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return nil, err
	}
	approval := "timeout"
	var by string
	err := workflow.WaitSignal(ctx, "approve", time.Hour).Get(ctx, &by)
	switch {
	case err == nil:
		approval = "approved by " + by
	case !errors.Is(err, workflow.ErrTimeout):
		return nil, err
	}
	rnd := make([]byte, 8)
	workflow.Random(ctx, rnd)
	return map[string]any{
		"greeting": shouted,
		"approval": approval,
		"now":      workflow.Now(ctx).Format(time.RFC3339Nano),
		"wasi_now": time.Now().UTC().Format(time.RFC3339Nano),
		"random":   hex.EncodeToString(rnd),
	}, nil
}

// Fanout starts one shout per name, takes the first to finish, then waits
// for all and returns them in order. A failed shout fails the workflow.
func Fanout(ctx workflow.Context, names []string) ([]string, error) {
	futures := make([]workflow.Future, len(names))
	for i, n := range names {
		futures[i] = workflow.ExecuteActivity(ctx, "shout", n)
	}
	first := workflow.AwaitAny(ctx, futures...)
	workflow.AwaitAll(ctx, futures...)
	out := []string{fmt.Sprintf("first=%d", first)}
	for _, f := range futures {
		var s string
		if err := f.Get(ctx, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Checkpointer is a workflow that wrongly calls an activity-only import.
func Checkpointer(workflow.Context, int64) (int64, error) {
	return 0, activity.Checkpoint(context.Background(), 1)
}

// Shout upper-cases ASCII letters; an empty name is a non-retryable
// bad_name error.
func Shout(_ context.Context, name string) (string, error) {
	if name == "" {
		return "", activity.NewNonRetryableApplicationError("empty name", "bad_name")
	}
	b := []byte(name)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b) + "!", nil
}

// Clock is an activity that wrongly calls a workflow-only import.
func Clock(ctx context.Context, _ any) (string, error) {
	return workflow.Now(nil).String(), nil
}
