package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
)

// Defaults of the data directory and the listen address (BRIEF §3.3).
const (
	DefaultDataDir = "./weft-data"
	DefaultAddr    = "127.0.0.1:7700"
)

// Files and folders of the data directory.
const (
	// AdminTokenFile holds the admin client's token (mode 0600).
	AdminTokenFile = "admin.token"
	// AddrFile holds the address the daemon listens on.
	AddrFile = "weft.addr"
	// LockFile is the file the daemon holds an exclusive flock on while
	// it runs (docs/operations.md, "Data directory, logs and store
	// errors").
	LockFile = "weft.lock"
	// CacheDirName is the compilation cache, unless Config.CacheDir names
	// another.
	CacheDirName = "cache"
	// AdmittedDir, in the cache, holds a marker per module digest a
	// compile child admitted.
	AdmittedDir = admittedDir
)

// StopTimeout bounds the stop of the engine and the HTTP server after the
// grace period: the daemon is gone within it.
const StopTimeout = 10 * time.Second

// Config is the daemon's configuration: the flags of `weft serve`
// (RegisterFlags), translated into the components' configurations by Run.
// DefaultConfig holds the defaults; for the fields whose default is 0 the
// component's own default applies.
type Config struct {
	// DataDir holds the database, module files, compilation cache and
	// admin token. Defaults to DefaultDataDir.
	DataDir string
	// Store names a PostgreSQL database (postgres://… or postgresql://…)
	// that several daemons may share; empty is SQLite under DataDir.
	// Defaults to $WEFT_STORE.
	Store string
	// ModulesDir holds the module files, content-addressed; daemons that
	// share a database share it. Defaults to DATA/modules.
	ModulesDir string
	// StoreMaxConns caps the PostgreSQL connection pool; the daemon opens
	// one connection more, to listen for the other hosts' notifications.
	// Defaults to DefaultStoreMaxConns.
	StoreMaxConns int
	// HostID names this daemon in the leases of the tasks it runs (see
	// store.ValidHost); empty lets the engine generate one at each start.
	HostID string
	// LeaseTTL is the lease of the tasks this daemon claims; it renews
	// them every third of it. 0 is store.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Addr is the HTTP listen address HOST:PORT; port 0 picks a free one.
	// Defaults to DefaultAddr.
	Addr string
	// LogFormat is text or json. Defaults to text.
	LogFormat string
	// LogLevel is trace, debug, info, warn or error. Defaults to info.
	LogLevel string
	// Workers is the number of tasks run at once; 0 is the engine's
	// default (128).
	Workers int
	// Synchronous is SQLite's synchronous setting, FULL or NORMAL.
	// Defaults to FULL.
	Synchronous string
	// Retention is how long finished tasks are kept; 0 is the stored
	// setting (7 days).
	Retention time.Duration
	// Grace is how long a graceful stop lets running plugin calls finish.
	// Defaults to 10 s.
	Grace time.Duration
	// RetryAttempts is the attempts of the default retry policy of
	// activity tasks. Defaults to runtime.DefaultActivityRetry's.
	RetryAttempts int

	// Memory and fairness (docs/operations.md); 0 is the engine's or the
	// HTTP API's default.
	ClientWorkers         int
	MemoryBudget          int64
	ClientMemoryLimit     int64
	MaxPendingSignals     int
	MaxPendingSignalBytes int64
	MaxQueries            int
	// MaxSchedulesPerClient bounds the schedules of one client.
	MaxSchedulesPerClient int
	QueryTimeout          time.Duration
	MaxHistoryEvents      int64
	MaxPageBytes          int64
	MaxProjectionBytes    int64
	MaxReadBytes          int64

	// PluginLogs bounds the plugins' lines in the daemon's log. Defaults
	// to the host's defaults.
	PluginLogs host.LogLimits
	// StoreRetry bounds the writes kept while the store refuses them.
	// Defaults to the engine's defaults.
	StoreRetry runtime.StoreRetry
	// Admission is module admission.
	Admission Admission
	// CacheDir is the compilation cache, which daemons of one weft
	// version may share. Defaults to DATA/cache.
	CacheDir string
	// ProgressInterval spaces the task.progress events of one call.
	// Defaults to runtime.DefaultProgressInterval.
	ProgressInterval time.Duration

	// CompileBin is the executable run as the compile child, as
	// `CompileBin internal compile --job JOB` (RunCompileChild). Defaults
	// to this executable; tests and benchmarks that run the daemon in
	// their own process name the weft binary.
	CompileBin string
}

// DefaultStoreMaxConns is the default of --store-max-conns: three hosts
// with their listening connection use 3×(DefaultStoreMaxConns+1), far
// within PostgreSQL's max_connections of 100.
const DefaultStoreMaxConns = 10

// EnvStore is the environment variable that names the store when --store
// is not given.
const EnvStore = "WEFT_STORE"

