package main

import (
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

// The workflow of the continue-as-new tests (docs/workflows.md,
// "Continue-as-new").
func init() {
	workflow.RegisterWithOptions(Chain, workflow.RegisterOptions{Name: "chain"})
}

// ChainInput is the input of Chain.
type ChainInput struct {
	// Runs is how many runs the chain makes.
	Runs int64 `json:"runs"`
	// Done counts the runs before this one.
	Done int64 `json:"done"`
}

// ChainOutput is the result of the last run of a chain.
type ChainOutput struct {
	Runs int64 `json:"runs"`
	// HistoryLength is the last run's history length: its own steps only.
	HistoryLength int64 `json:"history_length"`
}

// Chain runs the echo activity once, then continues as new with Done one
// higher until Runs runs have run, and returns their count. Its query
// "done" answers Done.
func Chain(ctx workflow.Context, in ChainInput) (ChainOutput, error) {
	if err := workflow.SetQueryHandler(ctx, "done", func(any) (int64, error) { return in.Done, nil }); err != nil {
		return ChainOutput{}, err
	}
	var echoed int64
	if err := workflow.ExecuteActivity(ctx, "echo", in.Done).Get(ctx, &echoed); err != nil {
		return ChainOutput{}, err
	}
	if echoed+1 < in.Runs {
		return ChainOutput{}, workflow.NewContinueAsNewError(ctx, ChainInput{Runs: in.Runs, Done: echoed + 1})
	}
	return ChainOutput{Runs: echoed + 1, HistoryLength: workflow.HistoryLength(ctx)}, nil
}
