// Command wftimeouts is the workflow guest of the daemon's timeout tests
// (cmd/weft/e2e_timeout_test.go): workflows that wait while a timeout
// passes, time out a run, or start an activity too late. They run the
// activities of the testkit module (plugins/testkit), deployed as
// "testkit".
//
// Build (the committed cmd/weft/testdata/wftimeouts.wasm is this command's
// output):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o cmd/weft/testdata/wftimeouts.wasm ./cmd/weft/testdata/wftimeouts
package main

import (
	"errors"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

func init() {
	workflow.RegisterWithOptions(WaitWithActivity, workflow.RegisterOptions{Name: "wait_with_activity"})
	workflow.RegisterWithOptions(SlowUntil, workflow.RegisterOptions{Name: "slow_until"})
	workflow.RegisterWithOptions(StartLate, workflow.RegisterOptions{Name: "start_late"})
}

// main is never called: the module is a WASI reactor (-buildmode=c-shared).
func main() {}

// testkit runs activities from the testkit module.
func testkit(ctx workflow.Context, o workflow.ActivityOptions) workflow.Context {
	o.Module = "testkit"
	return workflow.WithActivityOptions(ctx, o)
}

// sleepInput is the input of testkit's sleep.
type sleepInput struct {
	MS int64 `json:"ms"`
}

// WaitWithActivityInput is the input of WaitWithActivity.
type WaitWithActivityInput struct {
	// SleepMS is how long the activity (testkit's sleep) it starts runs.
	SleepMS int64 `json:"sleep_ms"`
	// TimerMS, when above 0, makes the workflow wait for a timer of that
	// length; otherwise it waits for the signal "go".
	TimerMS int64 `json:"timer_ms"`
}

// WaitWithActivity starts a long sleep activity and, without awaiting it,
// waits for a timer or the signal "go"; then it returns "done". A
// workflow timeout that passes while it waits ends it, and its sleep
// activity is cancelled.
func WaitWithActivity(ctx workflow.Context, in WaitWithActivityInput) (string, error) {
	workflow.ExecuteActivity(testkit(ctx, workflow.ActivityOptions{}), "sleep", sleepInput{MS: in.SleepMS})
	if in.TimerMS > 0 {
		if err := workflow.Sleep(ctx, time.Duration(in.TimerMS)*time.Millisecond); err != nil {
			return "", err
		}
		return "done", nil
	}
	if err := workflow.WaitSignal(ctx, "go", 0).Get(ctx, nil); err != nil {
		return "", err
	}
	return "done", nil
}

// SlowUntilInput is the input of SlowUntil.
type SlowUntilInput struct {
	// TimerMS is the timer an attempt that starts before UntilMS (a Unix
	// time in milliseconds) waits for.
	TimerMS int64 `json:"timer_ms"`
	UntilMS int64 `json:"until_ms"`
}

// SlowUntil waits for a timer of in.TimerMS in an attempt that starts
// before in.UntilMS (by the workflow's time), and returns "done" at once
// in one that starts after it: with a run timeout below TimerMS, the first
// attempts time out and a later one completes.
func SlowUntil(ctx workflow.Context, in SlowUntilInput) (string, error) {
	if workflow.Now(ctx).UnixMilli() < in.UntilMS {
		if err := workflow.Sleep(ctx, time.Duration(in.TimerMS)*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "done", nil
}

// StartLateInput is the input of StartLate.
type StartLateInput struct {
	// BusyMS is how long the first activity (testkit's sleep) runs.
	BusyMS int64 `json:"busy_ms"`
	// ScheduleToStartMS is the schedule-to-start timeout of the second
	// activity (testkit's echo).
	ScheduleToStartMS int64 `json:"schedule_to_start_ms"`
}

// StartLate starts a sleep of in.BusyMS, then an echo whose
// schedule-to-start timeout is in.ScheduleToStartMS, and returns the
// error type the echo failed with ("" when it completed). On a daemon with
// one worker the sleep holds the worker, so the echo stays queued and
// fails with schedule_to_start_timeout.
func StartLate(ctx workflow.Context, in StartLateInput) (map[string]codec.Value, error) {
	busy := workflow.ExecuteActivity(testkit(ctx, workflow.ActivityOptions{}), "sleep", sleepInput{MS: in.BusyMS})
	late := workflow.ExecuteActivity(testkit(ctx, workflow.ActivityOptions{
		ScheduleToStartTimeout: time.Duration(in.ScheduleToStartMS) * time.Millisecond,
		RetryPolicy:            &workflow.RetryPolicy{MaximumAttempts: 3},
	}), "echo", "late")
	errType := ""
	var ae *workflow.ApplicationError
	if err := late.Get(ctx, nil); errors.As(err, &ae) {
		errType = ae.Type
	} else if err != nil {
		return nil, err
	}
	if err := busy.Get(ctx, nil); err != nil {
		return nil, err
	}
	return map[string]codec.Value{"error_type": codec.String(errType)}, nil
}
