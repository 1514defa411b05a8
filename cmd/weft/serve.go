package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/httpapi"
	"github.com/weft-run/weft/runtime/preflight"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// Files and folders of the data directory.
const (
	cacheDir  = "cache"
	addrFile  = "weft.addr"
	shutdownD = 10 * time.Second
)

// serveConfig is the daemon's configuration, from flags.
type serveConfig struct {
	dataDir     string
	addr        string
	logFormat   string
	logLevel    string
	workers     int
	synchronous string
	retention   time.Duration
	// grace is how long a graceful stop lets running plugin calls finish.
	grace time.Duration
	// retryAttempts is the attempts of the default retry policy of
	// activity tasks.
	retryAttempts int

	// Memory and fairness (docs/operations.md).
	clientWorkers      int
	memoryBudget       int64
	clientMemoryLimit  int64
	maxPendingSignals  int
	maxPendingSigBytes int64
	maxPageBytes       int64
	maxProjectionBytes int64
	maxReadBytes       int64
	// Bounds of the daemon's log and of store errors
	// (docs/operations.md, "Data directory, logs and store errors").
	pluginLogs host.LogLimits
	storeRetry runtime.StoreRetry
	admission  admissionConfig
	// cacheDir is the compilation cache (default DATA/cache).
	cacheDir string
	// progressInterval spaces the task.progress events of one call.
	progressInterval time.Duration
}

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the weft daemon",
		Long: "serve runs the daemon: it checks every stored payload (preflight), recovers\n" +
			"unfinished tasks by their on_restart policy, and serves the HTTP API.\n" +
			"On first start it creates DATA/admin.token (mode 0600). SIGTERM or Ctrl-C\n" +
			"shut it down gracefully: no new task starts, running plugin calls get up to\n" +
			"--shutdown-grace to finish, the rest are interrupted (their tasks recover by\n" +
			"their on_restart policy at the next start), and the daemon is gone within\n" +
			"10 s after that.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch cfg.logFormat {
			case "text", "json":
			default:
				return usageError{fmt.Errorf("--log-format must be text or json, not %q", cfg.logFormat)}
			}
			if cfg.grace < 0 {
				return usageError{fmt.Errorf("--shutdown-grace must not be negative")}
			}
			if cfg.retryAttempts < 1 {
				return usageError{fmt.Errorf("--default-retry-attempts must be at least 1")}
			}
			if err := cfg.admission.validate(); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				// After the first signal a second one ends the process at
				// once, as an unhandled signal does (a crash, which
				// recovery handles).
				<-ctx.Done()
				stop()
			}()
			err := serve(ctx, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
			var ee exitError
			if err != nil && cfg.logFormat == "json" && !errors.As(err, &ee) {
				// With --log-format json, standard error carries JSON only.
				hclog.New(&hclog.LoggerOptions{Name: "weft", Output: cmd.ErrOrStderr(), JSONFormat: true}).
					Error("weft serve stopped", "error", err.Error())
				return exitError{code: 1}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dataDir, "data", defaultDataDir, "data directory (database, module files, compilation cache, admin token)")
	f.StringVar(&cfg.addr, "addr", defaultAddr, "HTTP listen address HOST:PORT (port 0 picks a free one)")
	f.StringVar(&cfg.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level: trace, debug, info, warn or error")
	f.IntVar(&cfg.workers, "workers", 0, "tasks run at once (default 128)")
	f.StringVar(&cfg.synchronous, "synchronous", "FULL", "SQLite synchronous setting: FULL (every commit survives power loss) or NORMAL")
	f.DurationVar(&cfg.retention, "retention", 0, "how long finished tasks are kept (default: the stored setting, 7 days)")
	f.DurationVar(&cfg.grace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long running plugin calls may go on before they are interrupted")
	f.IntVar(&cfg.retryAttempts, "default-retry-attempts", runtime.DefaultActivityRetry.MaximumAttempts,
		"attempts of an activity task created without a retry policy (1: no retry; waits start at 1s and double)")
	f.IntVar(&cfg.clientWorkers, "client-workers", 0, "most workers one client's tasks hold at once (default: workers less max(1, workers/8))")
	sizeVar(f, &cfg.memoryBudget, "memory-budget", 0, "sum of the memory limits of the plugin calls in flight, in bytes (default 4GiB)")
	sizeVar(f, &cfg.clientMemoryLimit, "client-memory-limit", 0, "largest memory_limit_bytes a non-admin client may ask for (default 256MiB)")
	f.IntVar(&cfg.maxPendingSignals, "max-pending-signals", 0, "signals a workflow may hold unconsumed (default 1000)")
	sizeVar(f, &cfg.maxPendingSigBytes, "max-pending-signal-bytes", 0, "bytes of signals a workflow may hold unconsumed (default 16MiB)")
	sizeVar(f, &cfg.maxPageBytes, "max-page-bytes", 0, "a list page ends early past this encoded size (default 4MiB)")
	sizeVar(f, &cfg.maxProjectionBytes, "max-projection-bytes", 0, "largest stored payload shown with its typed projection (default 1MiB)")
	sizeVar(f, &cfg.maxReadBytes, "max-read-bytes", 0, "stored payload bytes single reads write out at once (default 64MiB)")
	f.Float64Var(&cfg.pluginLogs.Rate, "plugin-log-rate", host.DefaultLogRate, "plugin log lines per second each module may write to the daemon's log")
	f.IntVar(&cfg.pluginLogs.Burst, "plugin-log-burst", host.DefaultLogBurst, "plugin log lines each module may write at once, above --plugin-log-rate")
	f.Float64Var(&cfg.pluginLogs.ByteRate, "plugin-log-bytes", host.DefaultLogByteRate, "plugin log bytes per second each module may write to the daemon's log")
	sizeVar(f, &cfg.pluginLogs.ByteBurst, "plugin-log-burst-bytes", host.DefaultLogByteBurst, "plugin log bytes each module may write at once, above --plugin-log-bytes")
	f.IntVar(&cfg.pluginLogs.CallLines, "plugin-log-call-lines", host.DefaultLogCallLines, "most plugin log lines one call (or one _initialize) writes to the daemon's log")
	sizeVar(f, &cfg.pluginLogs.MaxLine, "plugin-log-max-line", host.DefaultLogMaxLine, "longest plugin log line in the daemon's log, in bytes; longer ones are cut")
	f.IntVar(&cfg.storeRetry.MaxTasks, "store-retry-tasks", runtime.DefaultStoreRetryTasks, "most task writes kept in memory, and written again, while the store refuses writes")
	sizeVar(f, &cfg.storeRetry.MaxBytes, "store-retry-bytes", runtime.DefaultStoreRetryBytes, "most bytes of outputs, errors and events those writes hold")
	addAdmissionFlags(cmd, &cfg.admission)
	f.StringVar(&cfg.cacheDir, "cache", "", "compilation cache directory, which daemons of one weft version may share (default DATA/cache)")
	f.DurationVar(&cfg.progressInterval, "progress-interval", runtime.DefaultProgressInterval, "shortest time between two task.progress events of one plugin call; reports in between coalesce")
	return cmd
}

// serve runs the daemon until ctx is done.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "weft",
		Level:      hclog.LevelFromString(cfg.logLevel),
		Output:     stderr,
		JSONFormat: cfg.logFormat == "json",
	})
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// One daemon per data directory, locked before anything is read,
	// recovered or written; a full file fails its write instead of killing
	// the daemon.
	signal.Ignore(syscall.SIGXFSZ)
	lock, err := lockDataDir(cfg.dataDir)
	if err != nil {
		return err
	}
	defer lock.release()
	if err := privateDataDir(cfg.dataDir); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	metrics, err := runtime.NewMetrics(reg)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	db, err := sqlite.Open(ctx, sqlite.Config{
		Path:          filepath.Join(cfg.dataDir, sqlite.FileName),
		Synchronous:   cfg.synchronous,
		Logger:        logger,
		ObserveCommit: metrics.ObserveStoreCommit,
	})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer func() {
		if err := db.Close(context.Background()); err != nil {
			logger.Error("close store", "error", err)
		}
	}()

	// The pre-deploy check comes before anything can write (Avro Value
	// protocol: pre-deploy check).
	report, err := preflight.Run(ctx, db, preflight.Config{})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	if !report.OK() {
		if cfg.logFormat == "json" {
			findings := make([]string, len(report.Findings))
			for i, f := range report.Findings {
				findings[i] = f.String()
			}
			logger.Error("preflight blocked: stored payloads are not Avro Value v1 frames; nothing was changed (see weft preflight)",
				"total", report.Total, "findings", findings)
		} else {
			_ = report.WriteText(stderr)
		}
		return exitError{code: 1}
	}

	files, err := blob.New(blob.Config{Dir: cfg.dataDir})
	if err != nil {
		return fmt.Errorf("module files: %w", err)
	}
	hcfg := host.Config{
		CacheDir:     firstNonEmpty(cfg.cacheDir, filepath.Join(cfg.dataDir, cacheDir)),
		Logger:       logger.Named("host"),
		MemoryLimit:  cfg.admission.memoryLimit,
		ModuleLimits: cfg.admission.limits,
		Logs:         cfg.pluginLogs,
	}
	compiler, err := newChildCompiler(ctx, hcfg, cfg.admission, logger.Named("compile"))
	if err != nil {
		return err
	}
	hcfg.Precompile, hcfg.Admitted = compiler.Precompile, compiler.Admitted
	h, err := host.New(hcfg)
	if err != nil {
		return fmt.Errorf("plugin host: %w", err)
	}
	defer func() {
		if err := h.Close(context.Background()); err != nil {
			logger.Error("close plugin host", "error", err)
		}
	}()

	engine, err := runtime.New(runtime.Config{
		Store:     db,
		Executor:  executor{host: h},
		Modules:   files,
		Logger:    logger,
		Metrics:   metrics,
		Workers:   cfg.workers,
		Retention: cfg.retention,
		DefaultRetry: &store.RetryPolicy{
			InitialInterval:    runtime.DefaultActivityRetry.InitialInterval,
			BackoffCoefficient: runtime.DefaultActivityRetry.BackoffCoefficient,
			MaximumAttempts:    cfg.retryAttempts,
		},

		DefaultMemoryLimit:    cfg.admission.memoryLimit,
		ClientWorkers:         cfg.clientWorkers,
		MemoryBudget:          cfg.memoryBudget,
		ClientMemoryLimit:     cfg.clientMemoryLimit,
		MaxPendingSignals:     cfg.maxPendingSignals,
		MaxPendingSignalBytes: cfg.maxPendingSigBytes,

		StoreRetry: cfg.storeRetry,

		ProgressInterval: cfg.progressInterval,
	})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	token, created, err := engine.Bootstrap(ctx, cfg.dataDir)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if created && token != "" {
		logger.Info("created the admin client", "token_file", filepath.Join(cfg.dataDir, adminTokenFile))
	}
	if err := engine.Open(ctx); err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	api, err := httpapi.New(httpapi.Config{
		Engine: engine, Logger: logger.Named("http"), Metrics: reg,
		MaxPageBytes: cfg.maxPageBytes, MaxProjectionBytes: cfg.maxProjectionBytes, MaxReadBytes: cfg.maxReadBytes,
	})
	if err != nil {
		return fmt.Errorf("http api: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), shutdownD)
		defer cancel()
		_ = engine.Close(closeCtx)
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	srv.RegisterOnShutdown(api.CloseStreams) // SSE streams end when shutdown begins
	addr := ln.Addr().String()
	if err := os.WriteFile(filepath.Join(cfg.dataDir, addrFile), []byte(addr+"\n"), 0o600); err != nil {
		logger.Warn("write address file", "error", err)
	}
	if err := lock.setAddr(addr); err != nil {
		logger.Warn("write lock file", "error", err)
	}
	logger.Info("serving", "addr", addr, "data", cfg.dataDir)
	fmt.Fprintf(stdout, "weft listening on http://%s\n", addr)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}

	// Graceful shutdown: start nothing new, let running calls finish for
	// the grace period while the API still answers, then stop accepting,
	// interrupt what still runs (its tasks recover by their policy), and
	// be gone within shutdownD.
	logger.Info("shutting down", "grace", cfg.grace)
	engine.Drain(context.Background(), cfg.grace)
	closeCtx, cancel := context.WithTimeout(context.Background(), shutdownD)
	defer cancel()
	engineDone := make(chan error, 1)
	go func() { engineDone <- engine.Close(closeCtx) }()
	if serr := srv.Shutdown(closeCtx); serr != nil {
		_ = srv.Close()
	}
	if cerr := <-engineDone; cerr != nil {
		logger.Error("close engine", "error", cerr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
