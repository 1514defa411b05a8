package store

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// Task is one execution of a module function: an activity, or a workflow
// that runs activities as child tasks.
type Task struct {
	// ID is "task_" followed by a ULID.
	ID string
	// Module is the module name the task was started with.
	Module string
	// ModuleDigest pins the module version ("sha256:<hex>") for the task's
	// whole life.
	ModuleDigest string
	// Function is the exported function to run.
	Function string
	// Kind is activity or workflow.
	Kind Kind
	// Input is the function's argument.
	Input Payload
	// Status is the current status.
	Status Status
	// OnRestart is the restart policy (persistence §11.3).
	OnRestart OnRestart
	// Timeout bounds one attempt; zero means none.
	Timeout time.Duration
	// Deadline is when a workflow's execution timeout passes: the absolute
	// end of the whole execution, across its attempts and the time it
	// waits, which a run that continues the execution copies; zero for
	// none. Millisecond precision, UTC.
	Deadline time.Time
	// RunTimeout bounds one attempt of a workflow from its start to its
	// end, the time it waits included; zero means none.
	RunTimeout time.Duration
	// RunDeadline is when the run timeout of the current attempt passes:
	// the attempt's start (its claim) plus RunTimeout. Zero when there is
	// no run timeout or before the first attempt. Millisecond precision,
	// UTC.
	RunDeadline time.Time
	// ScheduleToStartTimeout bounds how long the task may stay queued, from
	// the time it falls due (its creation, or the end of a retry's backoff)
	// to its claim; zero means none.
	ScheduleToStartTimeout time.Duration
	// StartDeadline is when a queued task fails for waiting too long in
	// the queue (TaskOverdue): NotBefore plus ScheduleToStartTimeout, or
	// the Deadline when that is earlier. Zero for none. Millisecond
	// precision, UTC.
	StartDeadline time.Time
	// HeartbeatTimeout is the longest an activity's attempt may go without
	// a heartbeat before it is stopped; zero means none.
	HeartbeatTimeout time.Duration
	// MemoryLimit bounds the linear memory of the task's plugin calls, in
	// bytes; zero means the host's default.
	MemoryLimit int64
	// Retry is the retry policy of an activity.
	Retry RetryPolicy
	// Attempt counts the attempts started: it goes up by one each time the
	// task leaves queued for loading or running, so it is 0 before the
	// first claim and 1 during the first attempt.
	Attempt int
	// Checkpoint is the last checkpoint of a running task, kept by resume.
	Checkpoint Payload
	// Output is the result of a completed task.
	Output Payload
	// Error is the error of a failed task, and optionally the reason of a
	// cancelled one.
	Error *TaskError
	// OwnerClientID is the client that created the task.
	OwnerClientID string
	// ParentTaskID is the workflow task that started this one, or "".
	ParentTaskID string
	// WorkflowID is the caller-chosen id of a workflow task, unique among
	// the owner's open runs (see TaskInsertParams.WorkflowID); "" for none.
	WorkflowID string
	// ContinuedFrom is the run of the same workflow that continued as new
	// into this one (WorkflowCommitParams.Next), or "".
	ContinuedFrom string
	// ParentClosePolicy is what the end of a child workflow's parent does
	// to it while it runs; "" for a task that is no child workflow.
	ParentClosePolicy ParentClosePolicy
	// CancelRequestedAt is when the workflow was asked to cancel and was
	// handed the request to run its compensation before it ends
	// (EventAppendParams.CancelRequest); the zero time while nobody asked.
	// Millisecond precision, UTC.
	CancelRequestedAt time.Time
	// NotBefore is the earliest time a queued task may be claimed (retry
	// backoff, timers).
	// Millisecond precision, UTC.
	NotBefore time.Time
	// CreatedAt is when the task was inserted.
	// Millisecond precision, UTC.
	CreatedAt time.Time
	// UpdatedAt is the time of the last write to the task or its log.
	// Millisecond precision, UTC.
	UpdatedAt time.Time
	// StartedAt is when the task first became running; zero before.
	// Millisecond precision, UTC.
	StartedAt time.Time
	// FinishedAt is when the task reached a terminal status; zero before.
	// Millisecond precision, UTC.
	FinishedAt time.Time
	// LastSeq is the sequence number of the last event in the task's log.
	LastSeq int64
	// Progress is the latest progress report of the task's activity, as
	// the last task.progress event recorded it, or nil before the first.
	Progress *TaskProgress
	// Lease is the hold of the host that claimed the task, while it holds
	// one (see Lease.Held); the task document shows its host.
	Lease Lease
}

