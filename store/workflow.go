package store

import "time"

// WorkflowCommitParams are the params of Store.WorkflowCommit: what one run
// of a workflow recorded, committed together with the workflow's next
// state.
type WorkflowCommitParams struct {
	// ID is the workflow task; it must be running. Required.
	ID string
	// LastSeq is the sequence number of the last event of the log the run
	// replayed. With Wait, the commit happens only when the log has not
	// grown since: an event that arrived during the run (a signal, a
	// finished activity) may change what the workflow does, so it must run
	// again. Ignored without Wait. Defaults to 0.
	LastSeq int64
	// Events are appended to the workflow's log, in order, before the
	// status event of a workflow that ends. Defaults to none.
	Events []EventDraft
	// Children are activity tasks to insert, queued, as children of the
	// workflow (ParentTaskID is set to ID; ParentEvents and Idempotency
	// must be empty). Their ids should be chosen by the caller, so that
	// Events can name them. Defaults to none.
	Children []*TaskInsertParams
	// Wait leaves the workflow running but waiting: it holds no worker and
	// WorkflowClaim hands it out again at WakeAt, or as soon as an event
	// wakes it (EventAppend with Wake, TaskTransition with WakeParent).
	// Defaults to false: the workflow ends with To.
	Wait bool
	// WakeAt is when a waiting workflow falls due (its earliest timer or
	// signal timeout); stored truncated to the millisecond, in UTC.
	// Defaults to never: only an event wakes it.
	WakeAt time.Time
	// To is the terminal status of a workflow that ends: completed or
	// failed. Required without Wait.
	To Status
	// Output is the result of a completed workflow. Defaults to no value.
	Output Payload
	// Error is the error of a failed workflow. Required for failed.
	Error *TaskError
	// StartChild moves the first of Children on to running in the same
	// transaction, as a claim and a start would (attempt 1, with their
	// status events), and returns it: the caller runs it at once. Defaults
	// to false.
	StartChild bool
	// EndChild is the end of one of the workflow's child activities
	// (running to completed or failed), written first in the same
	// transaction; its ParentEvents are appended to the workflow's log
	// before Events. It folds an activity's end into the run that went on
	// from it: one commit instead of two. The workflow must be waiting
	// (unclaimed, in the attempt that waits) and its log must end at
	// LastSeq, whether it waits again or ends; else ErrConflict, with
	// nothing written. Defaults to none.
	EndChild *TaskTransitionParams
	// At is the time the commit writes (event times, status changes), in
	// milliseconds. A run that replayed an event it had not read from the
	// log (EndChild's) must give the time it used. Defaults to the current
	// time.
	At time.Time
	// Lease fences the commit by the workflow's lease, as
	// TaskTransitionParams.Lease; with EndChild (whose own Lease fences
	// the child) the workflow waits and holds none, so it is 0. Defaults
	// to 0 (not fenced).
	Lease int64
	// ParentEvents are appended to the log of the workflow's parent (a
	// child workflow's, ParentTaskID) in the same transaction when the
	// workflow ends, such as activity.completed; skipped when the parent
	// has finished. Not with Wait. Defaults to none.
	ParentEvents []EventDraft
	// WakeParent makes the waiting parent of a workflow that ends
	// claimable now, as TaskTransitionParams.WakeParent. Defaults to false.
	WakeParent bool
	// Next continues the workflow as new: once it ended completed (To),
	// this task is inserted, queued, in the same transaction, with
	// ContinuedFrom set to ID, the same owner, and a workflow id that
	// follows the ended run's (ReuseAllowDuplicate). Only with To
	// completed. Defaults to nil.
	Next *TaskInsertParams
	// Host is the host StartChild's child gets a lease for. Defaults to ""
	// (an unnamed host).
	Host string
	// LeaseTTL is the lease of StartChild's child. Defaults to
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// WorkflowCommitResult is what Store.WorkflowCommit committed.
type WorkflowCommitResult struct {
	// Task is the workflow task as it is now.
	Task *Task
	// Started is the child moved to running by StartChild, or nil.
	Started *Task
	// Ended is EndChild's task as it is now, or nil.
	Ended *Task
	// Next is the run Next inserted, or nil.
	Next *Task
}

// WorkflowClaimParams are the params of Store.WorkflowClaim.
type WorkflowClaimParams struct {
	// Limit caps the workflows claimed. Defaults to 1.
	Limit int
	// Now is the time compared with each waiting workflow's wake time.
	// Defaults to the current time.
	Now time.Time
	// Gate, when set, decides which due workflows the claim takes (its
	// Queued is called with no owners); a refused workflow stays waiting
	// and due, and Refused says so. Defaults to nil (every due workflow,
	// up to Limit).
	Gate ClaimGate
	// Host is the claiming host; each claimed workflow gets a lease for
	// it. Defaults to "" (an unnamed host).
	Host string
	// LeaseTTL is the lease of each claimed workflow. Defaults to
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// WorkflowClaimResult is what Store.WorkflowClaim claimed.
type WorkflowClaimResult struct {
	// Tasks are the claimed workflows, running, oldest wake time first.
	Tasks []*Task
	// NextWakeAt is the earliest wake time of the workflows still waiting,
	// or the zero time when none waits for a time.
	// Millisecond precision, UTC.
	NextWakeAt time.Time
	// Refused reports that the gate kept due workflows waiting.
	Refused bool
}

// WorkflowChildEndResult is what Store.WorkflowChildEnd did.
type WorkflowChildEndResult struct {
	// Task is the child task as it is now.
	Task *Task
	// Parent is the workflow, running, when it was waiting and is now
	// handed to the caller; nil otherwise.
	Parent *Task
}

// WorkflowResumeParams are the params of Store.WorkflowResume.
type WorkflowResumeParams struct {
	// IDs are the workflows to make claimable; ids of other tasks are
	// ignored. Defaults to none (the call does nothing).
	IDs []string
}
