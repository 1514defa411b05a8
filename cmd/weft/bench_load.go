package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Defaults of `weft bench load` (issue "crash and load tests": 10,000
// background echo tasks from 32 concurrent clients, at least 2,000 tasks/s
// with durable commits).
const (
	defaultLoadTasks   = 10_000
	defaultLoadClients = 32
	loadTargetPerSec   = 2_000
	defaultLoadWasm    = "plugins/testkit/testkit.wasm"
	loadModule         = "testkit"
	loadPollInterval   = 200 * time.Millisecond
	loadListPage       = 500
	defaultLoadTimeout = 5 * time.Minute
)

// loadConfig configures one load run.
type loadConfig struct {
	// addr is a running daemon's HOST:PORT; "" starts a daemon in this
	// process on dataDir.
	addr string
	// token authenticates against addr; "" reads dataDir/admin.token.
	token string
	// dataDir is the in-process daemon's data directory ("" = a temporary
	// one, removed afterwards), or where to find admin.token with addr.
	dataDir string
	// wasm is the testkit module file, deployed before the run.
	wasm string
	// tasks is how many echo tasks to submit.
	tasks int
	// clients is how many HTTP clients submit at once.
	clients int
	// workers is the in-process daemon's worker count (0 = its default).
	workers int
	// synchronous is the in-process daemon's SQLite synchronous setting.
	synchronous string
	// timeout bounds the wait for the tasks to finish.
	timeout time.Duration
	// compileBin is the weft binary the in-process daemon runs as its
	// compile child ("" = this executable, as weft bench load is).
	compileBin string
	// cpuProfile, when set, receives a CPU profile of the measured phase
	// (this process: the in-process daemon and the clients).
	cpuProfile string
	// trace, when set, receives an execution trace of the measured phase;
	// `go tool trace -pprof=syscall` shows where goroutines waited on
	// system calls such as fsync.
	trace string
}

// loadReport is the JSON report of `weft bench load`.
type loadReport struct {
	Benchmark      string  `json:"benchmark"`
	Implementation string  `json:"implementation"`
	Daemon         string  `json:"daemon"`
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
		LatencyMS latencySummary `json:"latency_ms"`
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
	Disk   *diskProbe `json:"disk,omitempty"`
	Target struct {
		TasksPerSecond float64 `json:"tasks_per_second"`
		Passed         bool    `json:"passed"`
	} `json:"target"`
}

// diskProbe holds the disk's fsync latency around a run, in milliseconds.
type diskProbe struct {
	FsyncMSBefore float64 `json:"fsync_ms_before"`
	FsyncMSAfter  float64 `json:"fsync_ms_after"`
}

// latencySummary holds percentiles in milliseconds.
type latencySummary struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func newBenchLoadCmd() *cobra.Command {
	cfg := loadConfig{tasks: defaultLoadTasks, clients: defaultLoadClients, synchronous: "FULL", wasm: defaultLoadWasm, timeout: defaultLoadTimeout}
	cmd := &cobra.Command{
		Use:   "load",
		Short: "measure task throughput: background echo tasks from concurrent HTTP clients",
		Long: "load starts a daemon in this process on a temporary data directory (or uses a\n" +
			"running one with --addr), deploys the testkit plugin, submits --tasks background\n" +
			"echo tasks from --clients concurrent HTTP clients, and waits until all have\n" +
			"finished. It prints a JSON report: tasks per second from the first submit to\n" +
			"the last completion, submit latency percentiles, lost tasks (acknowledged with\n" +
			"202 but missing), and the store's group commits. It exits 1 when a task is\n" +
			"lost, failed or unfinished.\n\n" +
			"The same work on River (riverqueue/river with its SQLite driver) runs as a Go\n" +
			"benchmark, which reports the ratio of the two:\n" +
			"  go test -run '^$' -bench LoadVersusRiver -benchtime 1x ./cmd/weft",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.tasks < 1:
				return usageError{fmt.Errorf("--tasks must be at least 1, not %d", cfg.tasks)}
			case cfg.clients < 1:
				return usageError{fmt.Errorf("--clients must be at least 1, not %d", cfg.clients)}
			case cfg.workers < 0:
				return usageError{fmt.Errorf("--workers must not be negative, not %d", cfg.workers)}
			case cfg.timeout <= 0:
				return usageError{fmt.Errorf("--timeout must be positive")}
			}
			switch strings.ToUpper(cfg.synchronous) {
			case "FULL", "NORMAL":
				cfg.synchronous = strings.ToUpper(cfg.synchronous)
			default:
				return usageError{fmt.Errorf("--synchronous must be FULL or NORMAL, not %q", cfg.synchronous)}
			}
			report, err := runLoad(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("bench load: %w", err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(report); err != nil {
				return fmt.Errorf("bench load: write report: %w", err)
			}
			if report.Lost > 0 || report.Failed > 0 || report.Unfinished > 0 || report.Submit.Errors > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench load: %d lost, %d failed, %d unfinished, %d submit errors\n",
					report.Lost, report.Failed, report.Unfinished, report.Submit.Errors)
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "", "use the daemon at HOST:PORT instead of starting one in this process")
	f.StringVar(&cfg.token, "token", "", "bearer token for --addr (default $WEFT_TOKEN or DATA/"+adminTokenFile+")")
	f.StringVar(&cfg.dataDir, "data", "", "data directory of the in-process daemon (default: a temporary one, removed afterwards)")
	f.StringVar(&cfg.wasm, "wasm", cfg.wasm, "testkit module file to deploy")
	f.IntVar(&cfg.tasks, "tasks", cfg.tasks, "tasks to submit")
	f.IntVar(&cfg.clients, "clients", cfg.clients, "concurrent HTTP clients")
	f.IntVar(&cfg.workers, "workers", 0, "worker count of the in-process daemon (default 128)")
	f.StringVar(&cfg.synchronous, "synchronous", cfg.synchronous, "SQLite synchronous setting of the in-process daemon: FULL or NORMAL")
	f.DurationVar(&cfg.timeout, "timeout", cfg.timeout, "how long to wait for the tasks to finish")
	f.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured phase to this file")
	f.StringVar(&cfg.trace, "trace", "", "write an execution trace of the measured phase to this file")
	return cmd
}

// runLoad performs one load run; progress lines go to logw.
func runLoad(ctx context.Context, cfg loadConfig, logw io.Writer) (*loadReport, error) {
	rep := &loadReport{
		Benchmark: "load", Implementation: "weft", Tasks: cfg.tasks, Clients: cfg.clients,
		GOMAXPROCS: goruntime.GOMAXPROCS(0),
	}
	rep.Target.TasksPerSecond = loadTargetPerSec

	probeDir := ""
	var base, token string
	if cfg.addr == "" {
		d, err := startLoadDaemon(ctx, cfg, logw)
		if err != nil {
			return nil, err
		}
		defer d.stop()
		probeDir = d.dir
		base, token = "http://"+d.addr, d.token
		rep.Daemon = "in-process"
		rep.Workers = cfg.workers
		if rep.Workers == 0 {
			rep.Workers = 128
		}
		rep.Synchronous = cfg.synchronous
		durable := cfg.synchronous == "FULL"
		rep.DurableCommits = &durable
	} else {
		o := clientOptions{addr: cfg.addr, token: cfg.token, dataDir: cfg.dataDir}
		cc, _, err := o.config()
		if err != nil {
			return nil, err
		}
		base, token = cc.BaseURL, cc.Token
		rep.Daemon = cfg.addr
	}
	c, err := client.New(client.Config{BaseURL: base, Token: token, HTTPClient: &http.Client{Transport: &http.Transport{
		MaxIdleConns: cfg.clients * 2, MaxIdleConnsPerHost: cfg.clients * 2, DisableCompression: true,
	}}})
	if err != nil {
		return nil, err
	}

	if err := deployLoadModule(ctx, c, cfg.wasm); err != nil {
		return nil, err
	}
	body, err := loadTaskBody()
	if err != nil {
		return nil, err
	}
	if probeDir != "" {
		ms, err := fsyncLatency(probeDir)
		if err != nil {
			return nil, err
		}
		rep.Disk = &diskProbe{FsyncMSBefore: ms}
	}
	before, err := scrapeLoadMetrics(ctx, c)
	if err != nil {
		return nil, err
	}

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	if cfg.trace != "" {
		f, err := os.Create(cfg.trace)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := trace.Start(f); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		defer trace.Stop()
	}

	// Submit from cfg.clients goroutines.
	ids := make([]string, cfg.tasks)
	lat := make([]time.Duration, cfg.tasks)
	var next atomic.Int64
	var submitErrs atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.tasks || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				id, err := submitLoadTask(ctx, c, body)
				lat[i] = time.Since(t0)
				if err != nil {
					submitErrs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	submitted := time.Since(start)
	rep.Submit.Errors = int(submitErrs.Load())
	if err := firstErr.Load(); err != nil {
		fmt.Fprintf(logw, "bench load: %d submits failed, first: %v\n", rep.Submit.Errors, *err)
	}
	acked := cfg.tasks - rep.Submit.Errors
	rep.Submit.Seconds = submitted.Seconds()
	rep.Submit.PerSecond = float64(acked) / submitted.Seconds()
	rep.Submit.LatencyMS = summarize(lat)

	// Wait until every acknowledged task has finished, watching the
	// daemon's finished-task counters (cheap to read, unlike listings).
	deadline := time.Now().Add(cfg.timeout)
	var after loadMetrics
	for {
		after, err = scrapeLoadMetrics(ctx, c)
		if err != nil {
			return nil, err
		}
		if after.finished()-before.finished() >= float64(acked) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(loadPollInterval):
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
	last, err := tallyLoadTasks(ctx, c, ids, rep)
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
	rep.Target.Passed = rep.TasksPerSecond >= loadTargetPerSec && rep.Lost == 0 && rep.Failed == 0 && rep.Unfinished == 0
	return rep, nil
}

// loadDaemon is a daemon started by runLoad in this process.
type loadDaemon struct {
	dir   string
	addr  string
	token string
	main  *daemon.Main
	tmp   string
	logw  io.Writer
}

// startLoadDaemon runs the daemon in this process and returns once it
// listens; the daemon's error logs go to logw.
func startLoadDaemon(ctx context.Context, cfg loadConfig, logw io.Writer) (*loadDaemon, error) {
	d := &loadDaemon{logw: logw}
	dir := cfg.dataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "weft-bench-load-")
		if err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		dir, d.tmp = tmp, tmp
	}
	d.dir = dir
	// The daemon's defaults are those of `weft serve`.
	scfg, err := daemon.ParseFlags([]string{
		"--data", dir, "--addr", "127.0.0.1:0", "--log-level", "error",
		"--workers", strconv.Itoa(cfg.workers), "--synchronous", cfg.synchronous,
	})
	if err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	scfg.CompileBin = cfg.compileBin
	d.main = daemon.New(scfg, io.Discard, logw)
	if err := d.main.Run(ctx); err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	d.addr = d.main.Addr()
	token, err := os.ReadFile(filepath.Join(dir, adminTokenFile))
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	d.token = strings.TrimSpace(string(token))
	return d, nil
}

// stop shuts the daemon down and removes a temporary data directory.
func (d *loadDaemon) stop() {
	_ = d.main.Close(context.Background()) // each close error is logged
	if err := d.main.Wait(); err != nil {
		fmt.Fprintf(d.logw, "daemon stopped: %v\n", err)
	}
	d.removeTmp()
}

func (d *loadDaemon) removeTmp() {
	if d.tmp != "" {
		_ = os.RemoveAll(d.tmp)
		d.tmp = ""
	}
}

// deployLoadModule deploys the testkit module from file as "testkit". A
// missing file is fine when the daemon already has the module.
func deployLoadModule(ctx context.Context, c *client.Client, file string) error {
	wasm, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := c.ModuleGet(ctx, loadModule); err == nil {
			return nil
		}
		return fmt.Errorf("read module: %w (run from the repository root, or pass --wasm)", err)
	}
	if err != nil {
		return fmt.Errorf("read module: %w", err)
	}
	_, err = c.ModuleDeploy(ctx, loadModule, wasm, nil)
	return err
}

