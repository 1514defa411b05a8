package loadbench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

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
