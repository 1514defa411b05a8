package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
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
			if err := cfg.validate(); err != nil {
				return err
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
			m := NewMain(cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
			err := m.Run(ctx)
			if err == nil {
				select {
				case <-ctx.Done():
				case <-m.Done():
				}
				_ = m.Close(context.Background()) // each close error is logged
				err = m.Wait()
			}
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
	serveFlags(cmd, &cfg)
	return cmd
}

// parseServeFlags is the configuration of `weft serve args`, validated;
// a bad flag is a usageError.
func parseServeFlags(args []string) (serveConfig, error) {
	var cfg serveConfig
	cmd := &cobra.Command{Use: "serve"}
	serveFlags(cmd, &cfg)
	if err := cmd.ParseFlags(args); err != nil {
		return cfg, usageError{err}
	}
	if cmd.Flags().NArg() > 0 {
		return cfg, usageError{fmt.Errorf("unexpected arguments %q", cmd.Flags().Args())}
	}
	return cfg, cfg.validate()
}

// validate checks what the flags cannot; its errors are usageErrors.
func (cfg serveConfig) validate() error {
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
	return nil
}

// serveFlags defines the flags of `weft serve` on cmd, into cfg.
func serveFlags(cmd *cobra.Command, cfg *serveConfig) {
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
}
