package journal

import "time"

// EventCancelRequested records that a workflow was asked to cancel: it
// resolves the workflow's cancel future (CancelFuture) at that point of
// its journal, and the activities and child workflows it had open then
// are cancelled (docs/workflows.md, "Cancellation").
const EventCancelRequested = "workflow.cancel_requested"

// CancelFuture is the id of a workflow's cancel future: the future the
// import watch_cancel names, which resolves to null when the workflow is
// asked to cancel. Commands take the ids from 1 on.
const CancelFuture int64 = 0

// CancelRequested is the payload of EventCancelRequested.
type CancelRequested struct {
	// ClientID is the client that asked; "" for the engine (a parent's
	// cancel or close policy, a schedule).
	ClientID string `json:"client_id,omitempty"`
}

// Type implements Event.
func (*CancelRequested) Type() string { return EventCancelRequested }

func (p *CancelRequested) slot(key []byte) slot {
	if string(key) == "client_id" {
		return slot{str: &p.ClientID}
	}
	return slot{}
}

// applyCancel folds a cancel request written at at: the first resolves
// the cancel future and notes the child tasks then open, whose cancel
// TakeCancelTargets hands to the engine once.
func (j *Journal) applyCancel(at time.Time) {
	if j.resolve(CancelFuture, at, OutcomeValue, nullFrame) == nil {
		return // asked before
	}
	for _, c := range j.commands {
		if _, done := j.res[c.step]; !done && c.taskID != "" {
			j.cancelTargets = append(j.cancelTargets, c.taskID)
		}
	}
}

// CancelRequested reports whether the journal holds the workflow's cancel
// request.
func (j *Journal) CancelRequested() bool {
	_, ok := j.res[CancelFuture]
	return ok
}

// TakeCancelTargets returns, the first time it is called after the cancel
// request was applied, the child tasks the workflow had scheduled and
// not seen end by then: the activities and child workflows the cancel
// reaches. Later calls return nil; a journal read again from the log
// returns them again (cancelling a task twice changes nothing).
func (j *Journal) TakeCancelTargets() []string {
	ts := j.cancelTargets
	j.cancelTargets = nil
	return ts
}
