package host

import (
	"crypto/rand"
	"time"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// The guest's WASI clocks and randomness. wazero calls these on the
// goroutine running the guest. An activity (and any code outside a call,
// such as _initialize) gets the real clock, real sleeps and crypto
// randomness; a workflow gets the WorkflowHost's deterministic time and
// randomness, a monotonic clock that only counts, and sleeps that return at
// once (a workflow waits with durable timers, never by sleeping).

// epoch anchors the real monotonic clock.
var epoch = time.Now()

// workflowHost returns the WorkflowHost of a running workflow call, or nil.
func (inst *instance) workflowHost() WorkflowHost {
	cs := &inst.cs
	if cs.active && cs.kind == abi.KindWorkflow && cs.req.Workflow != nil {
		return cs.req.Workflow
	}
	return nil
}

// walltime is the WASI realtime clock.
func (inst *instance) walltime() (int64, int32) {
	t := time.Now()
	if wh := inst.workflowHost(); wh != nil {
		t = wh.Now()
	}
	return t.Unix(), int32(t.Nanosecond())
}

// nanotime is the WASI monotonic clock: real elapsed time for activities,
// a counter for workflows, and never going backwards within an instance.
func (inst *instance) nanotime() int64 {
	if inst.workflowHost() != nil {
		inst.nano += int64(time.Microsecond)
	} else {
		inst.nano = max(inst.nano+1, int64(time.Since(epoch)))
	}
	return inst.nano
}

// nanosleep is the WASI sleep (poll_oneoff on a clock). For an activity it
// sleeps for real but wakes when the call's context ends or the host
// closes, so a sleeping guest is stopped as promptly as a running one.
func (inst *instance) nanosleep(ns int64) {
	if ns <= 0 || inst.workflowHost() != nil {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-inst.cs.done:
	case <-inst.h.done:
	}
}

// randSource is the WASI random_get of an instance.
type randSource struct{ inst *instance }

// Read fills p with random bytes.
func (r randSource) Read(p []byte) (int, error) {
	if wh := r.inst.workflowHost(); wh != nil {
		wh.Random(p)
		return len(p), nil
	}
	return rand.Read(p)
}
