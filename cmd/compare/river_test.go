package compare

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite" River's SQLite driver runs on

	"github.com/weft-run/weft/cmd/internal/loadbench"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// The River side of the load comparison: River is measured here, by
// BenchmarkLoadVersusRiver, on the same work as `weft bench load`, in the
// same run as weft.

// riverLoadConfig is one River load run: jobs no-op jobs inserted one by
// one (Client.Insert, as weft's clients submit one task per request) from
// clients goroutines, into a SQLite file in WAL mode with
// synchronous=FULL, or into a PostgreSQL database (fsync and
// synchronous_commit on) through River's pgx driver.
type riverLoadConfig struct {
	Jobs    int
	Clients int
	// Workers is the default queue's MaxWorkers.
	Workers int
	// FetchCooldown is River's Config.FetchCooldown (0: River's default,
	// 100 ms).
	FetchCooldown time.Duration
	// Postgres, when set, is the DSN of an empty PostgreSQL database River
	// runs on; otherwise River runs on SQLite in the run's directory.
	Postgres string
}

// riverLoadResult is the outcome of a River load run.
type riverLoadResult struct {
	// Elapsed runs from the first insert to the last completion event
	// (sent once the completion is committed).
	Elapsed       time.Duration
	JobsPerSecond float64
	InsertLatency loadbench.LatencySummary
}

// riverNoopArgs are the arguments of River's no-op job.
type riverNoopArgs struct{}

func (riverNoopArgs) Kind() string { return "noop" }

// riverNoopWorker works riverNoopArgs jobs by doing nothing.
type riverNoopWorker struct {
	river.WorkerDefaults[riverNoopArgs]
}

func (riverNoopWorker) Work(context.Context, *river.Job[riverNoopArgs]) error { return nil }

// runRiverLoad migrates a fresh River database (SQLite in dir, or
// cfg.Postgres), starts a client, inserts cfg.Jobs jobs from cfg.Clients
// goroutines and waits for every completion.
func runRiverLoad(ctx context.Context, dir string, cfg riverLoadConfig) (*riverLoadResult, error) {
	if cfg.Postgres != "" {
		pool, err := pgxpool.New(ctx, cfg.Postgres)
		if err != nil {
			return nil, fmt.Errorf("open river database: %w", err)
		}
		defer pool.Close()
		var fsync, syncCommit string
		if err := pool.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
			return nil, fmt.Errorf("river database: %w", err)
		}
		if fsync != "on" || syncCommit != "on" {
			return nil, fmt.Errorf("river database: fsync %s, synchronous_commit %s, want both on", fsync, syncCommit)
		}
		return runRiverDriver(ctx, riverpgxv5.New(pool), cfg)
	}
	dsn := "file:" + filepath.Join(dir, "river.db") +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open river database: %w", err)
	}
	defer func() { _ = db.Close() }()
	// River's SQLite driver documentation: one connection, or SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	var syncMode string
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil || syncMode != "2" {
		return nil, fmt.Errorf("river database: synchronous is %q, want 2 (FULL): %v", syncMode, err)
	}
	return runRiverDriver(ctx, riversqlite.New(db), cfg)
}

