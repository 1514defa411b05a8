package runtime

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

func TestTask(t *testing.T) {
	t.Parallel()

	t.Run("StateMachine", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		in := mustEnvelope(t, codec.Map(codec.Entry{Key: "n", Value: codec.Long(7)}))
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo", Input: in})
		// With a worker idle the task starts in its creating transaction.
		require.Contains(t, []store.Status{store.StatusQueued, store.StatusRunning}, task.Status)
		require.Equal(t, modules.Digest(testWasm), task.ModuleDigest)
		require.Equal(t, store.KindActivity, task.Kind)
		require.Equal(t, store.OnRestartRetry, task.OnRestart, "an activity task retries after a restart by default")

		evs := mustEvents(t, e, b.admin, task.ID, -1)
		requireGapless(t, evs, 0)
		require.Equal(t, []string{
			store.EventResponseCreated, store.EventStatusChanged, store.EventResponseInProgress, store.EventResponseCompleted,
		}, eventTypes(evs))
		var statuses []store.Status
		for _, ev := range evs[:3] {
			var se store.StatusEvent
			require.NoError(t, json.Unmarshal(ev.Payload, &se))
			statuses = append(statuses, se.Status)
		}
		require.Equal(t, []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning}, statuses)
		var final store.Response
		require.NoError(t, json.Unmarshal(evs[3].Payload, &final))
		require.Equal(t, store.StatusCompleted, final.Status)

		got, err := e.TaskGet(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
		require.Equal(t, 1, got.Attempt)
		frame, err := in.Frame()
		require.NoError(t, err)
		require.Equal(t, frame, got.Output.Data)

		resp, err := e.ResponseGet(t.Context(), b.admin, task.ResponseID())
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, resp.Status)
		require.Equal(t, frame, resp.Output.Data)
		require.Equal(t, 1, b.exec.callCount())
	})

	t.Run("RunWaitsForTheResponse", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		resp, err := e.TaskRun(t.Context(), &TaskCreateParams{Module: "test", Function: "echo", Input: mustEnvelope(t, codec.Long(42))})
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, resp.Status)
		v, err := codec.DecodeFrame(resp.Output.Data)
		require.NoError(t, err)
		n, ok := v.AsLong()
		require.True(t, ok)
		require.EqualValues(t, 42, n)
	})

	t.Run("ManyTasksAllComplete", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		const n = 200
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				task, err := e.TaskCreate(context.Background(), &TaskCreateParams{
					ClientID: []string{"cli_a", "cli_b", "cli_c"}[i%3], Module: "test", Function: "echo",
					Input: mustEnvelope(t, codec.Long(int64(i))),
				})
				require.NoError(t, err)
				ids[i] = task.ID
			})
		}
		wg.Wait()
		for i, id := range ids {
			task := mustFinish(t, e, id)
			require.Equal(t, store.StatusCompleted, task.Status)
			v, err := codec.DecodeFrame(task.Output.Data)
			require.NoError(t, err)
			got, _ := v.AsLong()
			require.EqualValues(t, i, got)
		}
	})

	t.Run("NullInputByDefault", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "test", Function: "echo"})
		require.NoError(t, err)
		v, err := codec.DecodeFrame(mustFinish(t, e, task.ID).Output.Data)
		require.NoError(t, err)
		require.True(t, v.IsNull())
	})

	t.Run("BadParams", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		good := mustEnvelope(t, codec.Long(1))
		tests := []struct {
			name  string
			p     TaskCreateParams
			code  fault.Code
			param string
		}{
			{name: "no module", p: TaskCreateParams{Function: "echo"}, code: fault.Invalid, param: "module"},
			{name: "no function", p: TaskCreateParams{Module: "test"}, code: fault.Invalid, param: "function"},
			{name: "unknown module", p: TaskCreateParams{Module: "nope", Function: "echo"}, code: fault.ModuleNotFound},
			{name: "unknown function", p: TaskCreateParams{Module: "test", Function: "nope"}, code: fault.FunctionNotFound, param: "function"},
			{name: "bad policy", p: TaskCreateParams{Module: "test", Function: "echo", OnRestart: "later"}, code: fault.Invalid, param: "on_restart"},
			{name: "negative timeout", p: TaskCreateParams{Module: "test", Function: "echo", TimeoutMS: -1}, code: fault.Invalid, param: "timeout_ms"},
			{name: "bad coefficient", p: TaskCreateParams{Module: "test", Function: "echo", Retry: &store.RetryPolicy{BackoffCoefficient: 0.5}}, code: fault.Invalid, param: "retry.backoff_coefficient"},
			{name: "json codec", p: TaskCreateParams{Module: "test", Function: "echo", Input: codec.Envelope{Codec: "json", Blob: good.Blob}}, code: fault.Code(codec.CodeUnsupportedPayloadCodec), param: "input"},
			{name: "bad base64", p: TaskCreateParams{Module: "test", Function: "echo", Input: codec.Envelope{Codec: "avro", Blob: "!!"}}, code: fault.Code(codec.CodeInvalidPayloadFraming), param: "input"},
			{name: "bad fingerprint", p: TaskCreateParams{Module: "test", Function: "echo", Input: codec.EnvelopeOf([]byte("\xc3\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"))}, code: fault.Code(codec.CodeUnsupportedPayloadSchema), param: "input"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.TaskCreate(t.Context(), &tc.p)
				require.Error(t, err)
				require.Equal(t, tc.code, fault.CodeOf(err), "%v", err)
				require.Equal(t, tc.param, fault.Param(err))
			})
		}
	})

	t.Run("Visibility", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		alice := Caller{ClientID: "cli_alice"}
		bob := Caller{ClientID: "cli_bob"}
		task := mustCreate(t, e, TaskCreateParams{ClientID: alice.ClientID, Function: "echo"})
		mustFinish(t, e, task.ID)

		_, err := e.TaskGet(t.Context(), alice, task.ID)
		require.NoError(t, err)
		_, err = e.TaskGet(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		for name, op := range map[string]func() error{
			"get":      func() error { _, err := e.TaskGet(t.Context(), bob, task.ID); return err },
			"cancel":   func() error { _, err := e.TaskCancel(t.Context(), bob, task.ID); return err },
			"events":   func() error { _, err := e.EventList(t.Context(), bob, task.ID, -1, 0); return err },
			"watch":    func() error { _, err := e.EventSubscribe(t.Context(), bob, task.ID, -1); return err },
			"response": func() error { _, err := e.ResponseGet(t.Context(), bob, task.ResponseID()); return err },
			"wait":     func() error { _, err := e.TaskWait(t.Context(), bob, task.ID); return err },
			"signal":   func() error { return e.TaskSignal(t.Context(), bob, task.ID, "s", codec.Envelope{}) },
			"unknown":  func() error { _, err := e.TaskGet(t.Context(), alice, store.NewID(store.TaskIDPrefix)); return err },
			"bad id":   func() error { _, err := e.TaskGet(t.Context(), alice, "../etc/passwd"); return err },
		} {
			require.Equal(t, fault.NotFound, fault.CodeOf(op()), name)
		}

		other := mustCreate(t, e, TaskCreateParams{ClientID: bob.ClientID, Function: "echo"})
		mine, _, err := e.TaskList(t.Context(), alice, &TaskListParams{})
		require.NoError(t, err)
		require.Len(t, mine, 1)
		require.Equal(t, task.ID, mine[0].ID)
		all, _, err := e.TaskList(t.Context(), b.admin, &TaskListParams{})
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, other.ID, all[0].ID, "newest first")
	})

	t.Run("ListFullPages", func(t *testing.T) {
		t.Parallel()
		// Tasks that never start: the call blocks until the test ends.
		block := make(chan struct{})
		t.Cleanup(func() { close(block) })
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}, func(c *Config) { c.Workers = 1 })
		n := store.MaxListLimit + 1
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += 8 {
					mustCreate(t, e, TaskCreateParams{Function: "echo"})
				}
			}()
		}
		wg.Wait()
		page, next, err := e.TaskList(t.Context(), b.admin, &TaskListParams{Limit: store.MaxListLimit})
		require.NoError(t, err)
		require.Len(t, page, store.MaxListLimit)
		require.NotEmpty(t, next, "a full page of MaxListLimit still says another follows")
		rest, next, err := e.TaskList(t.Context(), b.admin, &TaskListParams{Limit: store.MaxListLimit, Cursor: next})
		require.NoError(t, err)
		require.Len(t, rest, 1)
		require.Empty(t, next)
	})

	t.Run("ListPages", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		var ids []string
		for range 5 {
			ids = append(ids, mustCreate(t, e, TaskCreateParams{Function: "echo"}).ID)
		}
		for _, id := range ids {
			mustFinish(t, e, id)
		}
		var seen []string
		cursor := ""
		for {
			page, next, err := e.TaskList(t.Context(), b.admin, &TaskListParams{Cursor: cursor, Limit: 2, Status: "completed"})
			require.NoError(t, err)
			for _, task := range page {
				seen = append(seen, task.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, seen)
		_, _, err := e.TaskList(t.Context(), b.admin, &TaskListParams{Status: "sleeping"})
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
	})

	t.Run("ResponseOfUnfinishedTask", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			<-release
			return echo(ctx, call)
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work"})
		_, err := e.ResponseGet(t.Context(), b.admin, task.ResponseID())
		require.Equal(t, fault.TaskNotFinished, fault.CodeOf(err))
		close(release)
		mustFinish(t, e, task.ID)
		_, err = e.ResponseGet(t.Context(), b.admin, task.ResponseID())
		require.NoError(t, err)
	})

	t.Run("ClosedEngineRefusesWork", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		require.NoError(t, e.Close(t.Context()))
		require.NoError(t, e.Close(t.Context()), "Close is idempotent")
		_, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "test", Function: "echo"})
		require.Equal(t, fault.Unavailable, fault.CodeOf(err))
		require.False(t, e.Ready())
	})
}

