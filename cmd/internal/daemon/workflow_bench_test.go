package daemon

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// The workflow guests of the benchmarks, in Go (cmd/weft/testdata/wfbench)
// and in C (cmd/weft/testdata/wfbench-c).
var (
	wfbenchWasm  = filepath.Join("..", "..", "weft", "testdata", "wfbench.wasm")
	wfbenchCWasm = filepath.Join("..", "..", "weft", "testdata", "wfbench-c.wasm")
)

// benchEngine is the daemon's engine in this process: real SQLite (WAL,
// synchronous=FULL), real module files, the real wazero host.
type benchEngine struct {
	e     *runtime.Engine
	db    *sqlite.DB
	h     *host.Host
	x     executor
	admin runtime.Caller // sees every task
	// commits counts the store's commits (each one fsync), commitTime
	// sums their durations in nanoseconds.
	commits, commitTime atomic.Int64
}

// MustBenchEngine opens an engine over a fresh data directory with module
// "wfbench" deployed.
func MustBenchEngine(tb testing.TB) *benchEngine {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	log := hclog.NewNullLogger()
	be := &benchEngine{}
	db, err := sqlite.Open(ctx, sqlite.Config{
		Path: filepath.Join(dir, "weft.db"), Logger: log,
		ObserveCommit: func(_ int, d time.Duration) {
			be.commits.Add(1)
			be.commitTime.Add(int64(d))
		},
	})
	require.NoError(tb, err)
	files, err := blob.New(blob.Config{Dir: dir})
	require.NoError(tb, err)
	h, err := host.New(host.Config{CacheDir: filepath.Join(dir, "cache"), Logger: log})
	require.NoError(tb, err)
	x := executor{host: h}
	e, err := runtime.New(runtime.Config{Store: db, Executor: x, Modules: files, Logger: log})
	require.NoError(tb, err)
	require.NoError(tb, e.Open(ctx))
	tb.Cleanup(func() {
		_ = e.Close(ctx)
		_ = h.Close(ctx)
		_ = db.Close(ctx)
	})
	wasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(tb, err)
	_, err = e.Modules().Deploy(ctx, "wfbench", wasm)
	require.NoError(tb, err)
	be.e, be.db, be.h, be.x, be.admin = e, db, h, x, runtime.Caller{All: true}
	return be
}

// run runs fn of wfbench with input n and waits for its response.
func (b *benchEngine) run(tb testing.TB, fn string, n int64) *store.Response {
	tb.Helper()
	env, err := codec.EncodeEnvelope(codec.Long(n))
	require.NoError(tb, err)
	r, err := b.e.TaskRun(context.Background(), &runtime.TaskCreateParams{Module: "wfbench", Function: fn, Input: env})
	require.NoError(tb, err)
	require.Equal(tb, store.StatusCompleted, r.Status, "%s(%d): %+v", fn, n, r.Error)
	return r
}

// startIn creates a task of fn of module with input n and returns its id.
func (b *benchEngine) startIn(tb testing.TB, module, fn string, n int64) string {
	tb.Helper()
	env, err := codec.EncodeEnvelope(codec.Long(n))
	require.NoError(tb, err)
	t, err := b.e.TaskCreate(context.Background(), &runtime.TaskCreateParams{Module: module, Function: fn, Input: env})
	require.NoError(tb, err)
	return t.ID
}

// waitFor polls the log of task id until it holds an event of type typ.
func (b *benchEngine) waitFor(tb testing.TB, id, typ string) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		for from := int64(0); ; {
			evs, err := b.db.EventList(context.Background(), &store.EventListParams{TaskID: id, From: from, Limit: 10000})
			require.NoError(tb, err)
			for _, ev := range evs {
				if ev.Type == typ {
					return true
				}
			}
			if len(evs) < 10000 {
				return false
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}, 5*time.Minute, 10*time.Millisecond)
}

// withCustomSection returns wasm with an extra custom section: the same
// code under another digest, which the replay check accepts as a "new
// version" of the module.
func withCustomSection(wasm []byte, name string) []byte {
	payload := append(append([]byte{byte(len(name))}, name...), 1)
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(len(payload)))
	return append(out, payload...)
}

// cost is the wall-clock and CPU time of a piece of work. The CPU time is
// the process's (user and system, every thread), read with getrusage: on a
// machine shared with other work, wall-clock ratios swing with the other
// processes' load, while the CPU a step costs does not.
type cost struct{ wall, cpu time.Duration }

