package daemon

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
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/httpapi"
	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/runtime/preflight"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/sqlite"
)

// ErrPreflightBlocked is Run's error when the preflight check found stored
// payloads that are not Avro Value v1 frames; its report is written to
// stderr (or logged, with --log-format json) and nothing was changed.
var ErrPreflightBlocked = errors.New("preflight blocked")

// Main is the daemon: the pieces `weft serve` opens, in the order it opens
// them, and closes in reverse. Run opens everything and returns once the
// HTTP API listens; Done ends when it stops serving; Close stops the
// daemon gracefully. Tests and benchmarks run it in this process the way
// users run `weft serve`.
//
// Run is called at most once. Close may be called any number of times,
// from any goroutine, once Run has returned.
type Main struct {
	cfg            Config
	stdout, stderr io.Writer
	logger         hclog.Logger

	// bg is the context of the daemon's own background work (compile
	// children), cancelled when Close begins.
	bg     context.Context
	stopBg context.CancelFunc

	lock       *dataLock
	db         Store
	host       *host.Host
	engine     *runtime.Engine
	engineOpen bool
	srv        *http.Server
	addr       string

	done     chan struct{} // closed when the daemon stops serving (or never will)
	doneOnce sync.Once
	serveErr error // why Serve returned; read after done

	closeOnce sync.Once
	closeErr  error
}

// New returns the daemon of cfg (DefaultConfig, ParseFlags), logging to
// stderr and printing its address to stdout. It opens nothing; Run does.
func New(cfg Config, stdout, stderr io.Writer) *Main {
	return &Main{
		cfg:    cfg,
		stdout: stdout,
		stderr: stderr,
		logger: hclog.New(&hclog.LoggerOptions{
			Name:       "weft",
			Level:      hclog.LevelFromString(cfg.LogLevel),
			Output:     stderr,
			JSONFormat: cfg.LogFormat == "json",
		}),
		done: make(chan struct{}),
	}
}

// Run opens the daemon in order: the data directory's lock and file
// modes, the store, the preflight check, the compile child, the plugin
// host, the engine (bootstrap and start-up recovery) and the HTTP
// listener. It returns once the API serves. ctx bounds the opening only.
// A preflight that blocks returns ErrPreflightBlocked after writing its
// report;
// any failure closes what was opened before Run returns it.
func (m *Main) Run(ctx context.Context) error {
	if err := m.open(ctx); err != nil {
		_ = m.Close(context.Background()) // each close error is logged
		return err
	}
	return nil
}

