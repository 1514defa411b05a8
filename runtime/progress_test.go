package runtime

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// progressEvents returns the payloads of the task.progress events of evs
// and checks that each comes before the terminal event.
func progressEvents(t *testing.T, evs []*store.Event) []map[string]any {
	t.Helper()
	var out []map[string]any
	ended := false
	for _, ev := range evs {
		if store.IsTerminalEvent(ev.Type) {
			ended = true
		}
		if ev.Type != EventProgress {
			continue
		}
		require.False(t, ended, "task.progress %d follows the terminal event", ev.Seq)
		var p map[string]any
		require.NoError(t, json.Unmarshal(ev.Payload, &p))
		out = append(out, p)
	}
	return out
}

func TestProgress(t *testing.T) {
	t.Parallel()

	t.Run("TightLoopCoalesces", func(t *testing.T) {
		t.Parallel()
		// With an hour between events, a call writes the first report it
		// makes and, at its end, the last one: never more than two.
		const n = 100_000
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			for i := range int64(n) {
				call.Progress(i+1, n, "")
			}
			return echo(ctx, call)
		}, func(c *Config) { c.ProgressInterval = time.Hour })
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
		evs := allEvents(t, e, task.ID)
		requireGapless(t, evs, 0)
		require.True(t, store.IsTerminalEvent(evs[len(evs)-1].Type), "the terminal event is the last")
		ps := progressEvents(t, evs)
		require.NotEmpty(t, ps)
		require.LessOrEqual(t, len(ps), 2, "%d reports in a tight loop gave %d events", n, len(ps))
		last := ps[len(ps)-1]
		require.Equal(t, map[string]any{"done": float64(n), "total": float64(n)}, last, "the last report is recorded, without an empty message")
		for _, p := range ps[:len(ps)-1] {
			require.Less(t, p["done"], float64(n), "the last report is recorded once")
		}
		got, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.NotNil(t, got.Progress)
		require.Equal(t, int64(n), got.Progress.Done)
		require.Equal(t, int64(n), got.Progress.Total)
	})

	t.Run("LiveThenFinal", func(t *testing.T) {
		t.Parallel()
		// The first report reaches the store while the call still runs;
		// later ones within the interval coalesce into the final event.
		var b *testBundle
		var e *Engine
		e, b = setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			call.Progress(1, 0, "warming up")
			deadline := time.Now().Add(10 * time.Second)
			for {
				task, err := b.db.TaskGet(ctx, call.TaskID)
				if err != nil {
					return nil, err
				}
				if task.Progress != nil {
					break
				}
				if time.Now().After(deadline) {
					return nil, fault.Errorf(fault.Internal, "the first report never reached the store")
				}
				time.Sleep(time.Millisecond)
			}
			call.Progress(2, 0, "a")
			call.Progress(3, 0, "b")
			call.Progress(4, 9, "almost")
			return echo(ctx, call)
		}, func(c *Config) { c.ProgressInterval = time.Hour })
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
		ps := progressEvents(t, allEvents(t, e, task.ID))
		require.Equal(t, []map[string]any{
			{"done": float64(1), "total": float64(0), "message": "warming up"},
			{"done": float64(4), "total": float64(9), "message": "almost"},
		}, ps)
		got, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, &store.TaskProgress{Done: 4, Total: 9, Message: "almost", UpdatedAt: got.Progress.UpdatedAt}, got.Progress)
	})

	t.Run("SpacedByTheInterval", func(t *testing.T) {
		t.Parallel()
		// Reports spread over several intervals each get their event once
		// the interval passed; the count stays within duration/interval+1.
		const interval = 20 * time.Millisecond
		var took time.Duration
		e, _ := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			start := time.Now()
			for i := range int64(2000) {
				call.Progress(i+1, 2000, "")
				if i%100 == 0 {
					time.Sleep(interval / 4)
				}
			}
			took = time.Since(start)
			return echo(ctx, call)
		}, func(c *Config) { c.ProgressInterval = interval })
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
		ps := progressEvents(t, allEvents(t, e, task.ID))
		require.LessOrEqual(t, len(ps), int(took/interval)+3, "writes are spaced by the interval, plus the final one")
		require.Equal(t, float64(2000), ps[len(ps)-1]["done"])
		for i := 1; i < len(ps); i++ {
			require.Less(t, ps[i-1]["done"], ps[i]["done"], "reports are recorded in order, each once")
		}
	})

	t.Run("CancelledWhileReporting", func(t *testing.T) {
		t.Parallel()
		// A call that reports until it is stopped: its last report is
		// recorded before response.cancelled, and nothing after it.
		started := make(chan struct{})
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			close(started)
			for i := int64(1); ctx.Err() == nil; i++ {
				call.Progress(i, 0, "")
			}
			return nil, fault.Errorf(fault.Cancelled, "stopped")
		}, func(c *Config) { c.ProgressInterval = time.Millisecond })
		task := mustCreate(t, e, TaskCreateParams{ClientID: "cli_a", Function: "echo"})
		<-started
		mustStatus(t, e, task.ID, store.StatusRunning)
		_, err := e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelled, mustFinish(t, e, task.ID).Status)
		evs := allEvents(t, e, task.ID)
		requireGapless(t, evs, 0)
		require.Equal(t, store.EventResponseCancelled, evs[len(evs)-1].Type)
		ps := progressEvents(t, evs)
		require.NotEmpty(t, ps)
		got, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, ps[len(ps)-1]["done"], float64(got.Progress.Done), "the field is the last event's report")
	})

	t.Run("NegativeIntervalRefused", func(t *testing.T) {
		t.Parallel()
		b := mustStore(t)
		cfg := b.engineConfig(t)
		cfg.ProgressInterval = -time.Second
		_, err := New(cfg)
		require.Error(t, err)
	})
}
