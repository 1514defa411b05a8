package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// openFrozen opens an engine over cfg whose heartbeat runs only while
// frozen is false.
func openFrozen(tb testing.TB, cfg Config, frozen *atomic.Bool) *Engine {
	tb.Helper()
	e, err := New(cfg)
	require.NoError(tb, err)
	e.hookHeartbeat = func() bool { return !frozen.Load() }
	require.NoError(tb, e.Open(tb.Context()))
	tb.Cleanup(func() { require.NoError(tb, e.Close(context.Background())) })
	return e
}

// waitCause waits for a cause on ch.
func waitCause(tb testing.TB, ch <-chan error, within time.Duration) error {
	tb.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(within):
		tb.Fatalf("the call was not stopped within %s", within)
		return nil
	}
}

func TestConfigHost(t *testing.T) {
	t.Parallel()
	b := mustStore(t)
	cfg := b.engineConfig(t)
	c, err := cfg.withDefaults()
	require.NoError(t, err)
	require.True(t, store.ValidHost(c.Host), "generated host id %q", c.Host)
	require.NotEqual(t, c.Host, DefaultHost(), "two engines get distinct ids")
	require.Equal(t, store.DefaultLeaseTTL, c.LeaseTTL)
	cfg.Host = "bad host"
	_, err = cfg.withDefaults()
	require.ErrorContains(t, err, "Config.Host")
	cfg.Host, cfg.LeaseTTL = "h", -time.Second
	_, err = cfg.withDefaults()
	require.Error(t, err)
}

// TestLeaseLost: once another host took a running task over, the call's
// next write is refused, the call is stopped with errLeaseLost, and the
// engine writes nothing more for the task; a heartbeat that finds the
// lease lost stops the call the same way.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	for _, how := range []string{"write", "heartbeat"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			b := mustStore(t)
			started, proceed := make(chan struct{}), make(chan struct{})
			causes := make(chan error, 1)
			checkpointErr := make(chan error, 1)
			b.exec.CallFunc = func(ctx context.Context, call *Call) (*CallResult, error) {
				close(started)
				<-proceed
				if how == "write" {
					checkpointErr <- call.SaveCheckpoint(ctx, mustFrame(t, codec.Long(1)))
				}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return &CallResult{Output: mustFrame(t, codec.String("late"))}, nil
			}
			cfg := b.engineConfig(t)
			cfg.Host, cfg.LeaseTTL = "host-a", ttl
			var frozen atomic.Bool
			frozen.Store(true)
			e := openFrozen(t, cfg, &frozen)
			_, err := e.ModuleDeploy(t.Context(), "test", testWasm)
			require.NoError(t, err)

			task := mustCreate(t, e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartResume})
			<-started
			cur := mustStatus(t, e, task.ID, store.StatusRunning)
			require.Equal(t, "host-a", cur.Lease.Host)
			time.Sleep(ttl + 50*time.Millisecond)
			res, err := b.db.TaskReclaim(t.Context(), &store.TaskReclaimParams{Host: "host-b", LeaseTTL: time.Hour})
			require.NoError(t, err)
			require.Len(t, res.Resumed, 1, "the frozen host's lease expired")
			taken := res.Resumed[0]
			require.Equal(t, "host-b", taken.Lease.Host)

			if how == "heartbeat" {
				frozen.Store(false)
			}
			close(proceed)
			if how == "write" {
				require.Error(t, <-checkpointErr, "the checkpoint is refused")
			}
			require.ErrorIs(t, waitCause(t, causes, 5*time.Second), errLeaseLost)
			time.Sleep(100 * time.Millisecond) // what the worker would write, it writes now
			got, err := b.db.TaskGet(t.Context(), task.ID)
			require.NoError(t, err)
			require.Equal(t, store.StatusRunning, got.Status)
			require.Equal(t, taken.Lease, got.Lease, "the new host keeps the task")
			require.Equal(t, taken.LastSeq, got.LastSeq, "nothing was written after the takeover")
			require.Empty(t, got.Checkpoint.Data)
			require.NoError(t, e.StoreError(), "nothing waits in the retry queue")
		})
	}
}

