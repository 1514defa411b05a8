package main

import (
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

// The workflow of the query tests (docs/workflows.md, "Queries").
func init() {
	workflow.RegisterWithOptions(Tally, workflow.RegisterOptions{Name: "tally"})
}

// TallyInput is the input of Tally.
type TallyInput struct {
	// Signals is how many "add" signals the workflow waits for.
	Signals int64 `json:"signals"`
}

// TallyState is the answer of Tally's "state" query.
type TallyState struct {
	Sum   int64 `json:"sum"`
	Count int64 `json:"count"`
}

// Tally adds up the longs of in.Signals "add" signals and returns the sum.
// Its queries: "state" answers the sum and count so far, "echo" its input,
// "fail" an error of type "refused"; "schedule" calls an activity, "wait"
// a timer (both commands a query may not call), and "spin" loops forever.
func Tally(ctx workflow.Context, in TallyInput) (int64, error) {
	var st TallyState
	set := func(name string, h func(codec.Value) (codec.Value, error)) {
		if err := workflow.SetQueryHandler(ctx, name, h); err != nil {
			panic(err)
		}
	}
	if err := workflow.SetQueryHandler(ctx, "state", func(codec.Value) (TallyState, error) { return st, nil }); err != nil {
		return 0, err
	}
	set("echo", func(v codec.Value) (codec.Value, error) { return v, nil })
	set("fail", func(codec.Value) (codec.Value, error) {
		return codec.Value{}, workflow.NewNonRetryableApplicationError("query refused", "refused")
	})
	set("schedule", func(codec.Value) (codec.Value, error) {
		return codec.Null(), workflow.ExecuteActivity(ctx, "echo", nil).Get(ctx, nil)
	})
	set("wait", func(codec.Value) (codec.Value, error) {
		return codec.Null(), workflow.Sleep(ctx, time.Second)
	})
	set("spin", func(codec.Value) (codec.Value, error) {
		for {
			spins++
		}
	})
	for st.Count < in.Signals {
		var n int64
		if err := workflow.WaitSignal(ctx, "add", 0).Get(ctx, &n); err != nil {
			return 0, err
		}
		st.Sum += n
		st.Count++
	}
	return st.Sum, nil
}