// DefaultConfig returns the configuration of `weft serve` without flags.
func DefaultConfig() Config {
	var cfg Config
	RegisterFlags(pflag.NewFlagSet("serve", pflag.ContinueOnError), &cfg)
	cfg.Store = os.Getenv(EnvStore)
	return cfg
}

// ParseFlags returns the configuration of `weft serve args`, validated.
func ParseFlags(args []string) (Config, error) {
	var cfg Config
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.Usage = func() {}
	RegisterFlags(f, &cfg)
	if err := f.Parse(args); err != nil {
		return cfg, err
	}
	if f.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", f.Args())
	}
	return cfg, Complete(f, &cfg)
}

// Complete finishes the configuration cfg that f, defined by RegisterFlags,
// parsed: --store defaults to $WEFT_STORE, then Validate.
func Complete(f *pflag.FlagSet, cfg *Config) error {
	if !f.Changed("store") {
		cfg.Store = os.Getenv(EnvStore)
	}
	if cfg.Store == "" && f.Changed("store-max-conns") {
		return errors.New("--store-max-conns applies to a PostgreSQL --store only")
	}
	return cfg.Validate()
}

// Validate checks what the flags cannot.
func (cfg *Config) Validate() error {
	if err := cfg.validateStore(); err != nil {
		return err
	}
	if cfg.HostID != "" && !store.ValidHost(cfg.HostID) {
		return fmt.Errorf("--host-id %q: want 1 to 128 letters, digits, '.', '_', ':', '@' or '-', starting with a letter or digit", cfg.HostID)
	}
	if cfg.LeaseTTL < 0 {
		return errors.New("--lease-ttl must not be negative")
	}
	if cfg.LeaseTTL > 0 && cfg.LeaseTTL < MinLeaseTTL {
		return fmt.Errorf("--lease-ttl must be at least %s (the lease is renewed every third of it)", MinLeaseTTL)
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("--log-format must be text or json, not %q", cfg.LogFormat)
	}
	if cfg.Grace < 0 {
		return errors.New("--shutdown-grace must not be negative")
	}
	if cfg.MaxQueries < 0 {
		return errors.New("--max-queries must not be negative")
	}
	if cfg.MaxSchedulesPerClient < 0 {
		return errors.New("--max-schedules-per-client must not be negative")
	}
	if cfg.MaxHistoryEvents < 0 {
		return errors.New("--max-history-events must not be negative")
	}
	if cfg.QueryTimeout < 0 {
		return errors.New("--query-timeout must not be negative")
	}
	if cfg.RetryAttempts < 1 {
		return errors.New("--default-retry-attempts must be at least 1")
	}
	return cfg.Admission.validate()
}

// maxStoreConns bounds --store-max-conns: far above what a server
// accepts from one client.
const maxStoreConns = 10000

// MinLeaseTTL is the shortest --lease-ttl: the lease is renewed every
// third of it, and each renewal is a round trip to the database.
const MinLeaseTTL = time.Second

// validateStore checks --store and the flags that only apply to it.
func (cfg *Config) validateStore() error {
	if cfg.Store == "" {
		return nil
	}
	if !IsPostgres(cfg.Store) {
		return errors.New("--store must be a PostgreSQL URL (postgres://…); leave it out for SQLite under --data")
	}
	if err := postgres.CheckDSN(cfg.Store); err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	if cfg.StoreMaxConns < 1 || cfg.StoreMaxConns > maxStoreConns {
		return fmt.Errorf("--store-max-conns must be between 1 and %d", maxStoreConns)
	}
	return nil
}

