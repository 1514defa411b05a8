package host_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// journal is a test double of the embedder's workflow journal: the
// commands a workflow issued, in order, and the futures resolved so far.
type journal struct {
	commands []string
	calls    []host.ActivityCall
	results  map[host.FutureID]host.FutureResult
	order    []host.FutureID // resolution order
	now      time.Time
}

func newJournal() *journal {
	return &journal{results: map[host.FutureID]host.FutureResult{}, now: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)}
}

func (j *journal) resolve(id host.FutureID, r host.FutureResult) {
	j.results[id] = r
	j.order = append(j.order, id)
}

// errNondeterminism is what the journal answers when a replay asks for
// something other than what it recorded.
type errNondeterminism struct {
	step             int
	recorded, wanted string
}

func (e *errNondeterminism) Error() string {
	return fmt.Sprintf("nondeterminism at step %d: recorded %s, asked %s", e.step, e.recorded, e.wanted)
}

// replay is one workflow call's WorkflowHost over a journal: a step
// counter, the ids it hands out (the step), and a seeded random source.
type replay struct {
	j     *journal
	step  int
	reads int // results read, for History
	rnd   *rand.ChaCha8
}

var _ host.WorkflowHost = (*replay)(nil)

func (j *journal) replay() *replay {
	return &replay{j: j, rnd: rand.NewChaCha8([32]byte{1, 2, 3})}
}

func (r *replay) command(cmd string) (host.FutureID, error) {
	r.step++
	if r.step <= len(r.j.commands) {
		if rec := r.j.commands[r.step-1]; rec != cmd {
			return 0, &errNondeterminism{step: r.step, recorded: rec, wanted: cmd}
		}
	} else {
		r.j.commands = append(r.j.commands, cmd)
	}
	return host.FutureID(r.step), nil
}

func (r *replay) ScheduleActivity(_ context.Context, c host.ActivityCall) (host.FutureID, error) {
	v, err := codec.DecodeFrame(c.Input)
	if err != nil {
		return 0, err
	}
	js, err := codec.MarshalProjection(v)
	if err != nil {
		return 0, err
	}
	id, err := r.command(fmt.Sprintf("activity %s/%s %s", c.Module, c.Function, js))
	if err == nil && int(id) > len(r.j.calls) {
		r.j.calls = append(r.j.calls, c)
	}
	return id, err
}

func (r *replay) StartTimer(_ context.Context, d time.Duration) (host.FutureID, error) {
	return r.command("timer " + d.String())
}

func (r *replay) WaitSignal(_ context.Context, name string, timeout time.Duration) (host.FutureID, error) {
	return r.command(fmt.Sprintf("signal %s %s", name, timeout))
}

func (r *replay) Await(_ context.Context, ids []host.FutureID, all bool) (int, bool, error) {
	if all {
		for _, id := range ids {
			if id == host.FutureID(abi.CancelFuture) {
				continue // this journal is never asked to cancel
			}
			if _, ok := r.j.results[id]; !ok {
				return 0, false, nil
			}
		}
		return 0, true, nil
	}
	for _, done := range r.j.order {
		if i := slices.Index(ids, done); i >= 0 {
			return i, true, nil
		}
	}
	return 0, false, nil
}

func (r *replay) Result(_ context.Context, id host.FutureID) (host.FutureResult, error) {
	res, ok := r.j.results[id]
	if !ok {
		return res, fmt.Errorf("future %d is not resolved", id)
	}
	r.reads++
	return res, nil
}

func (r *replay) Now() time.Time { return r.j.now }

func (r *replay) Random(p []byte) { _, _ = r.rnd.Read(p) }

func (r *replay) History() (length, size int64) { return int64(r.step + r.reads), 0 }

