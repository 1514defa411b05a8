package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// workflowIDError turns the store's refusal of a workflow id into its API
// error, naming the run that holds the id; nil for any other error.
func (e *Engine) workflowIDError(ctx context.Context, ip *store.TaskInsertParams, err error) error {
	var code fault.Code
	switch {
	case errors.Is(err, store.ErrWorkflowIDInUse):
		code = fault.WorkflowIDInUse
	case errors.Is(err, store.ErrWorkflowIDReuse):
		code = fault.WorkflowIDReuseRefused
	default:
		return nil
	}
	run := "another run"
	if ts, lerr := e.store.TaskList(ctx, &store.TaskListParams{
		OwnerClientID: ip.OwnerClientID, WorkflowID: ip.WorkflowID, Newest: true, Limit: 1, OmitPayloads: true,
	}); lerr == nil && len(ts) == 1 {
		run = fmt.Sprintf("the run %s (%s)", ts[0].ID, ts[0].Status)
	}
	msg := fmt.Sprintf("workflow_id %q is held by %s; a new run may take it once that one ended", ip.WorkflowID, run)
	if code == fault.WorkflowIDReuseRefused {
		policy := ip.WorkflowIDReuse
		if policy == "" {
			policy = store.ReuseAllowDuplicate
		}
		msg = fmt.Sprintf("workflow_id %q was last used by %s, and the policy %s lets no new run follow it", ip.WorkflowID, run, policy)
	}
	return &fault.Error{Code: code, Param: "workflow_id", Message: msg, Err: err}
}

// WorkflowRun returns the latest run of the caller's workflow id: the open
// one while there is one, else the one that ended last. Workflow ids are
// per client, so the caller's own client id names the run, with the admin
// scope too. It returns fault.Invalid for a malformed id and
// fault.NotFound when the caller has no run of that id (or retention
// purged them).
func (e *Engine) WorkflowRun(ctx context.Context, who Caller, workflowID string) (*store.Task, error) {
	if !store.ValidWorkflowID(workflowID) {
		return nil, fault.ParamErrorf("workflow_id", "workflow_id must be 1 to %d bytes of UTF-8 without control characters", store.MaxWorkflowIDLen)
	}
	ts, err := e.store.TaskList(ctx, &store.TaskListParams{
		OwnerClientID: who.ClientID, WorkflowID: workflowID, Newest: true, Limit: 1, OmitPayloads: true,
	})
	if err != nil {
		return nil, fault.Wrap("find workflow run", err)
	}
	if len(ts) == 0 {
		return nil, fault.Errorf(fault.NotFound, "workflow %q not found", workflowID)
	}
	return ts[0], nil
}

// childWorkflowID is the journal.WorkflowIDFunc of a workflow run: a child
// workflow may not take the workflow id of an open run of its owner.
func (e *Engine) childWorkflowID(ctx context.Context, owner, workflowID string) error {
	ts, err := e.store.TaskList(ctx, &store.TaskListParams{
		OwnerClientID: owner, WorkflowID: workflowID, Newest: true, Limit: 1, OmitPayloads: true,
	})
	if err != nil {
		return fault.Wrap("find workflow run", err)
	}
	if len(ts) == 1 && !ts[0].Status.IsTerminal() {
		return fault.Errorf(fault.WorkflowIDInUse, "workflow_id %q is held by the open run %s (%s)", workflowID, ts[0].ID, ts[0].Status)
	}
	return nil
}
