package access

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/store"
)

// Config configures a Service. The zero value of every optional field means
// its default.
type Config struct {
	// Store keeps the clients, pairing codes and idempotency keys. Required.
	Store store.Store
	// Logger receives the service's logs, named "access". Defaults to a null
	// logger.
	Logger hclog.Logger

	// PairingTTL is the lifetime of a pairing code when the caller names
	// none, at most MaxPairingTTL. Defaults to 10 minutes.
	PairingTTL time.Duration
	// PairingRate is how many pairing attempts (redemptions) are accepted
	// per minute across all callers, with a burst of the same size. Defaults
	// to 10.
	PairingRate int
	// IdempotencyTTL is how long idempotency keys are kept. Defaults to the
	// period stored in the service configuration (24 hours unless changed).
	IdempotencyTTL time.Duration
	// MaxMemoryLimit is the largest ceiling on task memory limits that
	// ClientUpdate accepts: the engine's runtime.MaxMemoryLimit. Defaults to
	// DefaultMaxMemoryLimit.
	MaxMemoryLimit int64

	// Now is the clock of expiries (pairing codes, idempotency keys) and of
	// the pairing rate limit. Defaults to time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultPairingTTL  = 10 * time.Minute
	DefaultPairingRate = 10
	// MaxPairingTTL is the longest lifetime a pairing code may have.
	MaxPairingTTL = 24 * time.Hour
	// DefaultMaxMemoryLimit is the default of Config.MaxMemoryLimit: 4 GiB,
	// the engine's bound on a task's memory limit.
	DefaultMaxMemoryLimit = 4 << 30
)

// Service is access control over a store: tokens, clients, pairing and
// idempotency keys. Create it with New; all methods are safe for concurrent
// use. One process holds one Service per store: the idempotency keys its
// requests hold are known to it alone.
type Service struct {
	cfg     Config
	log     hclog.Logger
	store   store.Store
	pairing *rateLimiter
	keys    heldKeys
	// svc caches the service configuration (the idempotency key period).
	svc atomic.Pointer[cachedConfig]
}

// cachedConfig is the service configuration as read at a time.
type cachedConfig struct {
	c  *store.ServiceConfig
	at time.Time
}

// configRefresh is how long the service configuration is cached, as long
// as the engine's retention loop keeps its own copy.
const configRefresh = time.Minute

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("access: Config.Store is required")
	case cfg.PairingTTL < 0, cfg.PairingRate < 0, cfg.IdempotencyTTL < 0, cfg.MaxMemoryLimit < 0:
		return nil, errors.New("access: negative Config value")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.PairingTTL == 0 {
		cfg.PairingTTL = DefaultPairingTTL
	}
	cfg.PairingTTL = min(cfg.PairingTTL, MaxPairingTTL)
	if cfg.PairingRate == 0 {
		cfg.PairingRate = DefaultPairingRate
	}
	if cfg.MaxMemoryLimit == 0 {
		cfg.MaxMemoryLimit = DefaultMaxMemoryLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{
		cfg:     cfg,
		log:     cfg.Logger.Named("access"),
		store:   cfg.Store,
		pairing: newRateLimiter(cfg.PairingRate, time.Minute),
	}, nil
}

// now returns the service's clock.
func (s *Service) now() time.Time { return s.cfg.Now() }

// serviceConfig returns the service configuration, cached for
// configRefresh so that changes are picked up; nil before the service
// exists.
func (s *Service) serviceConfig(ctx context.Context) *store.ServiceConfig {
	if c := s.svc.Load(); c != nil && time.Since(c.at) < configRefresh {
		return c.c
	}
	c, err := s.store.ServiceGet(ctx)
	if err != nil {
		return nil
	}
	s.svc.Store(&cachedConfig{c: c, at: time.Now()})
	return c
}
