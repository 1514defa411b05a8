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
	admission   admissionConfig
}

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the weft daemon",
		Long: "serve runs the daemon: it checks every stored payload (preflight), recovers\n" +
			"unfinished tasks by their on_restart policy, and serves the HTTP API.\n" +
			"On first start it creates DATA/admin.token (mode 0600). SIGTERM or Ctrl-C\n" +
			"shut it down gracefully within 10 s.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch cfg.logFormat {
			case "text", "json":
			default:
				return usageError{fmt.Errorf("--log-format must be text or json, not %q", cfg.logFormat)}
			}
			if err := cfg.admission.validate(); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
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
	addAdmissionFlags(cmd, &cfg.admission)
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
	defer db.Close(context.Background())

	// The pre-deploy check comes before anything can write (Avro Value
	// protocol: pre-deploy check).
	report, err := preflight.Run(ctx, db, preflight.Config{})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	if !report.OK() {
		_ = report.WriteText(stderr)
		return exitError{code: 1}
	}

	files, err := blob.New(blob.Config{Dir: cfg.dataDir})
	if err != nil {
		return fmt.Errorf("module files: %w", err)
	}
	hcfg := host.Config{
		CacheDir:     filepath.Join(cfg.dataDir, cacheDir),
		Logger:       logger.Named("host"),
		MemoryLimit:  cfg.admission.memoryLimit,
		ModuleLimits: cfg.admission.limits,
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
	defer h.Close(context.Background())

	engine, err := runtime.New(runtime.Config{
		Store:     db,
		Executor:  executor{host: h},
		Modules:   files,
		Logger:    logger,
		Metrics:   metrics,
		Workers:   cfg.workers,
		Retention: cfg.retention,
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
	api, err := httpapi.New(httpapi.Config{Engine: engine, Logger: logger.Named("http"), Metrics: reg})
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
	addr := ln.Addr().String()
	if err := os.WriteFile(filepath.Join(cfg.dataDir, addrFile), []byte(addr+"\n"), 0o600); err != nil {
		logger.Warn("write address file", "error", err)
	}
	logger.Info("serving", "addr", addr, "data", cfg.dataDir)
	fmt.Fprintf(stdout, "weft listening on http://%s\n", addr)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}

	// Graceful shutdown: stop accepting, stop running tasks per their
	// policy, and be gone within shutdownD.
	logger.Info("shutting down")
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
