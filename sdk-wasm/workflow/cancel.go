package workflow

import (
	"errors"

	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// ErrCanceled is what waits return once the workflow was asked to cancel
// (docs/workflows.md, "Cancellation"): Future.Get of a future that had not
// resolved before the request, and the futures a canceled context starts
// (ExecuteActivity, NewTimer, …), which schedule nothing. A workflow that
// returns it, or an error of type "cancelled" such as a canceled
// activity's, ends cancelled. Compensation runs in a context from
// NewDisconnectedContext, whose waits the request does not interrupt.
var ErrCanceled error = &ApplicationError{Type: "cancelled", Message: "workflow: the workflow was asked to cancel", NonRetryable: true}

// canceledCall is the call (guest.CallSeq) in which a wait saw the
// workflow's cancel request; a call replays from the start, so every run
// sees it again at the same point.
var canceledCall uint64

// cancelID is the id of the cancel future, from the host (watch_cancel)
// in call cancelCall: asking once per call tells the host that the call
// handles its cancel request.
var (
	cancelID   int64
	cancelCall uint64
)

// IsCanceled reports whether a wait of this run has seen the workflow's
// cancel request so far. A workflow learns of the request only at a wait,
// the same point on every replay, so it may decide on the answer.
func IsCanceled(Context) bool { return canceledCall != 0 && canceledCall == guest.CallSeq }

// NewDisconnectedContext returns a copy of ctx whose waits and commands the
// workflow's cancel request does not interrupt: the context of its
// compensation, or of a wait for an activity's own end after a cancel.
func NewDisconnectedContext(ctx Context) Context {
	s := *ctx.state()
	s.detached = true
	return &s
}

// watched reports whether waits under ctx race the cancel request.
func watched(ctx Context) bool { return !ctx.state().detached }

// cancelFuture returns the id of the cancel future.
func cancelFuture() int64 {
	if cancelCall != guest.CallSeq {
		cancelID, cancelCall = hostcall.WatchCancel(), guest.CallSeq
	}
	return cancelID
}

// canceled returns ErrCanceled for a command of ctx once the run saw the
// cancel request, so that it schedules nothing; nil otherwise.
func canceled(ctx Context) error {
	if watched(ctx) && IsCanceled(ctx) {
		return ErrCanceled
	}
	return nil
}

// awaitOrCancel waits for the first of ids, or for the cancel request when
// ctx watches it; it returns the index in ids, or -1 for the cancel, which
// came first in the journal. It suspends while neither is there.
func awaitOrCancel(ctx Context, ids []int64, mode int32) int {
	if watched(ctx) {
		ids = append(ids, cancelFuture())
	}
	r := hostcall.Await(ids, mode)
	if r == abi.AwaitSuspended {
		guest.Suspend()
	}
	if watched(ctx) && int(r) == len(ids)-1 {
		canceledCall = guest.CallSeq
		return -1
	}
	return int(r)
}

// Saga runs compensations: a workflow adds one after each step that
// succeeded, and when a later step fails or the workflow is canceled it
// calls Compensate, which runs them in reverse order, in a disconnected
// context so that the cancel request does not interrupt them. The zero
// Saga is ready to use.
type Saga struct {
	// ContinueOnError runs the remaining compensations after one failed
	// (the default stops at the first failure, in reverse order).
	ContinueOnError bool
	steps           []func(Context) error
}

// AddCompensation registers fn to undo the step that just succeeded.
func (s *Saga) AddCompensation(fn func(ctx Context) error) { s.steps = append(s.steps, fn) }

// Compensate runs the compensations registered so far, newest first, in a
// context disconnected from the cancel request, and returns their errors
// joined (nil when all succeeded). Each compensation runs once: they are
// forgotten as Compensate starts.
func (s *Saga) Compensate(ctx Context) error {
	dctx := NewDisconnectedContext(ctx)
	steps := s.steps
	s.steps = nil
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i](dctx); err != nil {
			errs = append(errs, err)
			if !s.ContinueOnError {
				break
			}
		}
	}
	return errors.Join(errs...)
}