// TestHeartbeatKeepsLease: a call that runs for several leases keeps its
// task, since the heartbeat renews the lease; a reclaim meanwhile takes
// nothing.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
		select {
		case <-time.After(5 * ttl):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return &CallResult{Output: append([]byte(nil), call.Input...)}, nil
	}, func(c *Config) { c.Host, c.LeaseTTL = "host-a", ttl })
	task := mustCreate(t, e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartResume})
	first := mustStatus(t, e, task.ID, store.StatusRunning)
	renewed := false
	for {
		cur, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		if cur.Status != store.StatusRunning {
			break
		}
		require.Equal(t, "host-a", cur.Lease.Host)
		require.Equal(t, first.Lease.Token, cur.Lease.Token)
		renewed = renewed || cur.Lease.ExpiresAt.After(first.Lease.ExpiresAt)
		res, err := b.db.TaskReclaim(t.Context(), &store.TaskReclaimParams{Host: "host-b"})
		require.NoError(t, err)
		require.Empty(t, res.Resumed, "a renewed lease is not taken over")
		require.Empty(t, res.Requeued)
		time.Sleep(ttl / 3)
	}
	require.True(t, renewed, "the heartbeat moved the lease's expiry on")
	done := mustFinish(t, e, task.ID)
	require.Equal(t, store.StatusCompleted, done.Status)
	require.False(t, done.Lease.Held())
}

// pgHost is one engine of a pair over one PostgreSQL database.
type pgHost struct {
	e      *Engine
	db     *postgres.DB
	frozen atomic.Bool
}

// pgPair opens two engines, host-a and host-b, over one fresh PostgreSQL
// database with shared module files, each with its own executor.
func pgPair(t *testing.T, ttl time.Duration, execA, execB Executor, module string, wasm []byte) (a, b *pgHost) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	files, err := blob.New(blob.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	open := func(host string, x Executor) *pgHost {
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{Logger: testLogger(t)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close(context.Background())) })
		h := &pgHost{db: db}
		h.e = openFrozen(t, Config{
			Store: db, Executor: x, Modules: files, Logger: testLogger(t).Named(host),
			Workers: 4, PollInterval: time.Hour, Host: host, LeaseTTL: ttl,
		}, &h.frozen)
		return h
	}
	a = open("host-a", execA)
	b = open("host-b", execB)
	_, err = a.e.ModuleDeploy(t.Context(), module, wasm)
	require.NoError(t, err)
	return a, b
}

