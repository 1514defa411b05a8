package main

import (
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

// The workflow of the child workflow tests (docs/workflows.md, "Child
// workflows").
func init() {
	workflow.RegisterWithOptions(Parent, workflow.RegisterOptions{Name: "parent"})
}

// ParentInput is the input of Parent.
type ParentInput struct {
	// WorkflowID, Policy and Module are the child's options.
	WorkflowID string `json:"workflow_id"`
	Policy     string `json:"policy"`
	Module     string `json:"module"`
	// Signals is the input of the child tally.
	Signals int64 `json:"signals"`
}

// Parent starts the workflow tally as its child, with Signals, and returns
// the child's sum.
func Parent(ctx workflow.Context, in ParentInput) (int64, error) {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		Module: in.Module, WorkflowID: in.WorkflowID, ParentClosePolicy: workflow.ParentClosePolicy(in.Policy),
	})
	var sum int64
	err := workflow.ExecuteChildWorkflow(ctx, "tally", TallyInput{Signals: in.Signals}).Get(ctx, &sum)
	return sum, err
}
