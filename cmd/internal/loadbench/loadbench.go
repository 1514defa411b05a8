package loadbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Defaults of a run, those of `weft bench load`: 10,000 background echo
// tasks from 32 concurrent clients, at least 2,000 tasks/s with durable
// commits.
const (
	DefaultTasks    = 10_000
	DefaultClients  = 32
	TargetPerSecond = 2_000
	DefaultWasm     = "plugins/testkit/testkit.wasm"
	moduleName      = "testkit"
	pollInterval    = 200 * time.Millisecond
	listPage        = 500
	DefaultTimeout  = 5 * time.Minute
)

// Config configures one load run. The zero value of every field means its
// default.
type Config struct {
	// Addrs are running daemons' base URLs (the hosts of one database,
	// submitted to in turn); none starts daemons in this process.
	Addrs []string
	// Token authenticates against Addrs.
	Token string
	// Store is the PostgreSQL database the in-process daemons run on; ""
	// is SQLite under DataDir.
	Store string
	// Hosts is how many daemons run in this process on Store, each
	// submitted to in turn. Defaults to 1; more than one needs Store.
	Hosts int
	// Workload is WorkloadTasks (the default) or WorkloadWorkflows, for
	// which Tasks is the number of one-activity workflows (default
	// DefaultWorkflows) and Wasm the workflow module (default
	// DefaultWorkflowWasm).
	Workload string
	// DataDir is the in-process daemon's data directory. Defaults to a
	// temporary one, removed afterwards.
	DataDir string
	// Wasm is the testkit module file, deployed before the run; a
	// missing file is fine when the daemon has the module already.
	// Defaults to DefaultWasm (relative to the repository root).
	Wasm string
	// Tasks is how many echo tasks to submit. Defaults to DefaultTasks.
	Tasks int
	// Clients is how many HTTP clients submit at once. Defaults to
	// DefaultClients.
	Clients int
	// Workers is the in-process daemon's worker count; 0 is its default.
	Workers int
	// Synchronous is the in-process daemon's SQLite synchronous setting,
	// FULL or NORMAL. Defaults to FULL.
	Synchronous string
	// Timeout bounds the wait for the tasks to finish. Defaults to
	// DefaultTimeout.
	Timeout time.Duration
	// CompileBin is the weft binary the in-process daemon runs as its
	// compile child. Defaults to this executable, as `weft bench load`
	// is (see daemon.Config.CompileBin).
	CompileBin string
	// CPUProfile, when set, receives a CPU profile of the measured phase
	// (this process: the in-process daemon and the clients).
	CPUProfile string
	// Trace, when set, receives an execution trace of the measured phase;
	// `go tool trace -pprof=syscall` shows where goroutines waited on
	// system calls such as fsync.
	Trace string
}