// measure returns the cost of fn.
func measure(fn func()) cost {
	cpu0, start := processCPU(), time.Now()
	fn()
	return cost{wall: time.Since(start), cpu: processCPU() - cpu0}
}

func (c cost) add(d cost) cost          { return cost{wall: c.wall + d.wall, cpu: c.cpu + d.cpu} }
func (c cost) sub(d cost) cost          { return cost{wall: c.wall - d.wall, cpu: c.cpu - d.cpu} }
func (c cost) div(n time.Duration) cost { return cost{wall: c.wall / n, cpu: c.cpu / n} }

// reportRatio reports the cost of a unit of work against a reference.
func reportRatio(b *testing.B, unit string, per, ref cost, refUnit string) {
	b.ReportMetric(float64(per.wall.Nanoseconds()), "ns/"+unit)
	b.ReportMetric(float64(per.cpu.Nanoseconds()), "cpu-ns/"+unit)
	b.ReportMetric(float64(ref.wall.Nanoseconds()), "ns/"+refUnit)
	b.ReportMetric(float64(ref.cpu.Nanoseconds()), "cpu-ns/"+refUnit)
	b.ReportMetric(float64(per.wall)/float64(ref.wall), unit+"/"+refUnit)
	b.ReportMetric(float64(per.cpu)/float64(ref.cpu), "cpu-"+unit+"/"+refUnit)
	b.ReportMetric(0, "ns/op")
}

// BenchmarkWorkflowReplay measures the replay of a workflow's journal of
// 1,000 activity steps, per step beyond the fixed cost of one call of the
// module, against one warm echo call of the stock Go echo activity in the
// same run (target: at most 3×). For each guest language two workflows
// wait, one with a journal of 1,000 activities, one with none; the
// difference of their replays, divided by 1,000, is the cost of a step.
//
//   - Woken: a signal wakes each workflow, which replays its journal from
//     the journal cache (the events since its last run are read from the
//     store) and waits again, committed: the path of every real wake.
//   - FromStore: the deploy replay check reads each journal from the store
//     and replays it, as after a restart.
//
// The Go guest (testdata/wfbench, sdk-wasm/workflow) and the C guest
// (testdata/wfbench-c, sdk-wasm/c) run the same workflow; their difference
// is the cost of each SDK's own code in the guest.
//
//	go test ./cmd/internal/daemon -run '^$' -bench BenchmarkWorkflowReplay -benchtime 20x
func BenchmarkWorkflowReplay(b *testing.B) {
	be := MustBenchEngine(b)
	ctx := context.Background()
	goWasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(b, err)
	cWasm, err := os.ReadFile(wfbenchCWasm)
	require.NoError(b, err)

	in, err := codec.EncodeFrame(codec.Long(7))
	require.NoError(b, err)
	echo := &runtime.Call{
		TaskID: "bench", Module: "wfbench", Digest: modules.Digest(goWasm), Function: "echo", Input: in,
		Wasm: func(context.Context) ([]byte, error) { return goWasm, nil },
	}
	// echoCall is the cost of a warm call of the Go echo activity.
	echoCall := func(b *testing.B) cost {
		return measure(func() {
			for range 200 {
				if _, err := be.x.Call(ctx, echo); err != nil {
					b.Fatal(err)
				}
			}
		}).div(200)
	}
	const steps = 1000

	for _, guest := range []struct {
		lang, module string
		wasm         []byte
	}{{"Go", "wfbench", goWasm}, {"C", "wfbench-c", cWasm}} {
		// The short workflow runs under a second name, so that the replay
		// check can replay each alone.
		twin := withCustomSection(guest.wasm, "twin")
		if guest.module != "wfbench" {
			_, err := be.e.Modules().Deploy(ctx, guest.module, guest.wasm)
			require.NoError(b, err)
		}
		_, err := be.e.Modules().Deploy(ctx, guest.module+"-twin", twin)
		require.NoError(b, err)
		long := be.startIn(b, guest.module, "fanout_wait", steps)
		short := be.startIn(b, guest.module+"-twin", "fanout_wait", 0)
		be.waitFor(b, long, "signal.waiting")
		be.waitFor(b, short, "signal.waiting")

		b.Run(guest.lang+"/Woken", func(b *testing.B) {
			// tick wakes workflow id and waits until it waits again.
			tick := func(id string) cost {
				t, err := be.e.TaskGet(ctx, be.admin, id)
				require.NoError(b, err)
				sub, err := be.e.EventSubscribe(ctx, be.admin, id, t.LastSeq)
				require.NoError(b, err)
				env, err := codec.EncodeEnvelope(codec.String("tick"))
				require.NoError(b, err)
				return measure(func() {
					require.NoError(b, be.e.TaskSignal(ctx, be.admin, id, "tick", env))
					for ev := range sub {
						if ev.Type == "signal.waiting" {
							break
						}
					}
				})
			}
			tick(long) // the first wake reads the journal into the cache
			tick(short)
			var longTotal, shortTotal, echoTotal cost
			b.ResetTimer()
			for range b.N {
				longTotal = longTotal.add(tick(long))
				shortTotal = shortTotal.add(tick(short))
				echoTotal = echoTotal.add(echoCall(b))
			}
			n := time.Duration(b.N)
			reportRatio(b, "step", longTotal.sub(shortTotal).div(n*steps), echoTotal.div(n), "echo-call")
		})

		b.Run(guest.lang+"/FromStore", func(b *testing.B) {
			// The same code under other digests is a "new version" that
			// the replay check replays.
			check := func(module string, wasm []byte) cost {
				return measure(func() {
					div, err := be.e.Modules().ReplayCheck(ctx, module, wasm)
					require.NoError(b, err)
					require.Empty(b, div)
				})
			}
			newLong, newShort := withCustomSection(guest.wasm, "new"), withCustomSection(twin, "new")
			check(guest.module, newLong)
			check(guest.module+"-twin", newShort)
			var longTotal, shortTotal, echoTotal cost
			b.ResetTimer()
			for range b.N {
				longTotal = longTotal.add(check(guest.module, newLong))
				shortTotal = shortTotal.add(check(guest.module+"-twin", newShort))
				echoTotal = echoTotal.add(echoCall(b))
			}
			n := time.Duration(b.N)
			reportRatio(b, "step", longTotal.sub(shortTotal).div(n*steps), echoTotal.div(n), "echo-call")
		})
		for _, id := range []string{long, short} {
			_, _ = be.e.TaskCancel(ctx, be.admin, id)
		}
	}
}

