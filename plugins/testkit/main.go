// Command testkit is weft's stock test plugin: small activities that
// exercise every path of the host (echo, sleep, spin, fail, trap, grow,
// count, heartbeat_spin), the workflow tally, whose query handlers
// exercise queries, and the workflow chain, which continues as new. Users deploy it to try weft; the host's tests call it.
//
// Build (the committed testkit.wasm is this command's output):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o plugins/testkit/testkit.wasm ./plugins/testkit
package main

import (
	"context"
	"runtime"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/activity"
)

func init() {
	activity.RegisterWithOptions(Echo, activity.RegisterOptions{Name: "echo"})
	activity.RegisterWithOptions(Sleep, activity.RegisterOptions{Name: "sleep"})
	activity.RegisterWithOptions(Spin, activity.RegisterOptions{Name: "spin"})
	activity.RegisterWithOptions(Fail, activity.RegisterOptions{Name: "fail"})
	activity.RegisterWithOptions(Trap, activity.RegisterOptions{Name: "trap"})
	activity.RegisterWithOptions(Grow, activity.RegisterOptions{Name: "grow"})
	activity.RegisterWithOptions(Count, activity.RegisterOptions{Name: "count"})
}

// main is never called: the module is a WASI reactor (-buildmode=c-shared).
func main() {}

// Echo returns its input unchanged. It takes and returns the frame itself,
// so the Value is neither decoded nor encoded again; the host validates
// the output as always.
func Echo(_ context.Context, in activity.Frame) (activity.Frame, error) { return in, nil }

// SleepInput is the input of Sleep.
type SleepInput struct {
	MS int64 `json:"ms"`
}

// sleepSlice is how often Sleep checks for cancellation.
const sleepSlice = 5 * time.Millisecond

// Sleep sleeps for in.MS milliseconds and returns null. It polls for
// cancellation every few milliseconds and, when cancelled, returns at once
// with a non-retryable error of type "cancelled".
func Sleep(ctx context.Context, in SleepInput) (codec.Value, error) {
	deadline := time.Now().Add(time.Duration(in.MS) * time.Millisecond)
	for {
		if activity.Cancelled(ctx) {
			return codec.Null(), activity.NewNonRetryableApplicationError("sleep cancelled", "cancelled")
		}
		left := time.Until(deadline)
		if left <= 0 {
			return codec.Null(), nil
		}
		time.Sleep(min(left, sleepSlice))
	}
}

// spins counts Spin's iterations, so the loop has an effect.
var spins uint64 //nolint:unused // written only, so that Spin's loop does work

// Spin loops forever; only the host's timeout or cancellation stops it.
func Spin(context.Context, codec.Value) (codec.Value, error) {
	for {
		spins++
	}
}

// FailInput is the input of Fail.
type FailInput struct {
	Type         string `json:"type"`
	Message      string `json:"message"`
	NonRetryable bool   `json:"non_retryable"`
}

// Fail returns the typed error its input describes.
func Fail(_ context.Context, in FailInput) (codec.Value, error) {
	return codec.Null(), &activity.ApplicationError{Type: in.Type, Message: in.Message, NonRetryable: in.NonRetryable}
}

// Trap executes the wasm instruction unreachable.
func Trap(context.Context, codec.Value) (codec.Value, error) {
	runtime.Breakpoint()
	return codec.Null(), nil
}

// hoard keeps Grow's allocations alive.
var hoard [][]byte

// Grow allocates 1 MiB blocks until the memory limit stops it.
func Grow(context.Context, codec.Value) (codec.Value, error) {
	for {
		b := make([]byte, 1<<20)
		b[len(b)-1] = 1
		hoard = append(hoard, b)
	}
}

// CountInput is the input of Count.
type CountInput struct {
	To              int64 `json:"to"`
	CheckpointEvery int64 `json:"checkpoint_every"`
}

// CountOutput is the output of Count.
type CountOutput struct {
	Count       int64 `json:"count"`
	ResumedFrom int64 `json:"resumed_from"`
}

// countProgressEvery is how many steps apart Count reports its progress
// when it does not checkpoint.
const countProgressEvery = 4096

// Count counts from the last checkpoint (or 0) to in.To, checkpointing the
// count every in.CheckpointEvery steps (never when it is 0 or less), and
// returns {"count": To, "resumed_from": where it started}. It reports its
// progress (done = the count, total = To) at each checkpoint, every 4096
// steps when it does not checkpoint, and at the end.
func Count(ctx context.Context, in CountInput) (CountOutput, error) {
	var from int64
	if _, err := activity.LastCheckpoint(ctx, &from); err != nil {
		return CountOutput{}, err
	}
	every := in.CheckpointEvery
	if every <= 0 {
		every = countProgressEvery
	}
	total := max(in.To, 0)
	n := from
	for n < in.To {
		n++
		if n%every != 0 && n != in.To {
			continue
		}
		if in.CheckpointEvery > 0 && n%in.CheckpointEvery == 0 {
			if err := activity.Checkpoint(ctx, n); err != nil {
				return CountOutput{}, err
			}
		}
		// The report cannot be refused: 0 < n <= total.
		_ = activity.Progress(ctx, n, total, "counting")
	}
	return CountOutput{Count: n, ResumedFrom: from}, nil
}
