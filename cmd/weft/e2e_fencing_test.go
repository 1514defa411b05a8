//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// TestE2EFencing freezes (SIGSTOP) the host running a long activity past
// its lease, lets the other host take the task over, and resumes
// (SIGCONT) it: the frozen host commits nothing more for the task (after
// the takeover the log holds the new host's attempt only, with one
// terminal event), logs that it lost the lease, and goes on serving.
func TestE2EFencing(t *testing.T) {
	dsn := MustOwnedDatabase(t)
	hosts := MustRunHosts(t, 2, dsn, "--lease-ttl", multiHostTTL.String())
	hosts[0].MustDeployTestkit()
	// The sleep ends while its host is frozen, so the frozen host tries to
	// commit its completion as soon as it runs again.
	id := hosts[0].mustCreate("testkit", "sleep", `{"ms":2500}`, "retry")

	var runner, other *Daemon
	require.Eventually(t, func() bool {
		tk := hosts[1].mustHostOf(id)
		for i, h := range hosts {
			if tk.Status == "running" && tk.Host == h.HostID() {
				runner, other = h, hosts[1-i]
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "the task never ran")
	time.Sleep(300 * time.Millisecond)
	runner.Freeze()
	frozen := time.Now()
	t.Logf("froze %s running %s", runner.HostID(), id)

	var takeover client.Event
	require.Eventually(t, func() bool {
		for _, ev := range other.MustEvents(id) {
			if ev.Type == "task.recovered" {
				takeover = ev
				return true
			}
		}
		return false
	}, multiHostTTL+2*takeoverMargin, 20*time.Millisecond, "the frozen host's task was not taken over")
	took := takeover.CreatedAt.Sub(frozen)
	t.Logf("taken over %s after the freeze (lease %s)", took.Round(time.Millisecond), multiHostTTL)
	require.Less(t, took, multiHostTTL+takeoverMargin)
	s := mustStatusData(t, takeover)
	require.Equal(t, "lease_expired", s.Reason)
	require.Equal(t, runner.HostID(), s.PreviousHost)
	require.Equal(t, other.HostID(), s.Host)

	// The new host runs the task; then the old one wakes up.
	require.Eventually(t, func() bool {
		tk := other.mustHostOf(id)
		return tk.Status == "running" && tk.Host == other.HostID()
	}, 10*time.Second, 10*time.Millisecond, "the new host did not run the task")
	runner.Thaw()
	runner.MustWaitLog("lease", 10*time.Second)

	tk := other.MustWaitStatus(id, 30*time.Second, "completed", "failed", "cancelled")
	require.Equal(t, "completed", tk.Status, "%+v", tk.Error)
	require.Equal(t, 2, tk.Attempt, "the takeover started attempt 2")
	events := other.MustEvents(id)
	mustCheckLog(t, id, events)
	after := false
	for _, ev := range events {
		if ev.SequenceNumber == takeover.SequenceNumber {
			after = true
			continue
		}
		if !after || ev.Type != "response.in_progress" && ev.Type != "task.status_changed" {
			continue
		}
		sd := mustStatusData(t, ev)
		if sd.Reason == "lease_expired" {
			continue // the takeover's own move (policy retry: back to queued)
		}
		require.Equal(t, 2, sd.Attempt, "after the takeover only attempt 2 writes: %s %s", ev.Type, ev.Data)
	}
	time.Sleep(multiHostTTL / 2) // the old host's late writes, if any, would land now
	require.Equal(t, events, other.MustEvents(id), "the old host wrote after the task ended")
	lost := false
	for _, line := range strings.Split(runner.LogText(), "\n") {
		if strings.Contains(line, id) && strings.Contains(strings.ToLower(line), "lease") {
			lost = true
		}
	}
	require.True(t, lost, "the old host logs that it lost the lease of %s:\n%s", id, runner.logTail(30))
	require.NoError(t, runner.Client.Ready(t.Context()), "the old host serves on")
}

// TestE2ECrossHostSignalStream starts a workflow through host B, opens
// its event stream on host C, and signals it through host A: the stream on
// C delivers every event of the workflow, in order, to the terminal one,
// whichever host wrote it.
func TestE2ECrossHostSignalStream(t *testing.T) {
	dsn := MustOwnedDatabase(t)
	hosts := MustRunHosts(t, 3, dsn, "--lease-ttl", multiHostTTL.String())
	a, b, c := hosts[0], hosts[1], hosts[2]
	b.MustDeployWfkit()
	id := b.mustCreate("wfkit", "greet", `"ann"`, "")

	type streamed struct {
		events []client.Event
		err    error
	}
	done := make(chan streamed, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	go func() {
		var got streamed
		got.err = c.Client.EventStream(ctx, id, client.EventStreamParams{}, func(se *client.StreamEvent) (bool, error) {
			ev, err := se.Event()
			if err != nil {
				return true, err
			}
			got.events = append(got.events, *ev)
			return false, nil
		})
		done <- got
	}()

	b.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)
	v, err := codec.ParseProjection([]byte(`"alice"`))
	require.NoError(t, err)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(t, err)
	_, err = a.Client.TaskSignal(t.Context(), id, "approve", &client.SignalRequest{Input: client.InputOf(env)})
	require.NoError(t, err)

	var got streamed
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("the stream on host C did not end")
	}
	require.NoError(t, got.err)
	want := a.MustEvents(id)
	mustCheckLog(t, id, want)
	require.Equal(t, want, got.events, "the stream on C is the whole log, in order")
	tk := c.MustTask(id)
	require.Equal(t, "completed", tk.Status, "%+v", tk.Error)
	var out map[string]any
	require.NoError(t, json.Unmarshal(tk.Output, &out))
	require.Equal(t, "approved by alice", out["approval"])
	require.Equal(t, "ANN!", out["greeting"])
	require.Equal(t, http.StatusOK, c.MustDo(http.MethodGet, "/readyz", nil, nil))
}
