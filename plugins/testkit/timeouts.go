package main

import (
	"context"
	"time"

	"github.com/weft-run/weft/sdk-wasm/activity"
)

// The activity of the heartbeat timeout (docs/workflows.md, "Timeouts").
func init() {
	activity.RegisterWithOptions(HeartbeatSpin, activity.RegisterOptions{Name: "heartbeat_spin"})
}

// HeartbeatSpinInput is the input of HeartbeatSpin.
type HeartbeatSpinInput struct {
	// Beats is how many heartbeats to send, IntervalMS apart.
	Beats      int64 `json:"beats"`
	IntervalMS int64 `json:"interval_ms"`
	// UntilMS is a Unix time in milliseconds: an attempt that has sent
	// its heartbeats before it spins without any; one after it returns
	// "done".
	UntilMS int64 `json:"until_ms"`
}

// HeartbeatSpin heartbeats in.Beats times, then, before in.UntilMS, spins
// without a heartbeat (only the host's heartbeat timeout stops it); after
// it, it returns "done".
func HeartbeatSpin(ctx context.Context, in HeartbeatSpinInput) (string, error) {
	for range in.Beats {
		if activity.Heartbeat(ctx) {
			return "", activity.NewNonRetryableApplicationError("heartbeat_spin cancelled", "cancelled")
		}
		time.Sleep(time.Duration(in.IntervalMS) * time.Millisecond)
	}
	if time.Now().UnixMilli() >= in.UntilMS {
		return "done", nil
	}
	for {
		spins++
	}
}