func TestModule(t *testing.T) {
	t.Parallel()

	t.Run("DeletedRefusesTasks", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, echo, nil)
		require.NoError(t, e.Modules().Delete(t.Context(), "test"))
		_, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "test", Function: "echo"})
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err))
	})

	t.Run("TaskStaysPinned", func(t *testing.T) {
		t.Parallel()
		started := make(chan string, 1)
		release := make(chan struct{})
		e, _ := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			started <- call.Digest
			<-release
			return echo(ctx, call)
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, modules.Digest(testWasm), <-started)
		_, err := e.Modules().Deploy(t.Context(), "test", append([]byte("v2 "), testWasm...))
		require.NoError(t, err)
		close(release)
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusCompleted, done.Status)
		require.Equal(t, modules.Digest(testWasm), done.ModuleDigest)
	})

	t.Run("MissingFileFailsTheTask", func(t *testing.T) {
		t.Parallel()
		b := mustStore(t)
		b.exec.CallFunc = echo
		// Record a module whose file was never stored.
		_, err := b.db.ModuleInsert(t.Context(), &store.ModuleInsertParams{
			Name: "ghost", Digest: modules.Digest([]byte("ghost")), Size: 5,
			Functions: []store.Function{{Name: "echo", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		e := mustOpen(t, b.engineConfig(t))
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "ghost", Function: "echo"})
		require.NoError(t, err)
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.ModuleNotFound), done.Error.Code)
		require.Zero(t, b.exec.callCount())
	})

	t.Run("CorruptFileFailsTheTask", func(t *testing.T) {
		t.Parallel()
		b := mustStore(t)
		b.exec.CallFunc = echo
		wasm := []byte("module damaged on disk")
		digest, err := b.files.Put(t.Context(), wasm)
		require.NoError(t, err)
		_, err = b.db.ModuleInsert(t.Context(), &store.ModuleInsertParams{
			Name: "damaged", Digest: digest, Size: int64(len(wasm)),
			Functions: []store.Function{{Name: "echo", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		path, err := b.files.Path(digest)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(path, 0o600))
		require.NoError(t, os.WriteFile(path, []byte("module changed on disk!"), 0o600))
		e := mustOpen(t, b.engineConfig(t))
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "damaged", Function: "echo"})
		require.NoError(t, err)
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.ModuleInvalid), done.Error.Code)
		require.Zero(t, b.exec.callCount())
		b.exec.mu.Lock()
		defer b.exec.mu.Unlock()
		require.Zero(t, b.exec.compiles, "damaged bytes never reach the compiler")
	})

	t.Run("LoadsOncePerDigest", func(t *testing.T) {
		t.Parallel()
		b := mustStore(t)
		b.exec.CallFunc = echo
		wasm := []byte("module loaded by a worker")
		_, err := b.files.Put(t.Context(), wasm)
		require.NoError(t, err)
		_, err = b.db.ModuleInsert(t.Context(), &store.ModuleInsertParams{
			Name: "cold", Digest: modules.Digest(wasm), Size: int64(len(wasm)),
			Functions: []store.Function{{Name: "echo", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		e := mustOpen(t, b.engineConfig(t))
		var ids []string
		for range 20 {
			task, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "cold", Function: "echo"})
			require.NoError(t, err)
			ids = append(ids, task.ID)
		}
		for _, id := range ids {
			require.Equal(t, store.StatusCompleted, mustFinish(t, e, id).Status)
		}
		b.exec.mu.Lock()
		defer b.exec.mu.Unlock()
		require.Equal(t, 1, b.exec.compiles)
	})
}

func TestEngineClose(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
		close(entered)
		<-ctx.Done() // a plugin that honours cancellation
		return nil, ctx.Err()
	}, nil)
	task := mustCreate(t, e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartRetry})
	<-entered
	start := time.Now()
	require.NoError(t, e.Close(t.Context()))
	require.Less(t, time.Since(start), DefaultShutdownTimeout)
	// The task is left as it was, for recovery at the next start.
	got, err := b.db.TaskGet(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusRunning, got.Status)
}

