package main

import (
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

// The workflow of the cancellation tests (docs/workflows.md,
// "Cancellation").
func init() {
	workflow.RegisterWithOptions(SagaFlow, workflow.RegisterOptions{Name: "saga"})
}

// SagaInput is the input of SagaFlow.
type SagaInput struct {
	// Steps is how many steps run, each an echo of {"do": i}.
	Steps int64 `json:"steps"`
	// HoldMS is how long the sleep activity after the steps runs.
	HoldMS int64 `json:"hold_ms"`
	// Child also starts the workflow tally as a child, waiting for one
	// signal, and waits for it after the sleep.
	Child bool `json:"child"`
}

// SagaStep is the input of a step's echo and of its compensation's.
type SagaStep struct {
	Do   int64 `json:"do,omitempty"`
	Undo int64 `json:"undo,omitempty"`
}

// SagaFlow runs in.Steps steps, registering a compensation after each
// (an echo of {"undo": i}), then holds: a sleep activity of in.HoldMS
// and, with in.Child, a child tally. When a step or the hold fails, or the
// workflow is asked to cancel, it runs the compensations newest first and
// returns the error (ErrCanceled for a cancel: the workflow ends
// cancelled). Otherwise it returns the number of steps.
func SagaFlow(ctx workflow.Context, in SagaInput) (int64, error) {
	var saga workflow.Saga
	fail := func(err error) (int64, error) {
		workflow.GetLogger(ctx).Info("compensating", "canceled", workflow.IsCanceled(ctx))
		if cerr := saga.Compensate(ctx); cerr != nil {
			return 0, cerr
		}
		return 0, err
	}
	for i := int64(1); i <= in.Steps; i++ {
		if err := workflow.ExecuteActivity(ctx, "echo", SagaStep{Do: i}).Get(ctx, nil); err != nil {
			return fail(err)
		}
		saga.AddCompensation(func(ctx workflow.Context) error {
			return workflow.ExecuteActivity(ctx, "echo", SagaStep{Undo: i}).Get(ctx, nil)
		})
	}
	var child workflow.Future
	if in.Child {
		child = workflow.ExecuteChildWorkflow(ctx, "tally", TallyInput{Signals: 1})
	}
	if err := workflow.ExecuteActivity(ctx, "sleep", SleepInput{MS: in.HoldMS}).Get(ctx, nil); err != nil {
		return fail(err)
	}
	if child != nil {
		if err := child.Get(ctx, nil); err != nil {
			return fail(err)
		}
	}
	return in.Steps, nil
}
