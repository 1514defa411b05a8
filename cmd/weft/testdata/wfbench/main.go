// Command wfbench is the workflow guest of the daemon's workflow benchmarks
// (cmd/internal/daemon/workflow_bench_test.go): an echo activity and
// workflows that run it sequentially, in parallel, or wait for a signal,
// one with a query; and one that runs child workflows sequentially.
//
// Build (the committed cmd/weft/testdata/wfbench.wasm is this command's
// output):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o cmd/weft/testdata/wfbench.wasm ./cmd/weft/testdata/wfbench
package main

import (
	"context"

	"github.com/weft-run/weft/sdk-wasm/activity"
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

func init() {
	activity.RegisterWithOptions(Echo, activity.RegisterOptions{Name: "echo"})
	workflow.RegisterWithOptions(Sequential, workflow.RegisterOptions{Name: "sequential"})
	workflow.RegisterWithOptions(FanOutThenWait, workflow.RegisterOptions{Name: "fanout_wait"})
	workflow.RegisterWithOptions(Wait, workflow.RegisterOptions{Name: "wait"})
	workflow.RegisterWithOptions(Children, workflow.RegisterOptions{Name: "children"})
	workflow.RegisterWithOptions(Leaf, workflow.RegisterOptions{Name: "leaf"})
}

func main() {}

// Echo returns its input.
func Echo(_ context.Context, in activity.Frame) (activity.Frame, error) { return in, nil }

// Sequential runs n echo activities one after the other and returns n.
func Sequential(ctx workflow.Context, n int64) (int64, error) {
	for i := range n {
		var out int64
		if err := workflow.ExecuteActivity(ctx, "echo", i).Get(ctx, &out); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// FanOutThenWait runs n echo activities at once, reads their results in
// order, then waits for signals "tick" until one carries "stop": a running
// workflow with a journal of n steps, replayed at each tick. Its query
// "sum" answers the sum of the results read so far.
func FanOutThenWait(ctx workflow.Context, n int64) (int64, error) {
	var sum int64
	if err := workflow.SetQueryHandler(ctx, "sum", func(any) (int64, error) { return sum, nil }); err != nil {
		return 0, err
	}
	futures := make([]workflow.Future, n)
	for i := range futures {
		futures[i] = workflow.ExecuteActivity(ctx, "echo", int64(i))
	}
	workflow.AwaitAll(ctx, futures...)
	for _, f := range futures {
		var out int64
		if err := f.Get(ctx, &out); err != nil {
			return 0, err
		}
		sum += out
	}
	for {
		var tick string
		if err := workflow.WaitSignal(ctx, "tick", 0).Get(ctx, &tick); err != nil {
			return 0, err
		}
		if tick == "stop" {
			return sum, nil
		}
	}
}

// Wait waits for the signal "done" and returns its value.
func Wait(ctx workflow.Context, _ any) (any, error) {
	var v any
	err := workflow.WaitSignal(ctx, "done", 0).Get(ctx, &v)
	return v, err
}

// Children runs n child workflows leaf one after the other and returns n:
// Sequential with child workflows in place of activities.
func Children(ctx workflow.Context, n int64) (int64, error) {
	for i := range n {
		var out int64
		if err := workflow.ExecuteChildWorkflow(ctx, "leaf", i).Get(ctx, &out); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Leaf is a workflow that returns its input: a child workflow that does
// what the echo activity does.
func Leaf(_ workflow.Context, in int64) (int64, error) { return in, nil }