// TaskProgress is how far a task's activity got, as it last reported.
type TaskProgress struct {
	// Done is the work done so far, at least 0.
	Done int64
	// Total is the whole work, or 0 when unknown.
	Total int64
	// Message is a short text, or "".
	Message string
	// UpdatedAt is when the report was recorded.
	// Millisecond precision, UTC.
	UpdatedAt time.Time
}

// ResponseID returns the id of the task's response.
func (t *Task) ResponseID() string { return ResponseIDFor(t.ID) }

// RetryPolicy says how an activity is retried after a failed attempt. The
// store keeps it; the runtime applies it. The zero value means no retries.
type RetryPolicy struct {
	// InitialInterval is the wait before the first retry.
	InitialInterval time.Duration `json:"initial_interval_ms"`
	// BackoffCoefficient multiplies the wait after each retry.
	BackoffCoefficient float64 `json:"backoff_coefficient"`
	// MaximumInterval caps the wait.
	MaximumInterval time.Duration `json:"maximum_interval_ms"`
	// MaximumAttempts caps the attempts; 0 means one attempt.
	MaximumAttempts int `json:"maximum_attempts"`
	// NonRetryableErrorTypes lists error types that are never retried.
	NonRetryableErrorTypes []string `json:"non_retryable_error_types,omitempty"`
	// TotalTimeout bounds the task across all its attempts and the waits
	// between them, counted from its creation; zero means no limit.
	TotalTimeout time.Duration `json:"total_timeout_ms"`
}

// TaskError is the error a task failed with.
type TaskError struct {
	// Code is a snake_case error code, such as server_restarted.
	Code string `json:"code"`
	// Message explains the error to people.
	Message string `json:"message"`
	// Type is the application error type a plugin chose, or "".
	Type string `json:"type,omitempty"`
	// NonRetryable tells the runtime not to retry.
	NonRetryable bool `json:"non_retryable,omitempty"`
	// Details is an optional durable value with details.
	Details Payload `json:"details_envelope,omitzero"`
}

// CodeServerRestarted is the error code of a task that start-up recovery
// failed (persistence §11.3).
const CodeServerRestarted = "server_restarted"