// TestTaskDirectStart checks that a task created while a worker is idle and
// its module loaded starts in its creating transaction and goes straight to
// that worker, and that it is queued for the scheduler otherwise.
func TestTaskDirectStart(t *testing.T) {
	t.Parallel()

	// statuses returns what the non-terminal status events of evs record.
	statuses := func(tb testing.TB, evs []*store.Event) []store.StatusEvent {
		tb.Helper()
		var out []store.StatusEvent
		for _, ev := range evs {
			if !store.IsStatusEvent(ev.Type) || store.IsTerminalEvent(ev.Type) {
				continue
			}
			var se store.StatusEvent
			require.NoError(tb, json.Unmarshal(ev.Payload, &se))
			out = append(out, se)
		}
		return out
	}
	// started is the log of a task from its creation to its completion in
	// its first attempt.
	started := []store.StatusEvent{
		{Status: store.StatusQueued},
		{Status: store.StatusLoading, From: store.StatusQueued, Attempt: 1},
		{Status: store.StatusRunning, From: store.StatusLoading, Attempt: 1},
	}
	startedTypes := []string{store.EventResponseCreated, store.EventStatusChanged, store.EventResponseInProgress, store.EventResponseCompleted}

	t.Run("IdleWorker", func(t *testing.T) {
		t.Parallel()
		cs, edit := counted()
		e, b := setup(t, echo, edit)
		waitIdle(t, e, cs)
		base := cs.calls()
		task := mustCreate(t, e, TaskCreateParams{Function: "echo", Input: mustEnvelope(t, codec.Long(7))})
		require.Equal(t, store.StatusRunning, task.Status)
		require.Equal(t, 1, task.Attempt)
		require.False(t, task.StartedAt.IsZero())
		require.Equal(t, int64(2), task.LastSeq)

		done := finishedIn(t, b.db, task.ID)
		waitIdle(t, e, cs)
		requireValue(t, codec.Long(7), output(t, done))
		require.Equal(t, 1, done.Attempt)
		require.True(t, done.StartedAt.Equal(task.StartedAt))
		evs := logOf(t, b.db, task.ID)
		requireGapless(t, evs, 0)
		require.Equal(t, startedTypes, eventTypes(evs))
		require.Equal(t, started, statuses(t, evs))
		require.Equal(t, storeCalls{taskTransition: 1}, cs.calls().since(base),
			"no claim and no start: only the end is written after the insert")
		require.Equal(t, 1, b.exec.callCount())
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		cs, edit := counted()
		e, b := setup(t, echo, edit)
		waitIdle(t, e, cs)
		base := cs.calls()
		beginKey(t, b.db, "cli_a", "create-1", "POST /v1/tasks")
		task, err := e.TaskCreate(t.Context(), &TaskCreateParams{
			ClientID: "cli_a", Module: "test", Function: "echo",
			Input: mustEnvelope(t, codec.String("kept")),
			Idempotency: &IdempotencyReply{Key: "create-1", StatusCode: 202, Body: func(task *store.Task) ([]byte, error) {
				return []byte(`{"id":"` + task.ID + `","status":"` + string(task.Status) + `"}`), nil
			}},
		})
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, task.Status, "the stored reply shows the task queued: so is the task")
		require.Zero(t, task.Attempt)
		res := keyOutcome(t, b.db, "cli_a", "create-1", "POST /v1/tasks")
		require.Equal(t, store.IdempotencyReplay, res.Outcome, "completed with the insert")
		require.Equal(t, 202, res.Key.StatusCode)
		require.Equal(t, `{"id":"`+task.ID+`","status":"queued"}`, string(res.Key.Body))

		done := finishedIn(t, b.db, task.ID)
		requireValue(t, codec.String("kept"), output(t, done))
		require.Equal(t, 1, done.Attempt)
		evs := logOf(t, b.db, task.ID)
		requireGapless(t, evs, 0)
		require.Equal(t, startedTypes, eventTypes(evs))
		require.Equal(t, started, statuses(t, evs))
		require.GreaterOrEqual(t, cs.calls().since(base).taskClaim, int64(1), "the scheduler claimed it")
	})

	t.Run("BusyWorker", func(t *testing.T) {
		t.Parallel()
		var (
			mu    sync.Mutex
			order []string
		)
		note := func(s string) {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}
		entered := make(chan struct{}, 1)
		gate := make(chan struct{})
		release := sync.OnceFunc(func() { close(gate) })
		cs, edit := counted()
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			note("start " + call.Function)
			defer note("end " + call.Function)
			if call.Function == "work" {
				entered <- struct{}{}
				<-gate
			}
			return echo(ctx, call)
		}, func(c *Config) {
			c.Workers = 1
			edit(c)
		})
		t.Cleanup(release)
		waitIdle(t, e, cs)
		first := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, store.StatusRunning, first.Status)
		recv(t, entered, "the first task never started")

		second := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		require.Equal(t, store.StatusQueued, second.Status, "the only worker is busy")
		require.Zero(t, second.Attempt)
		cur, err := b.db.TaskGet(t.Context(), second.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, cur.Status, "nothing can take it while the worker is busy")

		release()
		require.Equal(t, store.StatusCompleted, finishedIn(t, b.db, first.ID).Status)
		done := finishedIn(t, b.db, second.ID)
		require.Equal(t, store.StatusCompleted, done.Status)
		require.Equal(t, 1, done.Attempt)
		evs := logOf(t, b.db, second.ID)
		requireGapless(t, evs, 0)
		require.Equal(t, startedTypes, eventTypes(evs))
		require.Equal(t, started, statuses(t, evs))
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{"start work", "end work", "start echo", "end echo"}, order)
	})

	t.Run("ModuleNotLoaded", func(t *testing.T) {
		t.Parallel()
		first, b := setup(t, echo, nil)
		require.NoError(t, first.Close(t.Context()))
		// A new engine over the same store knows the module but has not
		// compiled it yet.
		cs, edit := counted()
		cfg := b.engineConfig(t)
		edit(&cfg)
		e := mustOpen(t, cfg)
		waitIdle(t, e, cs)
		task := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		require.Equal(t, store.StatusQueued, task.Status, "a task whose module is not loaded loads it while loading")
		require.Equal(t, store.StatusCompleted, finishedIn(t, b.db, task.ID).Status)
		waitIdle(t, e, cs)

		again := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		require.Equal(t, store.StatusRunning, again.Status, "now the module is loaded")
		require.Equal(t, store.StatusCompleted, finishedIn(t, b.db, again.ID).Status)
		b.exec.mu.Lock()
		defer b.exec.mu.Unlock()
		require.Equal(t, 2, b.exec.compiles, "once at deploy, once in the new engine")
	})
}
