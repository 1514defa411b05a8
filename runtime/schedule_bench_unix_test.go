//go:build unix

package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dbBytes is the size of the store's files (database and WAL).
func dbBytes(dir string) int64 {
	var n int64
	for _, name := range []string{"weft.db", "weft.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// createSchedules creates n interval schedules, spread over clients of
// 1,000 each, in parallel.
func createSchedules(b *testing.B, e *Engine, prefix string, n int, spec ScheduleSpec) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := e.ScheduleCreate(context.Background(), Caller{ClientID: fmt.Sprintf("cli_%s%d", prefix, i/1000)}, &ScheduleCreateParams{
				ID: fmt.Sprintf("%s-%d", prefix, i), Spec: spec, OverlapPolicy: OverlapAllowAll,
				Task: TaskCreateParams{Module: "test", Function: "echo"},
			})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// BenchmarkSchedules measures schedules at scale on a real SQLite store
// (docs/operations.md, "Schedules"): 10,000 active interval schedules
// whose next tick is an hour away — the rows and bytes they add, and the
// CPU the whole process spends over an idle period — then the lateness of
// ticks (the commit of a tick's task less its nominal time) while 1,000
// schedules tick every second for 10 seconds, all due on the same instant
// of each second, then spread over it. Run it once:
//
//	go test ./runtime -run '^$' -bench BenchmarkSchedules -benchtime=1x
//
// WEFT_BENCH_IDLE and WEFT_BENCH_TICKS (Go durations) change the idle and
// the ticking periods.
func BenchmarkSchedules(b *testing.B) {
	idle, ticking := 10*time.Second, 10*time.Second
	if v, err := time.ParseDuration(os.Getenv("WEFT_BENCH_IDLE")); err == nil {
		idle = v
	}
	if v, err := time.ParseDuration(os.Getenv("WEFT_BENCH_TICKS")); err == nil {
		ticking = v
	}
	e, bundle := setup(b, echo, func(c *Config) { c.Logger = hclog.NewNullLogger(); c.Workers = DefaultWorkers })
	ctx := context.Background()
	for b.Loop() {
		before := dbBytes(bundle.dir)
		start := time.Now()
		createSchedules(b, e, "idle", 10_000, ScheduleSpec{IntervalMS: time.Hour.Milliseconds()})
		b.ReportMetric(float64(time.Since(start).Microseconds())/10_000, "create-µs/schedule")
		var rows int
		for c := range 10 {
			list, err := e.store.ScheduleList(ctx, &store.ScheduleListParams{OwnerClientID: fmt.Sprintf("cli_idle%d", c), Limit: store.MaxListLimit + 1})
			require.NoError(b, err)
			rows += len(list)
		}
		require.Equal(b, 10_000, rows)
		b.ReportMetric(float64(rows), "schedule-rows")
		b.ReportMetric(float64(dbBytes(bundle.dir)-before)/float64(rows), "bytes/schedule")

		// Idle: no tick is due for an hour.
		time.Sleep(time.Second) // let the creation settle
		cpu0, t0 := processCPU(), time.Now()
		time.Sleep(idle)
		cpu := processCPU() - cpu0
		b.ReportMetric(100*cpu.Seconds()/time.Since(t0).Seconds(), "idle-cpu-%")
		tasks, err := e.store.TaskCount(ctx)
		require.NoError(b, err)
		require.Zero(b, tasks[store.StatusQueued]+tasks[store.StatusCompleted], "no tick while idle")

		// Ticking: 1,000 schedules every second, beside the idle ones:
		// first all on the same instant (the worst case: each second's
		// ticks are due at once), then spread over the second by their
		// offsets.
		for _, phase := range []struct {
			name   string
			offset func(i int) int64
		}{
			{"aligned", func(int) int64 { return 0 }},
			{"spread", func(i int) int64 { return int64(i) }},
		} {
			var wg sync.WaitGroup
			sem := make(chan struct{}, 32)
			for i := range 1000 {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					_, err := e.ScheduleCreate(ctx, Caller{ClientID: "cli_" + phase.name}, &ScheduleCreateParams{
						ID: fmt.Sprintf("%s-%d", phase.name, i), Spec: ScheduleSpec{IntervalMS: 1000, OffsetMS: phase.offset(i)},
						OverlapPolicy: OverlapAllowAll, Task: TaskCreateParams{Module: "test", Function: "echo"},
					})
					if err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			cpu0, t0 := processCPU(), time.Now()
			time.Sleep(ticking)
			cpu := processCPU() - cpu0
			elapsed := time.Since(t0)
			for i := range 1000 {
				_, err := e.SchedulePause(ctx, Caller{ClientID: "cli_" + phase.name}, fmt.Sprintf("%s-%d", phase.name, i), "")
				require.NoError(b, err)
			}
			b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), phase.name+"-cpu-%")
			var late []time.Duration
			for i := range 1000 {
				runs, err := e.store.ScheduleRuns(ctx, "cli_"+phase.name, fmt.Sprintf("%s-%d", phase.name, i))
				require.NoError(b, err)
				for _, r := range runs {
					late = append(late, r.StartedAt.Sub(r.TickAt))
				}
			}
			require.NotEmpty(b, late)
			slices.Sort(late)
			q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) / 1000 }
			b.ReportMetric(float64(len(late)), phase.name+"-ticks")
			b.ReportMetric(q(0.5), phase.name+"-late-p50-ms")
			b.ReportMetric(q(0.99), phase.name+"-late-p99-ms")
			b.ReportMetric(q(1), phase.name+"-late-max-ms")
		}
	}
}