// BenchmarkWorkflowQuery measures a query of a waiting workflow whose
// journal holds 1,000 activity steps, through Engine.TaskQuery (read the
// journal from the store, replay it in a call of its own, run the
// handler), against one warm echo call of the stock Go echo activity in
// the same run. There is no target: a query costs about one replay from
// the store, and this reports how much.
//
//	go test ./cmd/internal/daemon -run '^$' -bench 'BenchmarkWorkflowQuery$' -benchtime 20x -count 3
func BenchmarkWorkflowQuery(b *testing.B) {
	be := MustBenchEngine(b)
	ctx := context.Background()
	goWasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(b, err)
	in, err := codec.EncodeFrame(codec.Long(7))
	require.NoError(b, err)
	echo := &runtime.Call{
		TaskID: "bench", Module: "wfbench", Digest: modules.Digest(goWasm), Function: "echo", Input: in,
		Wasm: func(context.Context) ([]byte, error) { return goWasm, nil },
	}
	const steps = 1000
	id := be.startIn(b, "wfbench", "fanout_wait", steps)
	be.waitFor(b, id, "signal.waiting")
	query := func() {
		a, err := be.e.TaskQuery(ctx, be.admin, id, "sum", codec.Envelope{})
		require.NoError(b, err)
		v, err := codec.DecodeFrame(a.Output.Data)
		require.NoError(b, err)
		sum, _ := v.AsLong()
		require.Equal(b, int64(steps*(steps-1)/2), sum)
	}
	query() // warm the pool and the compiled module
	var queries, calls cost
	b.ResetTimer()
	for range b.N {
		queries = queries.add(measure(query))
		calls = calls.add(measure(func() {
			for range 200 {
				if _, err := be.x.Call(ctx, echo); err != nil {
					b.Fatal(err)
				}
			}
		}).div(200))
	}
	n := time.Duration(b.N)
	reportRatio(b, "query", queries.div(n), calls.div(n), "echo-call")
	_, _ = be.e.TaskCancel(ctx, be.admin, id)
}