// TestLeasesTwoHosts runs two engines over one PostgreSQL database.
func TestLeasesTwoHosts(t *testing.T) {
	pgtest.Server(t)
	t.Parallel()
	const ttl = time.Second
	admin := Caller{ClientID: "cli_admin", All: true}

	// A host whose heartbeat freezes loses its task to the other, which
	// resumes it per its policy; the frozen host's call is stopped once
	// it learns of it.
	t.Run("Takeover", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		causes := make(chan error, 1)
		call := func(host string) func(ctx context.Context, call *Call) (*CallResult, error) {
			return func(ctx context.Context, call *Call) (*CallResult, error) {
				if calls.Add(1) == 1 {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return nil, context.Cause(ctx)
				}
				return &CallResult{Output: mustFrame(t, codec.String(host))}, nil
			}
		}
		a, b := pgPair(t, ttl, &fakeExecutor{CallFunc: call("host-a")}, &fakeExecutor{CallFunc: call("host-b")}, "test", testWasm)
		hosts := map[string]*pgHost{"host-a": a, "host-b": b}
		task := mustCreate(t, a.e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartResume})
		running := mustStatus(t, a.e, task.ID, store.StatusRunning)
		first := running.Lease.Host
		second := map[string]string{"host-a": "host-b", "host-b": "host-a"}[first]
		require.Contains(t, hosts, first)
		hosts[first].frozen.Store(true)
		frozenAt := time.Now()

		done := mustFinish(t, hosts[second].e, task.ID)
		took := time.Since(frozenAt)
		require.Less(t, took, ttl+ttl/4+2*time.Second, "taken over within the lease and a reclaim period")
		requireValue(t, codec.String(second), output(t, done))
		var recovered []store.StatusEvent
		for _, ev := range allEvents(t, hosts[second].e, task.ID) {
			if ev.Type == store.EventRecovered {
				var p store.StatusEvent
				require.NoError(t, json.Unmarshal(ev.Payload, &p))
				recovered = append(recovered, p)
			}
		}
		require.Len(t, recovered, 1)
		require.Equal(t, store.ReasonLeaseExpired, recovered[0].Reason)
		require.Equal(t, first, recovered[0].PreviousHost)
		require.Equal(t, second, recovered[0].Host)

		hosts[first].frozen.Store(false)
		require.ErrorIs(t, waitCause(t, causes, 5*time.Second), errLeaseLost)
		time.Sleep(100 * time.Millisecond)
		again, err := a.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, done.LastSeq, again.LastSeq, "the old host wrote nothing")
	})

	// A cancel accepted by one host stops the call running on the other
	// within a heartbeat.
	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		causes := make(chan error, 1)
		x := &fakeExecutor{CallFunc: func(ctx context.Context, call *Call) (*CallResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}}
		a, b := pgPair(t, ttl, x, x, "test", testWasm)
		task := mustCreate(t, a.e, TaskCreateParams{Function: "work"})
		running := mustStatus(t, a.e, task.ID, store.StatusRunning)
		runner, other := a, b
		if running.Lease.Host == "host-b" {
			runner, other = b, a
		}
		start := time.Now()
		got, err := other.e.TaskCancel(t.Context(), admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCancelling, got.Status)
		require.ErrorIs(t, waitCause(t, causes, 5*time.Second), errCancelRequested)
		require.Less(t, time.Since(start), ttl, "stopped within a heartbeat")
		done := mustFinish(t, runner.e, task.ID)
		require.Equal(t, store.StatusCancelled, done.Status)
	})

	// A signal accepted by one host wakes a workflow that waits on the
	// other at once, though that host polls once an hour.
	t.Run("Signal", func(t *testing.T) {
		t.Parallel()
		newX := func() *guestExecutor {
			x := newGuestExecutor()
			x.add(wfWasm, testGuest())
			return x
		}
		a, b := pgPair(t, ttl, newX(), newX(), "wf", wfWasm)
		b.e.Drain(t.Context(), 0) // host-b runs nothing: the workflow runs on host-a
		task := start(t, a.e, "approve", codec.Long(int64(time.Hour/time.Millisecond)), "")
		waitJournal(t, a.e, task.ID, journal.EventSignalWaiting, 1)
		time.Sleep(100 * time.Millisecond) // the run's commit is in
		begin := time.Now()
		signal(t, b.e, task.ID, "approve", codec.String("bob"))
		done := mustFinish(t, a.e, task.ID)
		require.Less(t, time.Since(begin), 2*time.Second, "woken through the store's notification")
		requireValue(t, codec.String("bob"), output(t, done))
	})
}

// refusingStore is a SQLite store that says it is shared and refuses
// lease renewals while refuse is set: a database out of reach.
type refusingStore struct {
	store.Store
	refuse atomic.Bool
}

func (s *refusingStore) Shared() bool { return true }

func (s *refusingStore) LeaseExtend(ctx context.Context, p *store.LeaseExtendParams) (*store.LeaseExtendResult, error) {
	if s.refuse.Load() {
		return nil, errors.New("database unreachable")
	}
	return s.Store.LeaseExtend(ctx, p)
}

// TestLeaseExpiryStopsCall: on a shared store, a call whose lease runs out
// while the renewals fail is stopped, since another host may take the
// task over; the takeover then applies the task's policy.
func TestLeaseExpiryStopsCall(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	b := mustStore(t)
	causes := make(chan error, 1)
	b.exec.CallFunc = func(ctx context.Context, call *Call) (*CallResult, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}
	s := &refusingStore{Store: b.db}
	cfg := b.engineConfig(t)
	cfg.Store, cfg.Host, cfg.LeaseTTL = s, "host-a", ttl
	e := mustOpen(t, cfg)
	_, err := e.ModuleDeploy(t.Context(), "test", testWasm)
	require.NoError(t, err)
	task := mustCreate(t, e, TaskCreateParams{Function: "work", OnRestart: store.OnRestartFail})
	mustStatus(t, e, task.ID, store.StatusRunning)
	time.Sleep(ttl) // renewed a few times
	select {
	case c := <-causes:
		t.Fatalf("the call stopped while its lease was renewed: %v", c)
	default:
	}
	s.refuse.Store(true)
	refusedAt := time.Now()
	require.ErrorIs(t, waitCause(t, causes, 5*time.Second), errLeaseLost)
	require.Less(t, time.Since(refusedAt), 2*ttl, "stopped once the lease ran out")
	done := mustFinish(t, e, task.ID)
	require.Equal(t, store.StatusFailed, done.Status)
	require.Equal(t, store.CodeServerRestarted, done.Error.Code, "the takeover applies on_restart fail")
}
