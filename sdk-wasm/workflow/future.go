package workflow

import (
	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// Future is the eventual result of an activity, a timer or a signal.
//
// # Notes
//
// Only this package implements Future.
type Future interface {
	// Get waits for the result and stores it in the value valuePtr points
	// to (nil discards it). It returns the activity's *ApplicationError when
	// the activity failed for good, ErrTimeout when a signal wait timed
	// out, and ErrCanceled when the workflow was asked to cancel before the
	// result came (unless ctx is disconnected: NewDisconnectedContext).
	// When the result is not there yet, the workflow is suspended until it
	// is.
	Get(ctx Context, valuePtr any) error
	future() *future
}

type future struct {
	id      int64
	err     error // a failure before anything was scheduled
	done    bool
	outcome abi.Outcome
	blob    []byte
}

func (f *future) future() *future { return f }

// futureSlab is how many futures newFuture allocates at once.
const futureSlab = 64

// freeFutures hands out futures from slabs: a workflow run makes one future per
// step and replays every step on each run, and in a Go guest one
// allocation per slab costs far less than one per future. The module runs
// one call at a time, on one goroutine.
var freeFutures []future

// newFuture returns a new future of id.
func newFuture(id int64) *future {
	if len(freeFutures) == 0 {
		freeFutures = make([]future, futureSlab)
	}
	f := &freeFutures[0]
	freeFutures = freeFutures[1:]
	f.id = id
	return f
}

func (f *future) Get(ctx Context, valuePtr any) error {
	if f.err != nil {
		return f.err
	}
	if !f.done {
		ids := [2]int64{f.id}
		if awaitOrCancel(ctx, ids[:1], abi.AwaitAny) < 0 {
			return ErrCanceled
		}
		f.fetch()
	}
	switch f.outcome {
	case abi.OutcomeTimeout:
		return ErrTimeout
	case abi.OutcomeError:
		v, err := codec.DecodeFrame(f.blob)
		if err != nil {
			return err
		}
		ae, err := guest.ErrorFromValue(v)
		if err != nil {
			return err
		}
		return ae
	}
	if valuePtr == nil {
		return nil
	}
	v, err := codec.DecodeFrame(f.blob)
	if err != nil {
		return err
	}
	return convert.FromValue(v, valuePtr)
}

// fetch reads the outcome of a future the host reported resolved.
func (f *future) fetch() {
	f.outcome, f.blob = hostcall.FutureResult(f.id)
	f.done = true
}

// AwaitAny waits until one of futures is resolved and returns its index;
// when several are, the one that resolved first in the task's journal. It
// suspends the workflow while none is. Futures that failed before being
// scheduled count as resolved. It returns -1 for no futures, and when the
// workflow was asked to cancel before any resolved (IsCanceled is then
// true), unless ctx is disconnected.
func AwaitAny(ctx Context, futures ...Future) int {
	ids := make([]int64, 0, len(futures))
	idx := make([]int, 0, len(futures))
	for i, fu := range futures {
		f := fu.future()
		if f.err != nil {
			return i
		}
		ids = append(ids, f.id)
		idx = append(idx, i)
	}
	if len(ids) == 0 {
		return -1
	}
	r := awaitOrCancel(ctx, ids, abi.AwaitAny)
	if r < 0 {
		return -1
	}
	if r >= len(idx) {
		panic("weft: await answered an index outside its futures")
	}
	i := idx[r]
	if f := futures[i].future(); !f.done {
		f.fetch()
	}
	return i
}

// AwaitAll waits until every one of futures is resolved, suspending the
// workflow while any is not. Their results are then read with Get. When
// the workflow is asked to cancel before the last resolved (unless ctx is
// disconnected), it returns then, and Get of those not resolved returns
// ErrCanceled.
func AwaitAll(ctx Context, futures ...Future) {
	ids := make([]int64, 0, len(futures)+1)
	for _, fu := range futures {
		if f := fu.future(); f.err == nil && !f.done {
			ids = append(ids, f.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	// With the cancel future, the host answers it when the request came
	// before the last of the others (docs/abi.md, await).
	if awaitOrCancel(ctx, ids, abi.AwaitAll) < 0 {
		return
	}
	for _, fu := range futures {
		if f := fu.future(); f.err == nil && !f.done {
			f.fetch()
		}
	}
}
