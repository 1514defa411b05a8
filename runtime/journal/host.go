package journal

import (
	"context"
	"time"

	"github.com/weft-run/weft/store"
)

// WorkflowHost answers the workflow imports of one workflow call (ABI §9,
// weft:workflow/v1): Replay implements it over the task's journal, and the
// engine hands it to its Executor in runtime.Call.Workflow, which calls it
// from the goroutine running the guest, one method at a time. It uses only
// standard library types, so that the daemon adapts it to the host's own
// interface and neither the engine nor this package imports the host
// (house style rule 4).
//
// An error from a method fails the call; the Replay keeps the error itself
// (a nondeterminism error names the step), so an Executor need not carry it
// back.
//
// # Notes
//
// Only package journal implements WorkflowHost.
type WorkflowHost interface {
	// ScheduleActivity schedules an activity and returns its future id. It
	// keeps neither call nor any slice in it: the caller may reuse them.
	ScheduleActivity(ctx context.Context, call *ActivityCommand) (int64, error)
	// StartTimer starts a durable timer of d and returns its future id; the
	// future resolves to null when it fires.
	StartTimer(ctx context.Context, d time.Duration) (int64, error)
	// WaitSignal waits for the next signal called name and returns its
	// future id; the future resolves to the signal's value, or to
	// OutcomeTimeout once timeout passes (a negative timeout waits forever).
	WaitSignal(ctx context.Context, name string, timeout time.Duration) (int64, error)
	// Await reports whether futures ids are resolved: with all false,
	// whether any is, index being the position in ids of the one resolved
	// first in the journal; with all true, whether every one is (index 0).
	// ready false suspends the workflow.
	Await(ctx context.Context, ids []int64, all bool) (index int, ready bool, err error)
	// Result returns the outcome of a future Await reported resolved.
	Result(ctx context.Context, id int64) (FutureResult, error)
	// Now returns the workflow's deterministic time.
	Now() time.Time
	// Random fills p with the workflow's deterministic random bytes.
	Random(p []byte)
	// History returns how many journal events the run replayed or
	// recorded so far, its commands and the results it read, and the bytes
	// of their values with the workflow's input: the same at the same
	// point of every replay, whatever arrived since.
	History() (length, size int64)
}

// ActivityCommand is an activity a workflow schedules.
type ActivityCommand struct {
	// Module is the name of the module that holds the activity; empty means
	// the workflow's own module.
	Module string
	// Function is the activity's name.
	Function string
	// Input is the activity's input frame.
	Input []byte
	// Timeout bounds one attempt; zero means no limit.
	Timeout time.Duration
	// ScheduleToStartTimeout bounds how long the activity stays queued
	// before a worker takes it; zero means no limit.
	ScheduleToStartTimeout time.Duration
	// HeartbeatTimeout is the longest an attempt may go without a
	// heartbeat; zero means no limit.
	HeartbeatTimeout time.Duration
	// Retry is the retry policy; nil means one attempt.
	Retry *ActivityRetry
	// Child, when set, makes the command a child workflow: Function is a
	// workflow, run as a task of its own whose end resolves the future.
	Child *ChildWorkflow
}

// ChildWorkflow are the options of a child workflow; zero fields mean the
// defaults.
type ChildWorkflow struct {
	// WorkflowID is the child's workflow id; "" is its task id.
	WorkflowID string
	// ParentClosePolicy is what the parent's end does to the child while
	// it runs: store.ParentCloseTerminate (""), ParentCloseRequestCancel
	// or ParentCloseAbandon.
	ParentClosePolicy store.ParentClosePolicy
}

// ActivityRetry is the retry policy a workflow gives an activity; zero
// fields mean the defaults of the task retry policy.
type ActivityRetry struct {
	// MaxAttempts is the most attempts, the first included.
	MaxAttempts int
	// InitialInterval is the delay before the first retry.
	InitialInterval time.Duration
	// BackoffCoefficient multiplies the delay after each retry.
	BackoffCoefficient float64
	// MaxInterval caps the delay.
	MaxInterval time.Duration
	// NonRetryableErrorTypes are error types never retried.
	NonRetryableErrorTypes []string
}

// Outcome says how a future resolved; the values are those of the ABI.
type Outcome int32

// The outcomes of a future.
const (
	// OutcomeValue: the future holds its result.
	OutcomeValue Outcome = 0
	// OutcomeError: the activity failed for good; the frame is its error
	// Value.
	OutcomeError Outcome = 1
	// OutcomeTimeout: a signal wait timed out; there is no frame.
	OutcomeTimeout Outcome = 2
)

// FutureResult is the outcome of a resolved future.
type FutureResult struct {
	// Outcome says how it resolved.
	Outcome Outcome
	// Frame is the result (OutcomeValue) or error Value (OutcomeError)
	// frame; nil for OutcomeTimeout.
	Frame []byte
}
