package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// The benchmarks report throughput as ops/s and as a ratio to the machine's
// raw limit measured in the same run: single-row durable commits per second
// on a bare SQLite table with the store's pragmas (WAL, synchronous=FULL).
// Run them with: go test -run='^$' -bench=. ./store/sqlite/

var (
	baselineOnce sync.Once
	baselineOps  float64
)

// openBare opens a bare database with the store's pragmas and one table.
func openBare(tb testing.TB) *sql.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bare.db")
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	require.NoError(tb, err)
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(tb.Context(), "CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
	require.NoError(tb, err)
	return db
}

// baseline returns the single-row durable commits per second of this
// machine, measured once per run.
func baseline(b *testing.B) float64 {
	b.Helper()
	baselineOnce.Do(func() {
		db := openBare(b)
		stmt, err := db.PrepareContext(b.Context(), "INSERT INTO t (v) VALUES (?)")
		require.NoError(b, err)
		defer func() { _ = stmt.Close() }()
		v := make([]byte, 64)
		const n = 500
		start := time.Now()
		for range n {
			_, err := stmt.ExecContext(b.Context(), v)
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

// openBench opens a store that counts its group commits; the count is
// reported as jobs per commit when the benchmark ends.
func openBench(b *testing.B) *sqlite.DB {
	b.Helper()
	var commits, jobs atomic.Int64
	db, err := sqlite.Open(b.Context(), sqlite.Config{
		Path: filepath.Join(b.TempDir(), "weft.db"), SkipQuickCheck: true,
		ObserveCommit: func(n int, _ time.Duration) {
			commits.Add(1)
			jobs.Add(int64(n))
		},
	})
	require.NoError(b, err)
	b.Cleanup(func() {
		_ = db.Close(context.Background())
		if c := commits.Load(); c > 0 {
			b.ReportMetric(float64(jobs.Load())/float64(c), "jobs/commit")
		}
	})
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
	db := openBare(b)
	stmt, err := db.PrepareContext(b.Context(), "INSERT INTO t (v) VALUES (?)")
	require.NoError(b, err)
	defer func() { _ = stmt.Close() }()
	v := make([]byte, 64)
	start := time.Now()
	for b.Loop() {
		if _, err := stmt.ExecContext(b.Context(), v); err != nil {
			b.Fatal(err)
		}
	}
	report(b, b.N, time.Since(start), "commits")
}

// BenchmarkTaskInsert measures durable task creations (task row and
// response.created event in one transaction): one caller, then many callers
// sharing group commits.
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
// caller, many callers (group commit), and many callers appending 10
// events per call.
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
func lifecycle(b *testing.B, db *sqlite.DB, n, submitters, workers int) {
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
// and worked by 16 workers; the target is under 3 s. The process CPU time
// is reported beside the wall time, since a busy machine stretches the
// latter.
func BenchmarkLifecycle10k(b *testing.B) {
	const n = 10_000
	baseline(b)
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db := openBench(b)
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime()
		lifecycle(b, db, n, 128, 16)
		elapsed += time.Since(start)
		cpu += cpuTime() - cpu0
		b.StopTimer()
		counts, err := db.TaskCount(b.Context())
		require.NoError(b, err)
		require.Equal(b, n, counts[store.StatusCompleted])
		b.StartTimer()
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/10k")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/10k")
	report(b, n*b.N, elapsed, "tasks")
}

// makeLeftovers writes a closed database at path holding 10,000 unfinished
// tasks spread over the four leftover statuses and the three policies.
func makeLeftovers(b *testing.B, path string) {
	b.Helper()
	ctx := b.Context()
	db, err := sqlite.Open(ctx, sqlite.Config{Path: path, Synchronous: "OFF"})
	require.NoError(b, err)
	statuses := []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling}
	policies := []store.OnRestart{store.OnRestartFail, store.OnRestartRetry, store.OnRestartResume}
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10_000; i += 32 {
				storetest.MustStatus(b, db, statuses[(i/3)%4], policies[i%3])
			}
		}()
	}
	wg.Wait()
	require.NoError(b, db.Close(ctx))
}

// BenchmarkRecover10k runs the start-up recovery over 10,000 leftover tasks;
// the target is under 1 s.
func BenchmarkRecover10k(b *testing.B) {
	baseline(b)
	src := filepath.Join(b.TempDir(), "leftovers.db")
	makeLeftovers(b, src)
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "weft.db")
		copyFile(b, src, path)
		db, err := sqlite.Open(b.Context(), sqlite.Config{Path: path, SkipQuickCheck: true})
		require.NoError(b, err)
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime()
		res, err := db.TaskRecover(b.Context())
		elapsed += time.Since(start)
		cpu += cpuTime() - cpu0
		b.StopTimer()
		require.NoError(b, err)
		require.Equal(b, 10_000, len(res.Failed)+len(res.Requeued)+len(res.Resumed)+len(res.Cancelled)+res.Queued)
		require.NoError(b, db.Close(b.Context()))
		b.StartTimer()
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/10k")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/10k")
	report(b, 10_000*b.N, elapsed, "tasks")
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	require.NoError(tb, err)
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	require.NoError(tb, err)
	_, err = io.Copy(out, in)
	require.NoError(tb, err)
	require.NoError(tb, out.Close())
}
