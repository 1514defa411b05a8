package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weft-run/weft/store"
)

// Metrics holds the engine's Prometheus collectors: tasks by status, queue
// depth, task duration, plugin call latency, store write latency, the
// store's group-commit latency when the store reports it (see
// ObserveStoreCommit), and the writes the store refused that wait to be
// written again. Create it with New before the store, so the store's commit
// hook can point at it, and pass it in runtime.Config.Metrics. A nil
// *Metrics records nothing. Its methods are safe for concurrent use.
type Metrics struct {
	taskDuration  *prometheus.HistogramVec
	tasksFinished *prometheus.CounterVec
	callDuration  *prometheus.HistogramVec
	writeDuration *prometheus.HistogramVec
	commitLatency prometheus.Histogram
	commitJobs    prometheus.Histogram
	store         atomic.Pointer[storeRef]
	heal          atomic.Pointer[HealState]
}

type storeRef struct{ s store.Store }

// latencyBuckets span 100 µs to about 13 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 18)

// HealState reports the engine's queue of refused writes: how many wait to
// be written again, and how many were left to start-up recovery.
type HealState func() (waiting, left int)

// New creates the collectors and registers them with reg. It returns the
// registration error, such as a duplicate registration.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_task_duration_seconds", Help: "Time from task creation to its terminal status, by terminal status.",
			Buckets: latencyBuckets,
		}, []string{"status"}),
		tasksFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tasks_finished_total", Help: "Tasks that reached a terminal status, by status.",
		}, []string{"status"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_plugin_call_duration_seconds", Help: "Latency of plugin calls, by module and outcome (ok or error).",
			Buckets: latencyBuckets,
		}, []string{"module", "outcome"}),
		writeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_store_write_duration_seconds", Help: "Latency of the engine's store writes until durably committed, by operation.",
			Buckets: latencyBuckets,
		}, []string{"op"}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weft_store_commit_duration_seconds", Help: "Latency of one group commit of the store, from BEGIN to durable COMMIT.",
			Buckets: latencyBuckets,
		}),
		commitJobs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weft_store_commit_jobs", Help: "Writes per group commit of the store.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
	}
	for _, c := range []prometheus.Collector{
		m.taskDuration, m.tasksFinished, m.callDuration, m.writeDuration, m.commitLatency, m.commitJobs,
		statusCollector{m},
		healCollector{m},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveStoreCommit records one group commit of the store: the number of
// writes it held and its latency. It matches the commit hook of
// store/sqlite (sqlite.Config.ObserveCommit) and does not block.
func (m *Metrics) ObserveStoreCommit(jobs int, d time.Duration) {
	if m == nil {
		return
	}
	m.commitLatency.Observe(d.Seconds())
	m.commitJobs.Observe(float64(jobs))
}

// Attach points the scrape-time collectors at the engine's store and its
// queue of refused writes.
func (m *Metrics) Attach(s store.Store, heal HealState) {
	if m != nil {
		m.store.Store(&storeRef{s})
		m.heal.Store(&heal)
	}
}

// ObserveCall records one plugin call of module: its latency and whether
// it succeeded.
func (m *Metrics) ObserveCall(module string, d time.Duration, ok bool) {
	if m == nil {
		return
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.callDuration.WithLabelValues(module, outcome).Observe(d.Seconds())
}

// ObserveWrite records one store write of the engine, by operation.
func (m *Metrics) ObserveWrite(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.writeDuration.WithLabelValues(op).Observe(d.Seconds())
}

// ObserveFinished records a task that reached its terminal status.
func (m *Metrics) ObserveFinished(t *store.Task) {
	if m == nil || t == nil || !t.Status.IsTerminal() {
		return
	}
	m.tasksFinished.WithLabelValues(string(t.Status)).Inc()
	if !t.FinishedAt.IsZero() {
		m.taskDuration.WithLabelValues(string(t.Status)).Observe(t.FinishedAt.Sub(t.CreatedAt).Seconds())
	}
}

var (
	tasksDesc = prometheus.NewDesc("weft_tasks", "Tasks in the store, by status.", []string{"status"}, nil)
	queueDesc = prometheus.NewDesc("weft_queue_depth", "Queued tasks waiting for a worker.", nil, nil)
)

// statusCollector reads the task counts from the store at scrape time.
type statusCollector struct{ m *Metrics }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- queueDesc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.store.Load()
	if ref == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := ref.s.TaskCount(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(tasksDesc, err)
		return
	}
	for _, s := range store.Statuses {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(counts[store.StatusQueued]))
}

var (
	retryWaitingDesc = prometheus.NewDesc("weft_store_retry_tasks",
		"Task writes the store refused that wait in memory to be written again.", nil, nil)
	retryLeftDesc = prometheus.NewDesc("weft_store_retry_left_total",
		"Task writes the store refused that did not fit the retry queue and were left to start-up recovery.", nil, nil)
)

// healCollector reports the healer's queue at scrape time.
type healCollector struct{ m *Metrics }

func (c healCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- retryWaitingDesc
	ch <- retryLeftDesc
}

func (c healCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.m.heal.Load()
	if h == nil {
		return
	}
	waiting, left := (*h)()
	ch <- prometheus.MustNewConstMetric(retryWaitingDesc, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(retryLeftDesc, prometheus.CounterValue, float64(left))
}
