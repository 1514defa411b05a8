package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

func TestEvents(t *testing.T) {
	t.Parallel()

	// flowSetup runs the workflow function "flow", which waits until the
	// test releases it, so the test can grow its log with signals.
	flowSetup := func(t *testing.T) (*Engine, *testBundle, chan struct{}, chan struct{}) {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return echo(ctx, call)
		}, nil)
		return e, b, entered, release
	}

	t.Run("LiveExactlyOnceInOrder", func(t *testing.T) {
		t.Parallel()
		e, b, entered, release := flowSetup(t)
		task := mustCreate(t, e, TaskCreateParams{Function: "flow"})

		const subscribers = 4
		results := make([][]*store.Event, subscribers)
		var wg sync.WaitGroup
		start := func(i int, after int64) {
			ch, err := e.EventSubscribe(t.Context(), b.admin, task.ID, after)
			require.NoError(t, err)
			wg.Go(func() {
				for ev := range ch {
					results[i] = append(results[i], ev)
				}
			})
		}
		start(0, -1)
		<-entered
		start(1, -1)
		const signals = 30
		for i := range signals {
			require.NoError(t, e.TaskSignal(t.Context(), b.admin, task.ID, fmt.Sprintf("sig-%d", i), mustEnvelope(t, codec.Long(int64(i)))))
			if i == 10 {
				start(2, 5)
			}
			if i == 20 {
				start(3, 12)
			}
		}
		close(release)
		wg.Wait()

		for i, evs := range results {
			require.NotEmpty(t, evs, "subscriber %d", i)
			from := int64(0)
			switch i {
			case 2:
				from = 6
			case 3:
				from = 13
			}
			requireGapless(t, evs, from)
			require.Equal(t, store.EventResponseCompleted, evs[len(evs)-1].Type, "subscriber %d", i)
		}
		all := results[0]
		// created, loading, in progress, 30 signals, completed.
		require.Len(t, all, 4+signals)
		var names []string
		for _, ev := range all {
			if ev.Type != journal.EventSignalReceived {
				continue
			}
			var sp struct {
				Name    string        `json:"name"`
				Payload store.Payload `json:"payload_envelope"`
			}
			require.NoError(t, json.Unmarshal(ev.Payload, &sp))
			v, err := codec.DecodeFrame(sp.Payload.Data)
			require.NoError(t, err)
			n, _ := v.AsLong()
			require.Equal(t, fmt.Sprintf("sig-%d", n), sp.Name)
			names = append(names, sp.Name)
		}
		require.Len(t, names, signals)
		for i, n := range names {
			require.Equal(t, fmt.Sprintf("sig-%d", i), n, "signals in order")
		}
		for i := 1; i < subscribers; i++ {
			require.Equal(t, all[len(all)-len(results[i]):], results[i], "subscriber %d sees the same log", i)
		}
	})

	t.Run("ResumeAfterN", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		all := mustEvents(t, e, b.admin, task.ID, -1)
		require.Len(t, all, 4)
		for after := int64(-1); after < 3; after++ {
			got := mustEvents(t, e, b.admin, task.ID, after)
			require.Equal(t, all[after+1:], got, "after %d", after)
		}
		// After the terminal event there is nothing more: the stream ends.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		ch, err := e.EventSubscribe(ctx, b.admin, task.ID, 3)
		require.NoError(t, err)
		for ev := range ch {
			t.Fatalf("unexpected event %d %s", ev.Seq, ev.Type)
		}
		require.NoError(t, ctx.Err())
	})

	t.Run("ContextEndsTheStreamNotTheTask", func(t *testing.T) {
		t.Parallel()
		e, b, entered, release := flowSetup(t)
		task := mustCreate(t, e, TaskCreateParams{Function: "flow"})
		<-entered
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := e.EventSubscribe(ctx, b.admin, task.ID, -1)
		require.NoError(t, err)
		for range 3 {
			<-ch
		}
		cancel()
		for range ch {
		}
		close(release)
		require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
	})

	t.Run("ListPages", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "echo"})
		mustFinish(t, e, task.ID)
		page, err := e.EventList(t.Context(), b.admin, task.ID, -1, 2)
		require.NoError(t, err)
		requireGapless(t, page, 0)
		require.Len(t, page, 2)
		page, err = e.EventList(t.Context(), b.admin, task.ID, 1, 0)
		require.NoError(t, err)
		requireGapless(t, page, 2)
		require.Len(t, page, 2)
	})

	t.Run("SignalRules", func(t *testing.T) {
		t.Parallel()
		e, b, entered, release := flowSetup(t)
		activity := mustCreate(t, e, TaskCreateParams{Function: "work"})
		<-entered
		err := e.TaskSignal(t.Context(), b.admin, activity.ID, "go", codec.Envelope{})
		require.Equal(t, fault.Invalid, fault.CodeOf(err), "activities receive no signals")
		close(release)
		mustFinish(t, e, activity.ID)

		flow := mustCreate(t, e, TaskCreateParams{Function: "flow"})
		mustFinish(t, e, flow.ID)
		err = e.TaskSignal(t.Context(), b.admin, flow.ID, "go", codec.Envelope{})
		require.Equal(t, fault.SignalTargetFinished, fault.CodeOf(err))
		err = e.TaskSignal(t.Context(), b.admin, flow.ID, "", codec.Envelope{})
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
	})
}