// loadTaskBody is the body of every submit: a background echo of a small
// map, with the default policy.
func loadTaskBody() ([]byte, error) {
	env, err := codec.EncodeEnvelope(codec.Map(codec.Entry{Key: "hello", Value: codec.String("world")}))
	if err != nil {
		return nil, err
	}
	return json.Marshal(&client.TaskRequest{Module: loadModule, Function: "echo", Input: client.InputOf(env)})
}

// submitLoadTask posts one task and returns its id once the daemon answered
// 202 (the task is committed).
func submitLoadTask(ctx context.Context, c *client.Client, body []byte) (string, error) {
	var t client.Task
	if err := c.Do(ctx, &client.Request{Method: http.MethodPost, Path: "/v1/tasks", Body: body}, &t); err != nil {
		return "", err
	}
	if t.ID == "" {
		return "", fmt.Errorf("decode task: no id")
	}
	return t.ID, nil
}

// tallyLoadTasks lists the daemon's tasks, newest first, until it has seen
// every id, counts them into rep by status, and returns the latest finish
// time among them.
func tallyLoadTasks(ctx context.Context, c *client.Client, ids []string, rep *loadReport) (time.Time, error) {
	want := make(map[string]bool, len(ids))
	oldest := ""
	for _, id := range ids {
		if id == "" {
			continue
		}
		want[id] = true
		if oldest == "" || id < oldest {
			oldest = id
		}
	}
	var last time.Time
	seen := 0
	cursor := ""
	for seen < len(want) {
		page, err := c.TaskList(ctx, &client.TaskListParams{Limit: loadListPage, Cursor: cursor})
		if err != nil {
			return time.Time{}, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range page.Data {
			if !want[t.ID] {
				continue
			}
			seen++
			switch t.Status {
			case "completed":
				rep.Completed++
			case "failed", "cancelled":
				rep.Failed++
			default:
				rep.Unfinished++
			}
			if t.FinishedAt != nil && t.FinishedAt.After(last) {
				last = *t.FinishedAt
			}
		}
		if !page.HasMore || len(page.Data) == 0 || page.Data[len(page.Data)-1].ID < oldest {
			break
		}
		cursor = page.NextCursor
	}
	rep.Lost = len(want) - seen
	return last, nil
}

// loadMetrics are the daemon counters runLoad reads from GET /metrics.
type loadMetrics struct {
	completed, failed, cancelled float64
	commits, writes              float64
	commitSeconds                float64
}

func (m loadMetrics) finished() float64 { return m.completed + m.failed + m.cancelled }

// scrapeLoadMetrics reads the finished-task counters and the store's group
// commit histograms (jobs: count is commits, sum is writes; duration: sum
// is the time spent committing).
func scrapeLoadMetrics(ctx context.Context, c *client.Client) (loadMetrics, error) {
	var m loadMetrics
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

// summarize returns the p50, p99 and maximum of ds in milliseconds; zero
// durations (submits that never ran) are left out.
func summarize(ds []time.Duration) latencySummary {
	s := make([]time.Duration, 0, len(ds))
	for _, d := range ds {
		if d > 0 {
			s = append(s, d)
		}
	}
	if len(s) == 0 {
		return latencySummary{}
	}
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return round2(float64(s[max(i, 0)]) / float64(time.Millisecond))
	}
	return latencySummary{P50: at(0.50), P99: at(0.99), Max: at(1)}
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
	return summarize(ds).P50, nil
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// addrWatcher is a daemon's stdout: it finds the "weft listening on" line
// that serve prints and sends the address once.
type addrWatcher struct {
	mu    sync.Mutex
	buf   []byte
	sent  bool
	ready chan string
}

func newAddrWatcher() *addrWatcher { return &addrWatcher{ready: make(chan string, 1)} }

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if addr, ok := strings.CutPrefix(line, "weft listening on http://"); ok {
			w.sent = true
			w.buf = nil
			w.ready <- addr
			return len(p), nil
		}
	}
}