// TaskInsertParams are the params of Store.TaskInsert.
type TaskInsertParams struct {
	// ID is the new task's id; the caller may choose it to build a reply
	// before the insert. Defaults to a new id.
	ID string
	// Module is the module name. Required.
	Module string
	// ModuleDigest is the pinned module digest, "sha256:<hex>". Required.
	ModuleDigest string
	// Function is the function to run. Required.
	Function string
	// Kind is the task kind. Defaults to KindActivity.
	Kind Kind
	// Input is the function's argument. Defaults to no value.
	Input Payload
	// OnRestart is the restart policy. Defaults to OnRestartFail.
	OnRestart OnRestart
	// Timeout bounds one attempt; stored truncated to the millisecond.
	// Defaults to 0 (none).
	Timeout time.Duration
	// Deadline is the absolute execution deadline of a workflow (see
	// Task.Deadline); stored truncated to the millisecond, in UTC. Defaults
	// to none.
	Deadline time.Time
	// RunTimeout bounds each attempt of a workflow, waits included; stored
	// truncated to the millisecond. Defaults to 0 (none).
	RunTimeout time.Duration
	// ScheduleToStartTimeout bounds the time the task stays queued before
	// a claim; stored truncated to the millisecond. Defaults to 0 (none).
	ScheduleToStartTimeout time.Duration
	// HeartbeatTimeout bounds the time an activity's attempt goes without a
	// heartbeat; stored truncated to the millisecond. Defaults to 0 (none).
	HeartbeatTimeout time.Duration
	// MemoryLimit bounds the memory of the task's plugin calls, in bytes.
	// Defaults to 0 (the host's default).
	MemoryLimit int64
	// Retry is the retry policy. Defaults to no retries.
	Retry RetryPolicy
	// OwnerClientID is the creating client. Defaults to "" (no owner).
	OwnerClientID string
	// ParentTaskID is the workflow task that starts this one. Defaults to
	// "" (a top-level task).
	ParentTaskID string
	// ParentEvents are appended to the parent's log in the same
	// transaction, such as activity.scheduled. Defaults to none.
	ParentEvents []EventDraft
	// WorkflowID names a workflow task for its owner (1 to
	// MaxWorkflowIDLen bytes of UTF-8 without control characters): at
	// most one open run (queued, loading, running, cancelling) of an
	// owner holds a workflow id, and the insert of another fails with
	// ErrWorkflowIDInUse; WorkflowIDReuse decides whether it may follow an
	// ended one. Only for KindWorkflow. Defaults to "" (none).
	WorkflowID string
	// WorkflowIDReuse says whether a task may take the workflow id of the
	// owner's latest run once it ended; a refusal is ErrWorkflowIDReuse.
	// Defaults to ReuseAllowDuplicate.
	WorkflowIDReuse WorkflowIDReusePolicy
	// ContinuedFrom is the run this one continues as new, which
	// WorkflowCommit sets on its Next. Defaults to "" (none).
	ContinuedFrom string
	// ParentClosePolicy is what the parent's end does to a child
	// workflow (KindWorkflow with a ParentTaskID). Defaults to "".
	ParentClosePolicy ParentClosePolicy
	// NotBefore delays the first claim; stored truncated to the
	// millisecond, in UTC. Defaults to the insert time.
	NotBefore time.Time
	// Idempotency, when set, completes that in-flight idempotency key with
	// its status and body in the same transaction. Defaults to nil.
	Idempotency *IdempotencyKeyCompleteParams
	// IdempotencyTask, when set, binds that in-flight idempotency key to the
	// new task in the same transaction, for a request whose answer comes
	// later (the synchronous POST /v1/responses): from the commit on, the
	// key answers for this task (IdempotencyTask) and neither recovery nor
	// release drops it. Not with Idempotency. Defaults to nil.
	IdempotencyTask *IdempotencyKeyRef
	// Start moves the new task on to running in the same transaction, as a
	// claim and a start would (attempt 1, with their status events), and
	// returns it running: for a caller that runs it at once, such as an
	// engine with an idle worker. Not with a NotBefore in the future.
	// Defaults to false.
	Start bool
	// Host is the host that runs a task inserted with Start; the task gets
	// a lease for it. Defaults to "" (an unnamed host, for a store one host
	// uses).
	Host string
	// LeaseTTL is the lease of a task inserted with Start. Defaults to
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// TaskListParams are the params of Store.TaskList.
type TaskListParams struct {
	// OwnerClientID limits the list to one owner. Defaults to "" (every
	// owner).
	OwnerClientID string
	// Statuses limits the list to these statuses. Defaults to all.
	Statuses []Status
	// ParentTaskID limits the list to the children of one task. Defaults to
	// "" (no filter).
	ParentTaskID string
	// Module limits the list to one module name. Defaults to "" (no filter).
	Module string
	// Function limits the list to one function name. Defaults to "" (no
	// filter).
	Function string
	// WorkflowID limits the list to the runs of one workflow id (with
	// OwnerClientID, of one owner). Defaults to "" (no filter).
	WorkflowID string
	// Cursor is the id of the last task of the previous page. Defaults to ""
	// (the first page).
	Cursor string
	// Newest orders the list newest first. Defaults to false (oldest first).
	Newest bool
	// OmitPayloads leaves out the input, output, checkpoint and error
	// details of every task (they read as no value): a listing that shows
	// no payloads then reads none. Defaults to false.
	OmitPayloads bool
	// Limit caps the page. Defaults to 100; at most MaxListLimit+1, so that a
	// caller serving pages of MaxListLimit can ask for one task more to learn
	// whether another page follows.
	Limit int
}

// WorkflowIDReusePolicy says whether a new run may take the workflow id of
// an ended one (TaskInsertParams.WorkflowIDReuse), as Temporal's policies
// of the same names do. A workflow id is never shared with an open run.
type WorkflowIDReusePolicy string

// The workflow id reuse policies.
const (
	// ReuseAllowDuplicate lets a run follow any ended run.
	ReuseAllowDuplicate WorkflowIDReusePolicy = "allow_duplicate"
	// ReuseAllowDuplicateFailedOnly lets a run follow an ended run that
	// did not complete (failed or cancelled).
	ReuseAllowDuplicateFailedOnly WorkflowIDReusePolicy = "allow_duplicate_failed_only"
	// ReuseRejectDuplicate lets no run follow an ended one while the
	// store keeps it (retention).
	ReuseRejectDuplicate WorkflowIDReusePolicy = "reject_duplicate"
)

// Valid reports whether p is a known policy.
func (p WorkflowIDReusePolicy) Valid() bool {
	return p == ReuseAllowDuplicate || p == ReuseAllowDuplicateFailedOnly || p == ReuseRejectDuplicate
}

// Allows reports whether p lets a new run follow an ended run in status
// last.
func (p WorkflowIDReusePolicy) Allows(last Status) bool {
	switch p {
	case ReuseRejectDuplicate:
		return false
	case ReuseAllowDuplicateFailedOnly:
		return last == StatusFailed || last == StatusCancelled
	}
	return true
}

// ParentClosePolicy is what the end of a workflow does to a child
// workflow of it that still runs, as Temporal's policies of the same
// names.
type ParentClosePolicy string

// The parent close policies.
const (
	// ParentCloseTerminate cancels the child; the default ("").
	ParentCloseTerminate ParentClosePolicy = "terminate"
	// ParentCloseRequestCancel asks the child to cancel.
	ParentCloseRequestCancel ParentClosePolicy = "request_cancel"
	// ParentCloseAbandon leaves the child running.
	ParentCloseAbandon ParentClosePolicy = "abandon"
)

// Valid reports whether p is a known policy or "".
func (p ParentClosePolicy) Valid() bool {
	return p == "" || p == ParentCloseTerminate || p == ParentCloseRequestCancel || p == ParentCloseAbandon
}

// MaxWorkflowIDLen is the longest workflow id, in bytes.
const MaxWorkflowIDLen = 256

// ValidWorkflowID reports whether id is 1 to MaxWorkflowIDLen bytes of
// UTF-8 without control characters.
func ValidWorkflowID(id string) bool {
	if id == "" || len(id) > MaxWorkflowIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// MaxListLimit is the largest page of tasks an API should serve; TaskList
// returns up to one task more (see TaskListParams.Limit).
const MaxListLimit = 1000

// TaskTransitionParams are the params of Store.TaskTransition.
type TaskTransitionParams struct {
	// ID is the task. Required.
	ID string
	// From lists the statuses the caller expects the task to be in; the
	// transition happens only from one of them. Required.
	From []Status
	// To is the new status; every From → To must be an edge of the state
	// machine (see CanTransition). Required.
	To Status
	// Output is the result of a task moving to completed. Defaults to no
	// value.
	Output Payload
	// Error is required for failed and optional for cancelled; ignored
	// otherwise.
	Error *TaskError
	// NotBefore is when a task moving to queued may be claimed again (retry
	// backoff, timers); stored truncated to the millisecond, in UTC.
	// Defaults to now.
	NotBefore time.Time
	// ClearCheckpoint drops the checkpoint, for a retry from scratch.
	// Defaults to false.
	ClearCheckpoint bool
	// Reason is written into the status event payload. Defaults to "".
	Reason string
	// Events are appended to the task's log before the status event, in the
	// same transaction (journal events). Defaults to none.
	Events []EventDraft
	// ParentEvents are appended to the parent's log in the same
	// transaction, such as activity.completed; skipped when the parent has
	// finished. Defaults to none.
	ParentEvents []EventDraft
	// WakeParent makes a queued parent claimable now, or a waiting parent
	// workflow claimable through WorkflowClaim. Defaults to false.
	WakeParent bool
	// Lease is the fencing token of the lease the writer holds for the
	// task (Task.Lease.Token of its claim): the write happens only while
	// the task holds that lease, else ErrLeaseLost. Defaults to 0: the
	// write is not a runner's (an API cancel, recovery) and is not fenced.
	Lease int64
	// Host is the host the workflow WorkflowChildEnd hands to the caller
	// gets a lease for. Defaults to "" (an unnamed host).
	Host string
	// LeaseTTL is the lease of the workflow WorkflowChildEnd hands to the
	// caller. Defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// TaskClaimParams are the params of Store.TaskClaim.
type TaskClaimParams struct {
	// Limit caps the tasks claimed. Defaults to 1.
	Limit int
	// Now is the time compared with each task's NotBefore. Defaults to the
	// current time.
	Now time.Time
	// Gate, when set, decides which of the eligible tasks the claim takes.
	// Defaults to nil (every eligible task, up to Limit).
	Gate ClaimGate
	// Host is the claiming host (see ValidHost); each claimed task gets a
	// lease for it. Defaults to "" (an unnamed host, for a store one host
	// uses).
	Host string
	// LeaseTTL is the lease each claimed task gets, from the store's clock
	// (the database's on a shared store). Defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// ClaimGate decides, inside one TaskClaim, which eligible tasks it takes:
// the runtime's fair share of workers and its memory budget. A claim calls
// Queued once, first, then Admit for the next eligible task of an owner,
// oldest first within the owner; an owner whose task is refused gets no
// more tasks in this claim. A store that runs a claim again (a retried
// transaction) calls Queued again first.
type ClaimGate interface {
	// Queued is called with every owner that has queued tasks.
	Queued(owners []string)
	// Admit reports whether the claim may take owner's next eligible task,
	// whose memory limit is memoryLimit (0: the host's default). An
	// admitted task is claimed unless the whole claim fails.
	Admit(owner string, memoryLimit int64) bool
}

// TaskCheckpointParams are the params of Store.TaskCheckpoint.
type TaskCheckpointParams struct {
	// ID is the task. Required.
	ID string
	// Checkpoint replaces the stored checkpoint. Required.
	Checkpoint Payload
	// Events are appended to the log in the same transaction. Defaults to
	// none.
	Events []EventDraft
	// Lease fences the write, as TaskTransitionParams.Lease. Defaults to 0
	// (not fenced).
	Lease int64
}

// TaskRecoverResult is what Store.TaskRecover did, by the persistence §11.3
// cell each task fell in.
type TaskRecoverResult struct {
	// Failed lists tasks moved to failed with server_restarted (policy fail).
	Failed []string
	// Requeued lists tasks moved from loading or running back to queued.
	Requeued []string
	// Resumed lists running tasks with policy resume, left running with their
	// checkpoint for the runtime to continue.
	Resumed []string
	// Cancelled lists cancelling tasks moved to cancelled.
	Cancelled []string
	// Queued counts queued tasks left queued (policies retry and resume).
	Queued int
	// IdempotencyKeysReleased counts idempotency keys that were in flight
	// and bound to no task.
	IdempotencyKeysReleased int
}

// TaskOverdueParams are the params of Store.TaskOverdue.
type TaskOverdueParams struct {
	// Now is the time compared with each queued task's StartDeadline.
	// Defaults to the current time.
	Now time.Time
	// Limit caps the tasks returned. Defaults to 100; at most 1000.
	Limit int
}

// TaskOverdueResult is what Store.TaskOverdue found.
type TaskOverdueResult struct {
	// Tasks are queued tasks whose StartDeadline is at or before Now,
	// earliest deadline first.
	Tasks []*Task
	// Next is the earliest StartDeadline after Now of a queued task, or
	// the zero time when none has one. Millisecond precision, UTC.
	Next time.Time
}
