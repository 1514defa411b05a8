package compare

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/cmd/internal/loadbench"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// wfbenchWasm is the workflow module of the workflows workload, relative
// to this package.
var wfbenchWasm = filepath.Join("..", "weft", "testdata", "wfbench.wasm")

// pgSide is one configuration of BenchmarkPostgres and its figures, one
// per round.
type pgSide struct {
	name  string
	run   func(b *testing.B) float64
	rates []float64
}

// BenchmarkPostgres measures, in one run and on one PostgreSQL server
// (WEFT_TEST_POSTGRES, fsync and synchronous_commit on), each on a fresh
// database:
//
//   - weft's tasks/s for `weft bench load`'s work (10,000 background echo
//     tasks from 32 HTTP clients) with 1 and with 3 hosts on PostgreSQL,
//     and with 1 on SQLite (WAL, synchronous=FULL);
//   - River's jobs/s for as many no-op jobs inserted one by one from 32
//     goroutines, through its pgx driver, with its defaults (100 workers)
//     and tuned (1,000 workers, 2 ms fetch cooldown);
//   - weft's one-activity workflows/s (1,000 from 32 clients through POST
//     /v1/responses) and the p50 of a ten-activity workflow, with 1 and 3
//     hosts on PostgreSQL and 1 on SQLite.
//
// The hosts run in this process, sharing its two cores: three hosts show
// what sharing one database costs, not what three machines would add.
// Each round runs every side, in an order that rotates; the figures are
// medians over rounds, and ratios to River's are of those medians.
//
//	cd cmd/compare && go test -run '^$' -bench Postgres -benchtime 3x ./...
func BenchmarkPostgres(b *testing.B) {
	pgtest.Server(b) // skips without a server
	tasks := func(hosts int, pg bool) func(b *testing.B) float64 {
		return func(b *testing.B) float64 {
			cfg := loadConfig(b)
			cfg.Hosts = hosts
			if pg {
				cfg.Store = pgtest.NewDatabase(b)
			}
			return mustRunLoad(b, cfg).TasksPerSecond
		}
	}
	tenP50 := map[string][]float64{}
	workflows := func(name string, hosts int, pg bool) func(b *testing.B) float64 {
		return func(b *testing.B) float64 {
			cfg := loadConfig(b)
			cfg.Workload, cfg.Wasm, cfg.Tasks, cfg.Hosts = loadbench.WorkloadWorkflows, wfbenchWasm, loadbench.DefaultWorkflows, hosts
			if testing.Short() {
				cfg.Tasks /= 10
			}
			if pg {
				cfg.Store = pgtest.NewDatabase(b)
			}
			rep := mustRunLoad(b, cfg)
			tenP50[name] = append(tenP50[name], rep.Workflows.TenActivitiesMS.P50)
			return rep.Workflows.PerSecond
		}
	}
	river := func(workers int, cooldown time.Duration) func(b *testing.B) float64 {
		return func(b *testing.B) float64 {
			cfg := loadConfig(b)
			res, err := runRiverLoad(b.Context(), "", riverLoadConfig{
				Jobs: cfg.Tasks, Clients: cfg.Clients, Workers: workers, FetchCooldown: cooldown, Postgres: pgtest.NewDatabase(b),
			})
			require.NoError(b, err)
			return res.JobsPerSecond
		}
	}
	sides := []*pgSide{
		{name: "weft_pg_1host_tasks/s", run: tasks(1, true)},
		{name: "river_pg_jobs/s", run: river(100, 0)},
		{name: "weft_pg_3hosts_tasks/s", run: tasks(3, true)},
		{name: "river_pg_tuned_jobs/s", run: river(1000, 2*time.Millisecond)},
		{name: "weft_sqlite_tasks/s", run: tasks(1, false)},
		{name: "weft_pg_1host_workflows/s", run: workflows("pg_1host", 1, true)},
		{name: "weft_pg_3hosts_workflows/s", run: workflows("pg_3hosts", 3, true)},
		{name: "weft_sqlite_workflows/s", run: workflows("sqlite", 1, false)},
	}
	round := 0
	for b.Loop() {
		for k := range sides {
			s := sides[(k+round)%len(sides)]
			rate := s.run(b)
			s.rates = append(s.rates, rate)
			b.Logf("round %d: %s %.0f", round, s.name, rate)
		}
		round++
	}
	med := map[string]float64{}
	for _, s := range sides {
		med[s.name] = median(s.rates)
		b.ReportMetric(med[s.name], s.name)
	}
	b.ReportMetric(med["weft_pg_1host_tasks/s"]/med["river_pg_jobs/s"], "ratio_pg_1host_river")
	b.ReportMetric(med["weft_pg_1host_tasks/s"]/med["river_pg_tuned_jobs/s"], "ratio_pg_1host_river_tuned")
	b.ReportMetric(med["weft_pg_3hosts_tasks/s"]/med["river_pg_jobs/s"], "ratio_pg_3hosts_river")
	for name, p50s := range tenP50 {
		b.ReportMetric(median(p50s), "ms_p50_10_activities_"+name)
	}
	b.ReportMetric(0, "ns/op")
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// TestPostgresLoad runs each side of BenchmarkPostgres small, so that `go
// test` proves they all work: weft on PostgreSQL with three hosts (tasks
// and workflows), as the benchmark runs them.
func TestPostgresLoad(t *testing.T) {
	cfg := loadConfig(t)
	cfg.Tasks, cfg.Clients, cfg.Hosts, cfg.Store = 300, 8, 3, pgtest.NewDatabase(t)
	rep := mustRunLoad(t, cfg)
	require.Equal(t, 3, rep.Hosts)
	require.Equal(t, "postgres", rep.Backend)
	require.True(t, *rep.DurableCommits)
	require.Positive(t, rep.TasksPerSecond)

	cfg = loadConfig(t)
	cfg.Workload, cfg.Wasm, cfg.Tasks, cfg.Clients, cfg.Hosts, cfg.Store = loadbench.WorkloadWorkflows, wfbenchWasm, 60, 8, 3, pgtest.NewDatabase(t)
	rep = mustRunLoad(t, cfg)
	require.NotNil(t, rep.Workflows)
	require.Equal(t, 60, rep.Workflows.Workflows)
	require.Positive(t, rep.Workflows.PerSecond)
	require.Positive(t, rep.Workflows.TenActivitiesMS.P50)
}
