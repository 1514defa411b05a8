package loadbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// metrics are the daemon counters Run reads from GET /metrics.
type metrics struct {
	completed, failed, cancelled float64
	commits, writes              float64
	commitSeconds                float64
}

func (m metrics) finished() float64 { return m.completed + m.failed + m.cancelled }

// scrapeMetrics reads the finished-task counters and the store's group
// commit histograms (jobs: count is commits, sum is writes; duration: sum
// is the time spent committing).
func scrapeMetrics(ctx context.Context, c *client.Client) (metrics, error) {
	var m metrics
	text, err := c.Metrics(ctx)
	if err != nil {
		return m, fmt.Errorf("metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case `weft_tasks_finished_total{status="completed"}`:
			m.completed = f
		case `weft_tasks_finished_total{status="failed"}`:
			m.failed = f
		case `weft_tasks_finished_total{status="cancelled"}`:
			m.cancelled = f
		case "weft_store_commit_jobs_count":
			m.commits = f
		case "weft_store_commit_jobs_sum":
			m.writes = f
		case "weft_store_commit_duration_seconds_sum":
			m.commitSeconds = f
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

// scrapeAll sums the counters of every host.
func scrapeAll(ctx context.Context, hosts []*client.Client) (metrics, error) {
	var sum metrics
	for _, c := range hosts {
		m, err := scrapeMetrics(ctx, c)
		if err != nil {
			return sum, err
		}
		sum.completed += m.completed
		sum.failed += m.failed
		sum.cancelled += m.cancelled
		sum.commits += m.commits
		sum.writes += m.writes
		sum.commitSeconds += m.commitSeconds
	}
	return sum, nil
}