// RegisterFlags defines the flags of `weft serve` on f, into cfg, with the
// defaults of DefaultConfig.
func RegisterFlags(f *pflag.FlagSet, cfg *Config) {
	f.StringVar(&cfg.DataDir, "data", DefaultDataDir, "data directory (database, module files, compilation cache, admin token)")
	f.StringVar(&cfg.Store, "store", "", "PostgreSQL database several daemons share, postgres://user@host:port/db (default $"+EnvStore+"; unset: SQLite under --data)")
	f.StringVar(&cfg.ModulesDir, "modules", "", "module files directory, shared by the daemons of one database (default DATA/modules)")
	f.IntVar(&cfg.StoreMaxConns, "store-max-conns", DefaultStoreMaxConns, "PostgreSQL connections of this daemon's pool; it opens one more to listen for the other hosts")
	f.StringVar(&cfg.HostID, "host-id", "", "this daemon's name in the leases of the tasks it runs (default: generated at each start)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "lease of the tasks this daemon runs, renewed every third of it; a dead host's tasks are taken over once it ran out (default 20s)")
	f.StringVar(&cfg.Addr, "addr", DefaultAddr, "HTTP listen address HOST:PORT (port 0 picks a free one)")
	f.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "log level: trace, debug, info, warn or error")
	f.IntVar(&cfg.Workers, "workers", 0, "tasks run at once (default 128)")
	f.StringVar(&cfg.Synchronous, "synchronous", "FULL", "SQLite synchronous setting: FULL (every commit survives power loss) or NORMAL")
	f.DurationVar(&cfg.Retention, "retention", 0, "how long finished tasks are kept (default: the stored setting, 7 days)")
	f.DurationVar(&cfg.Grace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long running plugin calls may go on before they are interrupted")
	f.IntVar(&cfg.RetryAttempts, "default-retry-attempts", runtime.DefaultActivityRetry.MaximumAttempts,
		"attempts of an activity task created without a retry policy (1: no retry; waits start at 1s and double)")
	f.IntVar(&cfg.ClientWorkers, "client-workers", 0, "most workers one client's tasks hold at once (default: workers less max(1, workers/8))")
	SizeVar(f, &cfg.MemoryBudget, "memory-budget", 0, "sum of the memory limits of the plugin calls in flight, in bytes (default 4GiB)")
	SizeVar(f, &cfg.ClientMemoryLimit, "client-memory-limit", 0, "largest memory_limit_bytes a non-admin client may ask for (default 256MiB)")
	f.IntVar(&cfg.MaxPendingSignals, "max-pending-signals", 0, "signals a workflow may hold unconsumed (default 1000)")
	SizeVar(f, &cfg.MaxPendingSignalBytes, "max-pending-signal-bytes", 0, "bytes of signals a workflow may hold unconsumed (default 16MiB)")
	f.IntVar(&cfg.MaxSchedulesPerClient, "max-schedules-per-client", runtime.DefaultMaxSchedulesPerClient, "schedules one client may have; one more is refused with 409 schedule_limit_exceeded")
	f.IntVar(&cfg.MaxQueries, "max-queries", runtime.DefaultMaxQueries, "workflow queries answered at once; one more waits 0.5s for a slot, then gets 429")
	f.Int64Var(&cfg.MaxHistoryEvents, "max-history-events", runtime.DefaultMaxHistoryEvents, "events a workflow's log may hold; a run past it fails the workflow with history_limit_exceeded (continue as new before)")
	f.DurationVar(&cfg.QueryTimeout, "query-timeout", runtime.DefaultQueryTimeout, "longest a workflow query may take to replay and answer")
	SizeVar(f, &cfg.MaxPageBytes, "max-page-bytes", 0, "a list page ends early past this encoded size (default 4MiB)")
	SizeVar(f, &cfg.MaxProjectionBytes, "max-projection-bytes", 0, "largest stored payload shown with its typed projection (default 1MiB)")
	SizeVar(f, &cfg.MaxReadBytes, "max-read-bytes", 0, "stored payload bytes single reads write out at once (default 64MiB)")
	f.Float64Var(&cfg.PluginLogs.Rate, "plugin-log-rate", host.DefaultLogRate, "plugin log lines per second each module may write to the daemon's log")
	f.IntVar(&cfg.PluginLogs.Burst, "plugin-log-burst", host.DefaultLogBurst, "plugin log lines each module may write at once, above --plugin-log-rate")
	f.Float64Var(&cfg.PluginLogs.ByteRate, "plugin-log-bytes", host.DefaultLogByteRate, "plugin log bytes per second each module may write to the daemon's log")
	SizeVar(f, &cfg.PluginLogs.ByteBurst, "plugin-log-burst-bytes", host.DefaultLogByteBurst, "plugin log bytes each module may write at once, above --plugin-log-bytes")
	f.IntVar(&cfg.PluginLogs.CallLines, "plugin-log-call-lines", host.DefaultLogCallLines, "most plugin log lines one call (or one _initialize) writes to the daemon's log")
	SizeVar(f, &cfg.PluginLogs.MaxLine, "plugin-log-max-line", host.DefaultLogMaxLine, "longest plugin log line in the daemon's log, in bytes; longer ones are cut")
	f.IntVar(&cfg.StoreRetry.MaxTasks, "store-retry-tasks", runtime.DefaultStoreRetryTasks, "most task writes kept in memory, and written again, while the store refuses writes")
	SizeVar(f, &cfg.StoreRetry.MaxBytes, "store-retry-bytes", runtime.DefaultStoreRetryBytes, "most bytes of outputs, errors and events those writes hold")
	addAdmissionFlags(f, &cfg.Admission)
	f.StringVar(&cfg.CacheDir, "cache", "", "compilation cache directory, which daemons of one weft version may share (default DATA/cache)")
	f.DurationVar(&cfg.ProgressInterval, "progress-interval", runtime.DefaultProgressInterval, "shortest time between two task.progress events of one plugin call; reports in between coalesce")
}

// IsPostgres reports whether store names a PostgreSQL database.
func IsPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// modulesDir is the module files directory of cfg.
func modulesDir(cfg Config) string {
	if cfg.ModulesDir != "" {
		return cfg.ModulesDir
	}
	return filepath.Join(cfg.DataDir, "modules")
}