func TestWorkflow(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	digest := MustCompile(t, h, wfkitPath)
	call := func(t *testing.T, fn string, in codec.Value, j *journal, l *logs) (*host.CallResult, error) {
		t.Helper()
		req := &host.CallRequest{Digest: digest, Function: fn, Input: MustFrame(t, in), Workflow: j.replay()}
		if l != nil {
			req.Log = l.add
		}
		return h.Call(t.Context(), req)
	}
	value := func(t *testing.T, v codec.Value) host.FutureResult {
		return host.FutureResult{Outcome: abi.OutcomeValue, Frame: MustFrame(t, v)}
	}

	t.Run("Manifest", func(t *testing.T) {
		t.Parallel()
		info, ok := h.Module(digest)
		require.True(t, ok)
		require.Equal(t, []host.Function{
			{Name: "greet", Kind: abi.KindWorkflow},
			{Name: "fanout", Kind: abi.KindWorkflow},
			{Name: "checkpointer", Kind: abi.KindWorkflow},
			{Name: "shout", Kind: abi.KindActivity},
			{Name: "clock", Kind: abi.KindActivity},
		}, info.Functions)
	})

	t.Run("ReplayToCompletion", func(t *testing.T) {
		t.Parallel()
		j := newJournal()
		in := codec.String("weft")

		res, err := call(t, "greet", in, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status)
		require.Equal(t, abi.KindWorkflow, res.Kind)
		require.Equal(t, []string{`activity /shout "weft"`}, j.commands)
		require.Equal(t, host.ActivityOptions{
			Timeout: 5 * time.Second,
			Retry:   &host.RetryPolicy{MaxAttempts: 3, NonRetryableErrorTypes: []string{"bad_name"}},
		}, j.calls[0].Options)

		j.resolve(1, value(t, codec.String("WEFT!")))
		res, err = call(t, "greet", in, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status)
		require.Equal(t, []string{`activity /shout "weft"`, "timer 1s"}, j.commands)

		j.resolve(2, value(t, codec.Null()))
		res, err = call(t, "greet", in, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status)
		require.Equal(t, []string{`activity /shout "weft"`, "timer 1s", "signal approve 1h0m0s"}, j.commands)

		j.resolve(3, value(t, codec.String("alice")))
		var l logs
		res, err = call(t, "greet", in, j, &l)
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		out := MustDecode(t, res.Output)
		get := func(k string) string {
			v, ok := out.Get(k)
			require.True(t, ok, k)
			s, _ := v.AsString()
			return s
		}
		require.Equal(t, "WEFT!", get("greeting"))
		require.Equal(t, "approved by alice", get("approval"))
		require.Equal(t, j.now.Format(time.RFC3339Nano), get("now"))
		require.Equal(t, j.now.Format(time.RFC3339Nano), get("wasi_now"), "WASI's clock is the workflow's")
		want := make([]byte, 8)
		_, _ = rand.NewChaCha8([32]byte{1, 2, 3}).Read(want)
		require.Equal(t, hex.EncodeToString(want), get("random"))
		require.Contains(t, l.all(), host.LogEntry{Level: abi.LevelInfo, Source: host.SourceLog, Message: "shouted result=WEFT!"})
		require.Len(t, j.commands, 3, "the completed run issued no new command")

		again, err := call(t, "greet", in, j, nil)
		require.NoError(t, err)
		require.Equal(t, res.Output, again.Output, "a replay of the same journal gives the same result")
	})

	t.Run("ResultsOfEverySize", func(t *testing.T) {
		t.Parallel()
		// The SDK reads a result with future_read into the free end of its
		// arena when it fits, else with future_result and blob_read: each
		// size must come back whole, whichever way it went.
		for _, n := range []int{0, 1, 900, 1 << 10, 5000, 40 << 10, 70 << 10, 300 << 10} {
			j := newJournal()
			in := codec.String("weft")
			big := strings.Repeat("w", n)
			j.resolve(1, value(t, codec.String(big)))
			j.resolve(2, value(t, codec.Null()))
			j.resolve(3, value(t, codec.String(big+"!")))
			res, err := call(t, "greet", in, j, nil)
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status)
			out := MustDecode(t, res.Output)
			greeting, _ := out.Get("greeting")
			approval, _ := out.Get("approval")
			requireValue(t, codec.String(big), greeting, fmt.Sprint(n, " bytes"))
			requireValue(t, codec.String("approved by "+big+"!"), approval, fmt.Sprint(n, " bytes"))
		}
	})

	t.Run("SignalTimeout", func(t *testing.T) {
		t.Parallel()
		j := newJournal()
		j.commands = []string{`activity /shout "weft"`, "timer 1s", "signal approve 1h0m0s"}
		j.resolve(1, value(t, codec.String("WEFT!")))
		j.resolve(2, value(t, codec.Null()))
		j.resolve(3, host.FutureResult{Outcome: abi.OutcomeTimeout})
		res, err := call(t, "greet", codec.String("weft"), j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		approval, _ := MustDecode(t, res.Output).Get("approval")
		requireValue(t, codec.String("timeout"), approval)
	})

	t.Run("ActivityFailed", func(t *testing.T) {
		t.Parallel()
		j := newJournal()
		j.commands = []string{`activity /shout ""`}
		j.resolve(1, host.FutureResult{Outcome: abi.OutcomeError, Frame: MustFrame(t, obj("type", "bad_name", "message", "empty name", "non_retryable", true))})
		res, err := call(t, "greet", codec.String(""), j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, "bad_name", res.Error.Type)
		require.Equal(t, "empty name", res.Error.Message)
		require.True(t, res.Error.NonRetryable)
	})

	t.Run("Nondeterminism", func(t *testing.T) {
		t.Parallel()
		j := newJournal()
		j.commands = []string{`activity /shout "weft"`}
		_, err := call(t, "greet", codec.String("changed"), j, nil)
		requireCode(t, err, abi.CodeHookFailed)
		var nd *errNondeterminism
		require.True(t, errors.As(err, &nd), "the journal's own error reaches the caller: %v", err)
		require.Equal(t, 1, nd.step)
		require.Equal(t, `activity /shout "changed"`, nd.wanted)
	})

	t.Run("AwaitAnyAndAll", func(t *testing.T) {
		t.Parallel()
		j := newJournal()
		names := codec.List(codec.String("a"), codec.String("b"), codec.String("c"))
		res, err := call(t, "fanout", names, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status)
		require.Len(t, j.commands, 3, "all three activities are scheduled before the first await")

		j.resolve(2, value(t, codec.String("B!")))
		res, err = call(t, "fanout", names, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status, "await all still waits")

		j.resolve(3, value(t, codec.String("C!")))
		j.resolve(1, value(t, codec.String("A!")))
		res, err = call(t, "fanout", names, j, nil)
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		requireValue(t, codec.List(codec.String("first=1"), codec.String("A!"), codec.String("B!"), codec.String("C!")), MustDecode(t, res.Output))
	})

	t.Run("WorkflowCallsActivityImport", func(t *testing.T) {
		t.Parallel()
		_, err := call(t, "checkpointer", codec.Long(1), newJournal(), nil)
		requireCode(t, err, abi.CodeImportNotAllowed)
		require.ErrorContains(t, err, `workflow "checkpointer" called weft:activity/v1.checkpoint, which only activities may call`)
	})

	t.Run("ActivityCallsWorkflowImport", func(t *testing.T) {
		t.Parallel()
		_, err := call(t, "clock", codec.Null(), newJournal(), nil)
		requireCode(t, err, abi.CodeImportNotAllowed)
		require.ErrorContains(t, err, "weft:workflow/v1.now")
	})

	t.Run("ActivityOfAWorkflowModule", func(t *testing.T) {
		t.Parallel()
		res, err := call(t, "shout", codec.String("go"), newJournal(), nil)
		require.NoError(t, err)
		requireValue(t, codec.String("GO!"), MustDecode(t, res.Output))
	})
}