// BenchmarkWorkflowActivities compares a workflow of 100 sequential echo
// activities, per activity, with a standalone echo task, each from submit
// to completion through the engine with durable commits (target: at most
// 2×).
//
//	go test ./cmd/internal/daemon -run '^$' -bench BenchmarkWorkflowActivities -benchtime 5x
func BenchmarkWorkflowActivities(b *testing.B) {
	be := MustBenchEngine(b)
	const activities = 100
	be.run(b, "sequential", 1) // warm the pool
	be.run(b, "echo", 1)
	var flow, task cost
	var commits int64
	b.ResetTimer()
	for range b.N {
		before := be.commits.Load()
		flow = flow.add(measure(func() { be.run(b, "sequential", activities) }))
		commits += be.commits.Load() - before
		task = task.add(measure(func() {
			for range 20 {
				be.run(b, "echo", 1)
			}
		}).div(20))
	}
	n := time.Duration(b.N)
	reportRatio(b, "activity", flow.div(n*activities), task.div(n), "echo-task")
	b.ReportMetric(float64(commits)/float64(b.N*activities), "commits/activity")
}

// BenchmarkWorkflowChildren measures a workflow of 100 sequential child
// workflows (each returns its input, as the echo activity does), per
// child, against a workflow of 100 sequential echo activities, per
// activity, in the same run, each through the engine with durable commits
// (target: a child at most 2× an activity).
//
//	go test ./cmd/internal/daemon -run '^$' -bench BenchmarkWorkflowChildren -benchtime 5x
func BenchmarkWorkflowChildren(b *testing.B) {
	be := MustBenchEngine(b)
	const steps = 100
	be.run(b, "sequential", 1) // warm the pool
	be.run(b, "children", 1)
	var kids, acts cost
	var kidCommits, actCommits int64
	b.ResetTimer()
	for range b.N {
		before := be.commits.Load()
		kids = kids.add(measure(func() { be.run(b, "children", steps) }))
		kidCommits += be.commits.Load() - before
		before = be.commits.Load()
		acts = acts.add(measure(func() { be.run(b, "sequential", steps) }))
		actCommits += be.commits.Load() - before
	}
	per := time.Duration(b.N * steps)
	reportRatio(b, "child", kids.div(per), acts.div(per), "activity")
	b.ReportMetric(float64(kidCommits)/float64(b.N*steps), "commits/child")
	b.ReportMetric(float64(actCommits)/float64(b.N*steps), "commits/activity")
}

// TestBenchEngineSmoke keeps the benchmark harness honest in the normal
// test run: a workflow of three activities completes with its result.
func TestBenchEngineSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs wasm")
	}
	be := MustBenchEngine(t)
	r := be.run(t, "sequential", 3)
	v, err := codec.DecodeFrame(r.Output.Data)
	require.NoError(t, err)
	n, ok := v.AsLong()
	require.True(t, ok)
	require.Equal(t, int64(3), n)

	// Child workflows that end in their first run fold their end into
	// the parent's next run: each still ends completed with its output and
	// its own log, once, and the parent reads each result.
	before := be.commits.Load()
	r = be.run(t, "children", 3)
	v, err = codec.DecodeFrame(r.Output.Data)
	require.NoError(t, err)
	n, _ = v.AsLong()
	require.Equal(t, int64(3), n)
	require.LessOrEqual(t, be.commits.Load()-before, int64(3+3), "about one commit per child")
	kids, err := be.db.TaskList(t.Context(), &store.TaskListParams{ParentTaskID: r.TaskID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, kids, 3)
	for _, k := range kids {
		require.Equal(t, store.StatusCompleted, k.Status, k.ID)
		require.Equal(t, store.KindWorkflow, k.Kind)
		out, err := codec.DecodeFrame(k.Output.Data)
		require.NoError(t, err)
		_, ok := out.AsLong()
		require.True(t, ok, "the child's output is kept")
		evs, err := be.db.EventList(t.Context(), &store.EventListParams{TaskID: k.ID})
		require.NoError(t, err)
		require.Equal(t, store.EventResponseCompleted, evs[len(evs)-1].Type, "the child's log ends with its end")
	}
	evs, err := be.db.EventList(t.Context(), &store.EventListParams{TaskID: r.TaskID})
	require.NoError(t, err)
	ends := 0
	for _, ev := range evs {
		if ev.Type == "activity.completed" {
			ends++
		}
	}
	require.Equal(t, 3, ends, "the parent's journal holds each child's end once")
}
