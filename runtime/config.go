package runtime

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/store"
)

// Config configures an Engine. The zero value of every optional field means
// its default; New fills the defaults into a private copy and never changes
// it afterwards.
type Config struct {
	// Store is where every task, event, client and key lives. Required.
	Store store.Store
	// Executor runs plugin functions (the wazero host, adapted by the
	// daemon). Required.
	Executor Executor
	// Modules holds the module files, content-addressed by digest.
	// Required.
	Modules ModuleFiles
	// Logger receives the engine's logs, named "runtime". Defaults to a null
	// logger.
	Logger hclog.Logger
	// Metrics receives the engine's measurements; see NewMetrics. Defaults to
	// nil (no metrics).
	Metrics *Metrics

	// Workers is the number of tasks run at once. Tasks mostly wait on
	// durable commits, and more tasks in flight mean more writes per group
	// commit, so this is well above the number of cores; CPU-bound plugins
	// are bounded by the Executor. Defaults to 128.
	Workers int
	// PollInterval is the safety net of the scheduler: when idle, it looks
	// for claimable tasks at least this often even without a wake-up. Task
	// creation, retries and signals wake it directly, so this is not the
	// path that starts tasks. Defaults to 5s.
	PollInterval time.Duration
	// ShutdownTimeout bounds Close when its context has no earlier
	// deadline. Defaults to 10s.
	ShutdownTimeout time.Duration

	// Retention is how long finished tasks are kept, with their events and
	// responses (persistence §11.2). Defaults to the period stored in the
	// service configuration (7 days unless changed).
	Retention time.Duration
	// RetentionInterval is the time between two runs of the retention
	// loop. Defaults to 1 minute.
	RetentionInterval time.Duration
	// RetentionBatch caps the rows one retention transaction deletes, so the
	// loop never holds the writer for long. Defaults to 500.
	RetentionBatch int

	// IdempotencyTTL is how long idempotency keys are kept. Defaults to the
	// period stored in the service configuration (24 hours unless changed).
	IdempotencyTTL time.Duration

	// PairingTTL is the lifetime of a pairing code when the caller names
	// none. Defaults to 10 minutes.
	PairingTTL time.Duration
	// PairingRate is how many pairing attempts (redemptions) are accepted
	// per minute across all callers, with a burst of the same size. Defaults
	// to 10.
	PairingRate int
	// StoreRetry bounds the task writes kept in memory, and written again,
	// when the store refuses them; see StoreRetry for the defaults.
	StoreRetry StoreRetry

	// Now is the clock of expiries (pairing codes, idempotency keys,
	// retention) and retry schedules. Defaults to time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultWorkers           = 128
	DefaultPollInterval      = 5 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultRetentionInterval = time.Minute
	DefaultRetentionBatch    = 500
	DefaultPairingTTL        = 10 * time.Minute
	DefaultPairingRate       = 10
	// MaxPairingTTL is the longest lifetime a pairing code may have.
	MaxPairingTTL = 24 * time.Hour
)

// withDefaults validates c and returns it with every default filled in.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Store == nil:
		return c, errors.New("runtime: Config.Store is required")
	case c.Executor == nil:
		return c, errors.New("runtime: Config.Executor is required")
	case c.Modules == nil:
		return c, errors.New("runtime: Config.Modules is required")
	case c.Workers < 0, c.PollInterval < 0, c.ShutdownTimeout < 0, c.Retention < 0,
		c.RetentionInterval < 0, c.RetentionBatch < 0, c.IdempotencyTTL < 0,
		c.PairingTTL < 0, c.PairingRate < 0:
		return c, errors.New("runtime: negative Config value")
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = DefaultRetentionInterval
	}
	if c.RetentionBatch == 0 {
		c.RetentionBatch = DefaultRetentionBatch
	}
	if c.PairingTTL == 0 {
		c.PairingTTL = DefaultPairingTTL
	}
	if c.PairingTTL > MaxPairingTTL {
		c.PairingTTL = MaxPairingTTL
	}
	if c.PairingRate == 0 {
		c.PairingRate = DefaultPairingRate
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	var err error
	if c.StoreRetry, err = c.StoreRetry.withDefaults(); err != nil {
		return c, err
	}
	return c, nil
}
