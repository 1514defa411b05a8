package postgres_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/storetest"
)

// The benchmarks mirror store/sqlite's, so that their figures compare side
// by side: throughput as ops/s and as a ratio to the machine's raw limit
// measured in the same run, here single-row durable commits per second on a
// bare table of the same server (fsync and synchronous_commit on). Run them
// against a local server with:
//
//	WEFT_TEST_POSTGRES=$(scripts/pg-test.sh start /tmp/pg) \
//		go test -run='^$' -bench=. -benchtime=1x ./store/postgres/
//
// (-benchtime=1x for Lifecycle10k; the others take the default.)

// benchConns is the pool size of the benchmarks' stores: the concurrent
// ones run 64 and 256 callers.
const benchConns = 32

var (
	baselineOnce sync.Once
	baselineOps  float64
)

// openBare opens a pool on a fresh schema holding one bare table.
func openBare(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	dsn := NewSchema(tb, NewDatabase(tb))
	pool, err := pgxpool.New(tb.Context(), dsn)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	_, err = pool.Exec(tb.Context(), "CREATE TABLE t (id bigserial PRIMARY KEY, v bytea NOT NULL)")
	require.NoError(tb, err)
	return pool
}

// baseline returns the single-row durable commits per second of this
// machine's server, measured once per run.
func baseline(b *testing.B) float64 {
	b.Helper()
	baselineOnce.Do(func() {
		pool := openBare(b)
		v := make([]byte, 64)
		const n = 500
		start := time.Now()
		for range n {
			_, err := pool.Exec(b.Context(), "INSERT INTO t (v) VALUES ($1)", v)
			require.NoError(b, err)
		}
		baselineOps = n / time.Since(start).Seconds()
		b.Logf("baseline: %.0f single-row durable commits/s", baselineOps)
	})
	return baselineOps
}

// report sets ops/s and the ratio to the baseline for ops operations done
// in elapsed.
func report(b *testing.B, ops int, elapsed time.Duration, unit string) {
	b.Helper()
	rate := float64(ops) / elapsed.Seconds()
	b.ReportMetric(rate, unit+"/s")
	b.ReportMetric(rate/baseline(b), "x_baseline")
}

// openBench opens a store on a fresh schema, its pool's connections
// already open.
func openBench(b *testing.B) *postgres.DB {
	b.Helper()
	db, err := postgres.Open(b.Context(), NewSchema(b, NewDatabase(b)), postgres.Options{MaxConns: benchConns, MinConns: benchConns})
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close(context.Background()) })
	require.Eventually(b, func() bool { return db.Stat().IdleConns() >= benchConns }, 10*time.Second, 5*time.Millisecond)
	return db
}

func insertParams() *store.TaskInsertParams {
	return &store.TaskInsertParams{
		Module: "echo", ModuleDigest: storetest.Digest, Function: "echo",
		Input: storetest.Frame("input"), OwnerClientID: "cli_bench",
	}
}

// BenchmarkBaselineCommit is the raw limit: one durable commit per row.
func BenchmarkBaselineCommit(b *testing.B) {
	baseline(b)
	pool := openBare(b)
	v := make([]byte, 64)
	start := time.Now()
	for b.Loop() {
		if _, err := pool.Exec(b.Context(), "INSERT INTO t (v) VALUES ($1)", v); err != nil {
			b.Fatal(err)
		}
	}
	report(b, b.N, time.Since(start), "commits")
}

// BenchmarkTaskInsert measures durable task creations (task row and
// response.created event in one transaction): one caller, then many
// concurrent callers.
func BenchmarkTaskInsert(b *testing.B) {
	b.Run("Serial", func(b *testing.B) {
		baseline(b)
		db := openBench(b)
		ctx := b.Context()
		start := time.Now()
		for b.Loop() {
			if _, err := db.TaskInsert(ctx, insertParams()); err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N, time.Since(start), "tasks")
	})
	concurrent := func(b *testing.B, parallelism int) {
		baseline(b)
		db := openBench(b)
		ctx := b.Context()
		b.SetParallelism(parallelism) // callers per CPU
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := db.TaskInsert(ctx, insertParams()); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, b.N, time.Since(start), "tasks")
	}
	b.Run("Concurrent64", func(b *testing.B) { concurrent(b, 32) })
	b.Run("Concurrent256", func(b *testing.B) { concurrent(b, 128) })
}

