package store_test

import (
	"fmt"
	"strings"

	"github.com/weft-run/weft/store"
)

// The start-up recovery table of persistence §11.3.
func ExampleRecoveryTarget() {
	policies := []store.OnRestart{store.OnRestartFail, store.OnRestartRetry, store.OnRestartResume}
	for _, s := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling} {
		line := fmt.Sprintf("%-10s", s)
		for _, p := range policies {
			to, _ := store.RecoveryTarget(s, p)
			line += fmt.Sprintf(" %-9s", to)
		}
		fmt.Println(strings.TrimRight(line, " "))
	}
	// Output:
	// queued     failed    queued    queued
	// loading    failed    queued    queued
	// running    failed    queued    running
	// cancelling cancelled cancelled cancelled
}

func ExamplePayload_MarshalJSON() {
	p := store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37, 0x00}}
	b, _ := p.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"codec":"avro","blob":"wwHioz3/VYAiNwA="}
}