// runRiverDriver is runRiverLoad on an open database.
func runRiverDriver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], cfg riverLoadConfig) (*riverLoadResult, error) {
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, fmt.Errorf("river migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &riverNoopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:       workers,
		FetchCooldown: cfg.FetchCooldown,
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	completed, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: cfg.Jobs + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer unsubscribe()
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("river start: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	lat := make([]time.Duration, cfg.Jobs)
	var next atomic.Int64
	var insertErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Jobs {
					return
				}
				t0 := time.Now()
				if _, err := client.Insert(ctx, riverNoopArgs{}, nil); err != nil {
					insertErr.CompareAndSwap(nil, &err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}

	var last time.Time
	timeout := time.After(5 * time.Minute)
	for done := 0; done < cfg.Jobs; {
		select {
		case ev := <-completed:
			if ev.Kind != river.EventKindJobCompleted {
				return nil, fmt.Errorf("river job %d: %s", ev.Job.ID, ev.Kind)
			}
			done++
			last = time.Now()
		case <-timeout:
			return nil, fmt.Errorf("river: %d of %d jobs completed after 5 minutes", done, cfg.Jobs)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	wg.Wait()
	if err := insertErr.Load(); err != nil {
		return nil, fmt.Errorf("river insert: %w", *err)
	}
	if last.IsZero() {
		return nil, errors.New("river: no job completed")
	}
	elapsed := last.Sub(start)
	return &riverLoadResult{
		Elapsed:       elapsed,
		JobsPerSecond: float64(cfg.Jobs) / elapsed.Seconds(),
		InsertLatency: loadbench.Summarize(lat),
	}, nil
}

// BenchmarkLoadVersusRiver measures weft and River on the same work in the
// same run, alternating which goes first: weft's tasks/s (as
// BenchmarkLoadEcho) and River's jobs/s for 10,000 no-op jobs inserted one
// by one from 32 goroutines into SQLite with WAL and synchronous=FULL, in
// two configurations: River's defaults with 100 workers, and tuned for
// throughput (1,000 workers, 2 ms fetch cooldown). It reports both ratios.
func BenchmarkLoadVersusRiver(b *testing.B) {
	cfg := loadConfig(b)
	rivers := []struct {
		name string
		cfg  riverLoadConfig
		jobs float64
		secs float64
	}{
		{name: "river", cfg: riverLoadConfig{Jobs: cfg.Tasks, Clients: cfg.Clients, Workers: 100}},
		{name: "river_tuned", cfg: riverLoadConfig{Jobs: cfg.Tasks, Clients: cfg.Clients, Workers: 1000, FetchCooldown: 2 * time.Millisecond}},
	}
	var weftTasks, weftSeconds float64
	round := 0
	for b.Loop() {
		runWeft := func() {
			rep := mustRunLoad(b, cfg)
			weftTasks += float64(rep.Completed)
			weftSeconds += rep.ElapsedSeconds
			b.Logf("round %d: weft %.0f tasks/s, submit p50 %.1f ms p99 %.1f ms, %.1f writes per commit, writer busy %.2f",
				round, rep.TasksPerSecond, rep.Submit.LatencyMS.P50, rep.Submit.LatencyMS.P99, rep.Store.WritesPerCommit, rep.Store.WriterBusy)
		}
		runRivers := func() {
			for i := range rivers {
				r := &rivers[i]
				res, err := runRiverLoad(b.Context(), b.TempDir(), r.cfg)
				if err != nil {
					b.Fatal(err)
				}
				r.jobs += float64(r.cfg.Jobs)
				r.secs += res.Elapsed.Seconds()
				b.Logf("round %d: %s %.0f jobs/s, insert p50 %.1f ms p99 %.1f ms",
					round, r.name, res.JobsPerSecond, res.InsertLatency.P50, res.InsertLatency.P99)
			}
		}
		if round%2 == 0 {
			runWeft()
			runRivers()
		} else {
			runRivers()
			runWeft()
		}
		round++
	}
	weft := weftTasks / weftSeconds
	b.ReportMetric(weft, "weft_tasks/s")
	for _, r := range rivers {
		b.ReportMetric(r.jobs/r.secs, r.name+"_jobs/s")
		b.ReportMetric(weft/(r.jobs/r.secs), "ratio_"+r.name)
	}
	b.ReportMetric(0, "ns/op")
}

// loadConfig is weft's side of the load comparison, the defaults of `weft
// bench load` (a tenth under -short), with this test binary as the
// in-process daemon's compile child (TestMain).
func loadConfig(tb testing.TB) loadbench.Config {
	tb.Helper()
	bin, err := os.Executable()
	require.NoError(tb, err)
	cfg := loadbench.Config{Wasm: testkitWasm, CompileBin: bin}
	cfg = cfg.WithDefaults()
	if testing.Short() {
		cfg.Tasks /= 10
	}
	return cfg
}

// mustRunLoad is loadbench.Run that fails tb unless every task (or
// workflow) completed.
func mustRunLoad(tb testing.TB, cfg loadbench.Config) *loadbench.Report {
	tb.Helper()
	rep, err := loadbench.Run(tb.Context(), cfg, io.Discard)
	require.NoError(tb, err)
	if rep.Workflows != nil {
		require.True(tb, rep.OK() && rep.Workflows.Workflows == rep.Tasks, "load run: %d workflows of %d, %d failed",
			rep.Workflows.Workflows, rep.Tasks, rep.Workflows.Failed)
		return rep
	}
	require.True(tb, rep.OK() && rep.Completed == rep.Tasks, "load run: %d completed of %d, %d lost, %d failed, %d unfinished, %d submit errors",
		rep.Completed, rep.Tasks, rep.Lost, rep.Failed, rep.Unfinished, rep.Submit.Errors)
	return rep
}

// TestRiverLoad runs a small River load as the benchmark does, and weft's
// beside it, so that `go test` proves both sides of the comparison work.
func TestRiverLoad(t *testing.T) {
	res, err := runRiverLoad(t.Context(), t.TempDir(), riverLoadConfig{Jobs: 200, Clients: 4, Workers: 100})
	require.NoError(t, err)
	require.Positive(t, res.JobsPerSecond)
	require.GreaterOrEqual(t, res.InsertLatency.P99, res.InsertLatency.P50)
	cfg := loadConfig(t)
	cfg.Tasks, cfg.Clients = 200, 4
	rep := mustRunLoad(t, cfg)
	require.Positive(t, rep.TasksPerSecond)
}

// TestRiverLoadPostgres runs a small River load on PostgreSQL through its
// pgx driver, as BenchmarkLoadVersusRiverPostgres does.
func TestRiverLoadPostgres(t *testing.T) {
	res, err := runRiverLoad(t.Context(), "", riverLoadConfig{Jobs: 200, Clients: 4, Workers: 100, Postgres: pgtest.NewDatabase(t)})
	require.NoError(t, err)
	require.Positive(t, res.JobsPerSecond)
}