// WithDefaults returns cfg with the defaults of its zero fields filled in.
func (cfg Config) WithDefaults() Config {
	if cfg.Workload == "" {
		cfg.Workload = WorkloadTasks
	}
	wasm, tasks := DefaultWasm, DefaultTasks
	if cfg.Workload == WorkloadWorkflows {
		wasm, tasks = DefaultWorkflowWasm, DefaultWorkflows
	}
	if cfg.Wasm == "" {
		cfg.Wasm = wasm
	}
	if cfg.Tasks == 0 {
		cfg.Tasks = tasks
	}
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Synchronous == "" {
		cfg.Synchronous = "FULL"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Hosts == 0 {
		cfg.Hosts = 1
	}
	return cfg
}

// Report is the JSON report of `weft bench load`.
type Report struct {
	Benchmark      string  `json:"benchmark"`
	Implementation string  `json:"implementation"`
	Daemon         string  `json:"daemon"`
	Backend        string  `json:"backend"`
	Hosts          int     `json:"hosts"`
	Tasks          int     `json:"tasks"`
	Clients        int     `json:"clients"`
	Workers        int     `json:"workers,omitempty"`
	Synchronous    string  `json:"synchronous,omitempty"`
	DurableCommits *bool   `json:"durable_commits,omitempty"`
	GOMAXPROCS     int     `json:"gomaxprocs"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	TasksPerSecond float64 `json:"tasks_per_second"`
	Submit         struct {
		Seconds   float64        `json:"seconds"`
		PerSecond float64        `json:"per_second"`
		LatencyMS LatencySummary `json:"latency_ms"`
		Errors    int            `json:"errors"`
	} `json:"submit"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Unfinished int `json:"unfinished"`
	Lost       int `json:"lost"`
	Store      struct {
		Commits         int64   `json:"commits"`
		Writes          int64   `json:"writes"`
		WritesPerCommit float64 `json:"writes_per_commit"`
		CommitMSMean    float64 `json:"commit_ms_mean"`
		// WriterBusy is the share of the elapsed time the store's single
		// writer spent in commits: near 1, the writer is the bottleneck.
		WriterBusy float64 `json:"writer_busy"`
	} `json:"store"`
	// Disk is the median latency of a 4 KiB write and fsync in the data
	// directory just before and just after the run: on a shared machine it
	// moves a lot, and durable throughput moves with it.
	Disk   *DiskProbe `json:"disk,omitempty"`
	Target struct {
		TasksPerSecond float64 `json:"tasks_per_second"`
		Passed         bool    `json:"passed"`
	} `json:"target"`
	// Workflows is the outcome of the workflows workload.
	Workflows *WorkflowReport `json:"workflows,omitempty"`
}

// DiskProbe holds the disk's fsync latency around a run, in milliseconds.
type DiskProbe struct {
	FsyncMSBefore float64 `json:"fsync_ms_before"`
	FsyncMSAfter  float64 `json:"fsync_ms_after"`
}

// LatencySummary holds percentiles in milliseconds.
type LatencySummary struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Run performs one load run and returns its report; progress lines go to
// logw. A run that lost, failed or left tasks unfinished still reports
// (Report.OK says whether it did).
func Run(ctx context.Context, cfg Config, logw io.Writer) (*Report, error) {
	cfg = cfg.WithDefaults()
	rep := &Report{
		Benchmark: "load", Implementation: "weft", Tasks: cfg.Tasks, Clients: cfg.Clients,
		GOMAXPROCS: goruntime.GOMAXPROCS(0),
	}
	rep.Target.TasksPerSecond = TargetPerSecond

	switch {
	case cfg.Hosts > 1 && cfg.Store == "":
		return nil, errors.New("several hosts need a PostgreSQL store")
	case cfg.Workload != WorkloadTasks && cfg.Workload != WorkloadWorkflows:
		return nil, fmt.Errorf("workload %q: want %s or %s", cfg.Workload, WorkloadTasks, WorkloadWorkflows)
	}
	probeDir := ""
	var bases []string
	token := cfg.Token
	if len(cfg.Addrs) == 0 {
		ds, stop, err := startDaemons(ctx, cfg, logw)
		if err != nil {
			return nil, err
		}
		defer stop()
		probeDir = ds[0].dir
		for _, d := range ds {
			bases = append(bases, "http://"+d.addr)
		}
		token = ds[0].token
		rep.Daemon = "in-process"
		rep.Workers = cfg.Workers
		if rep.Workers == 0 {
			rep.Workers = 128
		}
		rep.Backend = "sqlite"
		durable := true
		if cfg.Store == "" {
			rep.Synchronous = cfg.Synchronous
			durable = cfg.Synchronous == "FULL"
		} else {
			rep.Backend = "postgres"
			durable, err = postgresDurable(ctx, cfg.Store)
			if err != nil {
				return nil, err
			}
		}
		rep.DurableCommits = &durable
	} else {
		bases = cfg.Addrs
		rep.Daemon = strings.Join(cfg.Addrs, ",")
	}
	rep.Hosts = len(bases)
	hosts := make([]*client.Client, len(bases))
	for i, base := range bases {
		h, err := client.New(client.Config{BaseURL: base, Token: token, HTTPClient: &http.Client{Transport: &http.Transport{
			MaxIdleConns: cfg.Clients * 2, MaxIdleConnsPerHost: cfg.Clients * 2, DisableCompression: true,
		}}})
		if err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	c := hosts[0]
	if cfg.Workload == WorkloadWorkflows {
		rep.Benchmark = "load-workflows"
		wf, err := runWorkflows(ctx, cfg, hosts, logw)
		if err != nil {
			return nil, err
		}
		rep.Workflows = wf
		return rep, nil
	}

	if err := deployModule(ctx, c, cfg.Wasm); err != nil {
		return nil, err
	}
	body, err := taskBody()
	if err != nil {
		return nil, err
	}
	if probeDir != "" {
		ms, err := fsyncLatency(probeDir)
		if err != nil {
			return nil, err
		}
		rep.Disk = &DiskProbe{FsyncMSBefore: ms}
	}
	before, err := scrapeAll(ctx, hosts)
	if err != nil {
		return nil, err
	}

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	if cfg.Trace != "" {
		f, err := os.Create(cfg.Trace)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := trace.Start(f); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		defer trace.Stop()
	}

	// Submit from cfg.Clients goroutines.
	ids := make([]string, cfg.Tasks)
	start := time.Now()
	lat, failed, submitted, firstErr := fanOut(ctx, cfg.Tasks, cfg.Clients, func(i int) error {
		id, err := submitTask(ctx, hosts[i%len(hosts)], body)
		ids[i] = id
		return err
	})
	rep.Submit.Errors = failed
	if firstErr != nil {
		fmt.Fprintf(logw, "bench load: %d submits failed, first: %v\n", failed, firstErr)
	}
	acked := cfg.Tasks - rep.Submit.Errors
	rep.Submit.Seconds = submitted.Seconds()
	rep.Submit.PerSecond = float64(acked) / submitted.Seconds()
	rep.Submit.LatencyMS = Summarize(lat)

	// Wait until every acknowledged task has finished, watching the
	// daemon's finished-task counters (cheap to read, unlike listings).
	deadline := time.Now().Add(cfg.Timeout)
	var after metrics
	for {
		after, err = scrapeAll(ctx, hosts)
		if err != nil {
			return nil, err
		}
		if after.finished()-before.finished() >= float64(acked) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	pprof.StopCPUProfile()
	trace.Stop()
	rep.Store.Commits = int64(after.commits - before.commits)
	rep.Store.Writes = int64(after.writes - before.writes)
	commitSeconds := after.commitSeconds - before.commitSeconds
	if rep.Store.Commits > 0 {
		rep.Store.WritesPerCommit = round2(float64(rep.Store.Writes) / float64(rep.Store.Commits))
		rep.Store.CommitMSMean = round2(commitSeconds * 1000 / float64(rep.Store.Commits))
	}

	if rep.Disk != nil {
		if rep.Disk.FsyncMSAfter, err = fsyncLatency(probeDir); err != nil {
			return nil, err
		}
	}

	// The end is the last finish time the daemon recorded for these tasks.
	last, err := tallyTasks(ctx, c, ids, rep)
	if err != nil {
		return nil, err
	}
	if !last.IsZero() {
		elapsed := last.Sub(start)
		rep.ElapsedSeconds = round2(elapsed.Seconds())
		rep.TasksPerSecond = math.Round(float64(rep.Completed) / elapsed.Seconds())
		rep.Store.WriterBusy = round2(commitSeconds / elapsed.Seconds())
	}
	rep.Submit.Seconds = round2(rep.Submit.Seconds)
	rep.Submit.PerSecond = math.Round(rep.Submit.PerSecond)
	rep.Target.Passed = rep.TasksPerSecond >= TargetPerSecond && rep.Lost == 0 && rep.Failed == 0 && rep.Unfinished == 0
	return rep, nil
}

// OK reports whether every submitted task was acknowledged and completed:
// none lost, failed or unfinished, and no submit failed.
func (r *Report) OK() bool {
	if r.Workflows != nil {
		return r.Workflows.Failed == 0
	}
	return r.Lost == 0 && r.Failed == 0 && r.Unfinished == 0 && r.Submit.Errors == 0
}
