package workflow

import (
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// ParentClosePolicy is what the end of a workflow does to a child workflow
// of it that still runs.
type ParentClosePolicy string

// The parent close policies, as Temporal's.
const (
	// ParentClosePolicyTerminate cancels the child (the default).
	ParentClosePolicyTerminate ParentClosePolicy = abi.ParentCloseTerminate
	// ParentClosePolicyRequestCancel asks the child to cancel.
	ParentClosePolicyRequestCancel ParentClosePolicy = abi.ParentCloseRequestCancel
	// ParentClosePolicyAbandon leaves the child running.
	ParentClosePolicyAbandon ParentClosePolicy = abi.ParentCloseAbandon
)

// ChildWorkflowOptions are the options of the child workflows a workflow
// executes.
type ChildWorkflowOptions struct {
	// Module is the deployed module that holds the child workflow.
	// Defaults to the workflow's own module.
	Module string
	// WorkflowID is the child's workflow id; one that an open run of the
	// same client holds fails the child's Future with an error of type
	// workflow_id_in_use. Defaults to the child's task id.
	WorkflowID string
	// ParentClosePolicy is what this workflow's end (completed, failed or
	// cancelled) does to the child while it runs. Defaults to terminate.
	ParentClosePolicy ParentClosePolicy
	// Timeout bounds each run (plugin call) of the child. Defaults to none.
	Timeout time.Duration
	// RetryPolicy says how a failed child is retried, from scratch.
	// Defaults to one attempt.
	RetryPolicy *RetryPolicy
}

// WithChildOptions returns a copy of ctx whose child workflows use opts.
func WithChildOptions(ctx Context, opts ChildWorkflowOptions) Context {
	s := *ctx.state()
	s.child, s.childFrame = opts, nil
	return &s
}

// ExecuteChildWorkflow starts the workflow named workflow as a child of
// this one, with input, and returns its Future, which resolves to the
// child's result, or to its error once it failed or was cancelled. The
// child is a workflow task of its own (GET /v1/tasks?parent_task_id=…);
// its start and end are journaled like an activity's, so a replay never
// starts it twice. The options come from WithChildOptions.
func ExecuteChildWorkflow(ctx Context, workflow string, input any) Future {
	if err := canceled(ctx); err != nil {
		return &future{err: err}
	}
	v, err := convert.ToValue(input)
	if err != nil {
		return &future{err: err}
	}
	in, err := codec.AppendFrame(inputBuf[:0], v)
	if err != nil {
		return &future{err: err}
	}
	inputBuf = in
	s := ctx.state()
	if s.childFrame == nil {
		o := optionsValue(ActivityOptions{StartToCloseTimeout: s.child.Timeout, RetryPolicy: s.child.RetryPolicy})
		entries := append(o.Entries(), codec.Entry{Key: abi.OptionChildWorkflow, Value: childValue(s.child)})
		of, err := codec.EncodeFrame(codec.Map(entries...))
		if err != nil {
			return &future{err: err}
		}
		s.childFrame = of
	}
	return newFuture(hostcall.ScheduleActivity(s.child.Module, workflow, in, s.childFrame))
}

// childValue is the child_workflow option of opts: only the fields set.
func childValue(o ChildWorkflowOptions) codec.Value {
	var entries []codec.Entry
	if o.WorkflowID != "" {
		entries = append(entries, codec.Entry{Key: abi.ChildWorkflowID, Value: codec.String(o.WorkflowID)})
	}
	if o.ParentClosePolicy != "" {
		entries = append(entries, codec.Entry{Key: abi.ChildParentClosePolicy, Value: codec.String(string(o.ParentClosePolicy))})
	}
	return codec.Map(entries...)
}
