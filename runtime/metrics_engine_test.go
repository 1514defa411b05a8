package runtime

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/store"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	e, _ := setup(t, echo, func(c *Config) { c.Metrics = m })
	for range 3 {
		mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "echo"}).ID)
	}
	m.ObserveStoreCommit(7, 3*time.Millisecond)

	byName := map[string]*dto.MetricFamily{}
	// A worker records a task's duration right after the commit that
	// subscribers see, so the last one may lag a little.
	require.Eventually(t, func() bool {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			byName[f.GetName()] = f
		}
		h := byName["weft_task_duration_seconds"]
		return h != nil && h.GetMetric()[0].GetHistogram().GetSampleCount() == 3
	}, 10*time.Second, time.Millisecond)
	gauge := func(name, status string) float64 {
		for _, mt := range byName[name].GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == status {
					return mt.GetGauge().GetValue()
				}
			}
		}
		t.Fatalf("no %s{status=%q}", name, status)
		return 0
	}
	require.EqualValues(t, 3, gauge("weft_tasks", string(store.StatusCompleted)))
	require.EqualValues(t, 0, gauge("weft_tasks", string(store.StatusQueued)))
	require.EqualValues(t, 0, byName["weft_queue_depth"].GetMetric()[0].GetGauge().GetValue())
	require.EqualValues(t, 3, byName["weft_task_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount())
	require.EqualValues(t, 3, byName["weft_plugin_call_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount())
	require.EqualValues(t, 1, byName["weft_store_commit_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount())
	require.EqualValues(t, 7, byName["weft_store_commit_jobs"].GetMetric()[0].GetHistogram().GetSampleSum())
	require.NotEmpty(t, byName["weft_store_write_duration_seconds"].GetMetric())

	_, err = metrics.New(reg)
	require.Error(t, err, "registering twice fails")
}