func (m *Main) open(ctx context.Context) error {
	cfg, logger := m.cfg, m.logger
	m.bg, m.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// One daemon per data directory, locked before anything is read,
	// recovered or written; a full file fails its write instead of killing
	// the daemon.
	signal.Ignore(syscall.SIGXFSZ)
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	m.lock = lock
	if err := privateDataDir(cfg.DataDir); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	mx, err := metrics.New(reg)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	db, err := openStore(ctx, cfg, logger, mx)
	if err != nil {
		return err
	}
	m.db = db

	// The pre-deploy check comes before anything can write (Avro Value
	// protocol: pre-deploy check).
	report, err := preflight.Run(ctx, db, preflight.Config{})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	if !report.OK() {
		if cfg.LogFormat == "json" {
			findings := make([]string, len(report.Findings))
			for i, f := range report.Findings {
				findings[i] = f.String()
			}
			logger.Error("preflight blocked: stored payloads are not Avro Value v1 frames; nothing was changed (see weft preflight)",
				"total", report.Total, "findings", findings)
		} else {
			_ = report.WriteText(m.stderr)
		}
		return ErrPreflightBlocked
	}

	files, err := blob.New(blob.Config{Dir: modulesDir(cfg)})
	if err != nil {
		return fmt.Errorf("module files: %w", err)
	}
	h, err := OpenHost(m.bg, cfg, logger)
	if err != nil {
		return err
	}
	m.host = h

	hostID := cfg.HostID
	if hostID == "" {
		hostID = runtime.DefaultHost()
	}
	engine, err := runtime.New(runtime.Config{
		Host:      hostID,
		LeaseTTL:  cfg.LeaseTTL,
		Store:     db,
		Executor:  Executor(h),
		Modules:   files,
		Logger:    logger,
		Metrics:   mx,
		Workers:   cfg.Workers,
		Retention: cfg.Retention,
		DefaultRetry: &store.RetryPolicy{
			InitialInterval:    runtime.DefaultActivityRetry.InitialInterval,
			BackoffCoefficient: runtime.DefaultActivityRetry.BackoffCoefficient,
			MaximumAttempts:    cfg.RetryAttempts,
		},

		DefaultMemoryLimit:    cfg.Admission.MemoryLimit,
		ClientWorkers:         cfg.ClientWorkers,
		MemoryBudget:          cfg.MemoryBudget,
		ClientMemoryLimit:     cfg.ClientMemoryLimit,
		MaxPendingSignals:     cfg.MaxPendingSignals,
		MaxPendingSignalBytes: cfg.MaxPendingSignalBytes,
		MaxQueries:            cfg.MaxQueries,
		MaxSchedulesPerClient: cfg.MaxSchedulesPerClient,
		QueryTimeout:          cfg.QueryTimeout,
		MaxHistoryEvents:      cfg.MaxHistoryEvents,

		StoreRetry: cfg.StoreRetry,

		ProgressInterval: cfg.ProgressInterval,
	})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	m.engine = engine
	acc, err := access.New(access.Config{Store: db, Logger: logger, MaxMemoryLimit: runtime.MaxMemoryLimit})
	if err != nil {
		return fmt.Errorf("access: %w", err)
	}
	token, created, err := acc.Bootstrap(ctx, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if created && token != "" {
		logger.Info("created the admin client", "token_file", filepath.Join(cfg.DataDir, AdminTokenFile))
	}
	if err := engine.Open(ctx); err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	m.engineOpen = true
	api, err := httpapi.New(httpapi.Config{
		Engine: engine, Modules: engine.Modules(), Access: acc, Logger: logger.Named("http"), Metrics: reg, Host: hostID,
		MaxPageBytes: cfg.MaxPageBytes, MaxProjectionBytes: cfg.MaxProjectionBytes, MaxReadBytes: cfg.MaxReadBytes,
	})
	if err != nil {
		return fmt.Errorf("http api: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
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
	m.addr = ln.Addr().String()
	if err := os.WriteFile(filepath.Join(cfg.DataDir, AddrFile), []byte(m.addr+"\n"), 0o600); err != nil {
		logger.Warn("write address file", "error", err)
	}
	if err := lock.setAddr(m.addr); err != nil {
		logger.Warn("write lock file", "error", err)
	}
	logger.Info("serving", "addr", m.addr, "data", cfg.DataDir, "host", hostID, "store", storeName(cfg))
	fmt.Fprintf(m.stdout, "weft listening on http://%s\n", m.addr)

	m.srv = srv
	go func() {
		err := srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			m.serveErr = fmt.Errorf("serve: %w", err)
		}
		m.doneOnce.Do(func() { close(m.done) })
	}()
	return nil
}

// storeName names the store of cfg for the log, without a password.
func storeName(cfg Config) string {
	if cfg.Store == "" {
		return "sqlite"
	}
	return postgres.Redact(cfg.Store)
}

// cacheDir is the compilation cache of cfg.
func cacheDir(cfg Config) string {
	if cfg.CacheDir != "" {
		return cfg.CacheDir
	}
	return filepath.Join(cfg.DataDir, CacheDirName)
}

// Addr is the address the HTTP API listens on, HOST:PORT, once Run has
// returned nil.
func (m *Main) Addr() string { return m.addr }

// Done is closed when the daemon stops serving: the HTTP server failed,
// Close stopped it, or Run failed.
func (m *Main) Done() <-chan struct{} { return m.done }

// Wait blocks until Done is closed and returns why serving ended: nil when
// Close stopped it (or Run failed, which Run itself reports).
func (m *Main) Wait() error {
	<-m.done
	return m.serveErr
}

// Close stops the daemon gracefully, in the order `weft serve` always
// has: start no new task and let running plugin calls finish for the
// grace period (--shutdown-grace) while the API still answers; then close
// the engine and the HTTP server within 10 s, interrupting what still runs
// (its tasks recover by their on_restart policy at the next start); then
// close the plugin host and the store, and release the data directory's
// lock. Each close error is logged; Close returns them joined. It is
// idempotent and safe from any goroutine; ctx bounds the drain and the
// 10 s stop.
func (m *Main) Close(ctx context.Context) error {
	m.closeOnce.Do(func() { m.closeErr = m.close(ctx) })
	return m.closeErr
}

func (m *Main) close(ctx context.Context) error {
	if m.stopBg != nil {
		m.stopBg()
	}
	var errs []error
	logErr := func(msg string, err error) {
		if err != nil {
			m.logger.Error(msg, "error", err)
			errs = append(errs, fmt.Errorf("%s: %w", msg, err))
		}
	}
	switch {
	case m.srv != nil:
		m.logger.Info("shutting down", "grace", m.cfg.Grace)
		m.engine.Drain(ctx, m.cfg.Grace)
		closeCtx, cancel := context.WithTimeout(ctx, StopTimeout)
		engineDone := make(chan error, 1)
		go func() { engineDone <- m.engine.Close(closeCtx) }()
		if err := m.srv.Shutdown(closeCtx); err != nil {
			_ = m.srv.Close()
		}
		logErr("close engine", <-engineDone)
		cancel()
	case m.engineOpen:
		// Run failed after the engine opened: nothing was served.
		closeCtx, cancel := context.WithTimeout(ctx, StopTimeout)
		logErr("close engine", m.engine.Close(closeCtx))
		cancel()
	}
	if m.host != nil {
		logErr("close plugin host", m.host.Close(context.WithoutCancel(ctx)))
	}
	if m.db != nil {
		logErr("close store", m.db.Close(context.WithoutCancel(ctx)))
	}
	m.lock.release()
	if m.srv == nil {
		m.doneOnce.Do(func() { close(m.done) })
	}
	return errors.Join(errs...)
}

// OpenHost starts the plugin side of a daemon configured by cfg: the
// compile children that admit and compile modules (cfg.Admission,
// cfg.CompileBin) into the compilation cache (cfg.CacheDir, or DATA/cache)
// and the wazero host that runs them. The children stop when stop ends;
// the caller closes the host. Executor adapts it to the engine.
func OpenHost(stop context.Context, cfg Config, logger hclog.Logger) (*host.Host, error) {
	hcfg := host.Config{
		CacheDir:     cacheDir(cfg),
		Logger:       logger.Named("host"),
		MemoryLimit:  cfg.Admission.MemoryLimit,
		ModuleLimits: cfg.Admission.Limits,
		Logs:         cfg.PluginLogs,
	}
	compiler, err := newChildCompiler(stop, cfg.CompileBin, hcfg, cfg.Admission, logger.Named("compile"))
	if err != nil {
		return nil, err
	}
	hcfg.Precompile, hcfg.Admitted = compiler.Precompile, compiler.Admitted
	h, err := host.New(hcfg)
	if err != nil {
		return nil, fmt.Errorf("plugin host: %w", err)
	}
	return h, nil
}

// Store is what the daemon needs of its store: the contract, and a Close.
type Store interface {
	store.Store
	Close(ctx context.Context) error
}

// openStore opens the store of cfg: the PostgreSQL database cfg.Store
// names, or SQLite under cfg.DataDir.
func openStore(ctx context.Context, cfg Config, logger hclog.Logger, mx *metrics.Metrics) (Store, error) {
	if cfg.Store != "" {
		db, err := postgres.Open(ctx, cfg.Store, postgres.Options{
			Logger: logger, MaxConns: int32(cfg.StoreMaxConns), ObserveCommit: mx.ObserveStoreCommit,
		})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return db, nil
	}
	db, err := sqlite.Open(ctx, sqlite.Config{
		Path:          filepath.Join(cfg.DataDir, sqlite.FileName),
		Synchronous:   cfg.Synchronous,
		Logger:        logger,
		ObserveCommit: mx.ObserveStoreCommit,
	})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return db, nil
}
