package loadbench

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// fanOut runs call(0) … call(n-1) from clients goroutines, each taking the
// next index until n are taken or ctx ends. It returns the latency of each
// call that succeeded (zero for one that failed, which Summarize leaves
// out: a failed call measures nothing of the work), how many failed, the
// wall time of the whole fan-out, and the first error.
func fanOut(ctx context.Context, n, clients int, call func(i int) error) (lat []time.Duration, failed int, elapsed time.Duration, first error) {
	lat = make([]time.Duration, n)
	var next, nfailed atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := call(i); err != nil {
					nfailed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	if p := firstErr.Load(); p != nil {
		first = *p
	}
	return lat, int(nfailed.Load()), elapsed, first
}

// Summarize returns the p50, p99 and maximum of ds in milliseconds; zero
// durations (submits that never ran) are left out.
func Summarize(ds []time.Duration) LatencySummary {
	s := make([]time.Duration, 0, len(ds))
	for _, d := range ds {
		if d > 0 {
			s = append(s, d)
		}
	}
	if len(s) == 0 {
		return LatencySummary{}
	}
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return round2(float64(s[max(i, 0)]) / float64(time.Millisecond))
	}
	return LatencySummary{P50: at(0.50), P99: at(0.99), Max: at(1)}
}

// fsyncSamples is how many 4 KiB writes fsyncLatency times.
const fsyncSamples = 40

// fsyncLatency returns the median time, in milliseconds, of writing 4 KiB
// to a scratch file in dir and syncing it.
func fsyncLatency(dir string) (float64, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, fmt.Errorf("disk probe: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }()
	page := make([]byte, 4096)
	ds := make([]time.Duration, fsyncSamples)
	for i := range ds {
		t0 := time.Now()
		if _, err := f.WriteAt(page, int64(i)*int64(len(page))); err != nil {
			return 0, fmt.Errorf("disk probe: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("disk probe: %w", err)
		}
		ds[i] = time.Since(t0)
	}
	return Summarize(ds).P50, nil
}

// round2 rounds f to two decimals.
func round2(f float64) float64 { return math.Round(f*100) / 100 }