// BenchmarkEventAppend measures durable event appends to running tasks: one
// caller, many callers, and many callers appending 10 events per call.
func BenchmarkEventAppend(b *testing.B) {
	run := func(b *testing.B, parallelism, perCall int) {
		baseline(b)
		db := openBench(b)
		ctx := b.Context()
		tasks := storetest.MustRunningMany(b, db, 64)
		drafts := make([]store.EventDraft, perCall)
		for i := range drafts {
			drafts[i] = store.EventDraft{Type: store.EventLog, Payload: json.RawMessage(`{"level":"info","msg":"step done"}`)}
		}
		var next atomic.Int64
		b.ResetTimer()
		start := time.Now()
		if parallelism == 0 {
			for b.Loop() {
				if _, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: tasks[0].ID, Events: drafts}); err != nil {
					b.Fatal(err)
				}
			}
		} else {
			b.SetParallelism(parallelism)
			b.RunParallel(func(pb *testing.PB) {
				id := tasks[int(next.Add(1))%len(tasks)].ID
				for pb.Next() {
					if _, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: drafts}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		report(b, b.N*perCall, time.Since(start), "events")
	}
	b.Run("Serial", func(b *testing.B) { run(b, 0, 1) })
	b.Run("Concurrent64", func(b *testing.B) { run(b, 32, 1) })
	b.Run("Concurrent256", func(b *testing.B) { run(b, 128, 1) })
	b.Run("Concurrent64x10", func(b *testing.B) { run(b, 32, 10) })
}

// lifecycle creates n tasks from submitters concurrent callers while
// workers claim them in batches of 64 and take each through running to
// completed, like the runtime.
func lifecycle(b *testing.B, db *postgres.DB, n, submitters, workers int) {
	ctx := b.Context()
	var (
		wg        sync.WaitGroup
		submitted atomic.Int64
		completed atomic.Int64
		failed    atomic.Bool
	)
	fail := func(err error) {
		if failed.CompareAndSwap(false, true) {
			b.Error(err)
		}
	}
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for submitted.Add(1) <= int64(n) && !failed.Load() {
				if _, err := db.TaskInsert(ctx, insertParams()); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for completed.Load() < int64(n) && !failed.Load() {
				claimed, err := db.TaskClaim(ctx, &store.TaskClaimParams{Limit: 64})
				if err != nil {
					fail(err)
					return
				}
				if len(claimed) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				var inner sync.WaitGroup
				for _, t := range claimed {
					inner.Add(1)
					go func() {
						defer inner.Done()
						if _, err := db.TaskTransition(ctx, &store.TaskTransitionParams{
							ID:   t.ID,
							From: []store.Status{store.StatusLoading}, To: store.StatusRunning,
						}); err != nil {
							fail(err)
							return
						}
						if _, err := db.TaskTransition(ctx, &store.TaskTransitionParams{
							ID:   t.ID,
							From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Output: storetest.Frame("out"),
						}); err != nil {
							fail(err)
							return
						}
						completed.Add(1)
					}()
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
}

// BenchmarkLifecycle10k creates and completes 10,000 tasks (insert, claim,
// running, completed: four durable writes each) submitted by 128 callers
// and worked by 16 workers, as store/sqlite's benchmark of the same name.
func BenchmarkLifecycle10k(b *testing.B) {
	const n = 10_000
	baseline(b)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		db := openBench(b)
		b.StartTimer()
		start := time.Now()
		lifecycle(b, db, n, 128, 16)
		elapsed += time.Since(start)
		b.StopTimer()
		counts, err := db.TaskCount(b.Context())
		require.NoError(b, err)
		require.Equal(b, n, counts[store.StatusCompleted])
		b.StartTimer()
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/10k")
	report(b, n*b.N, elapsed, "tasks")
}
