package store

import "time"

// ServiceConfig is the service identity and configuration (persistence
// §11.1: service_config).
type ServiceConfig struct {
	// ID is the service identity, "svc_" followed by a ULID.
	ID string
	// CreatedAt is the first start.
	// Millisecond precision, UTC.
	CreatedAt time.Time
	// UpdatedAt is the last change.
	// Millisecond precision, UTC.
	UpdatedAt time.Time
	// RetentionPeriod is how long finished tasks are kept.
	RetentionPeriod time.Duration
	// IdempotencyKeyTTL is how long idempotency keys are kept.
	IdempotencyKeyTTL time.Duration
}

// The defaults ServiceInit applies.
const (
	DefaultRetentionPeriod   = 7 * 24 * time.Hour
	DefaultIdempotencyKeyTTL = 24 * time.Hour
)

// ServiceInitParams are the params of Store.ServiceInit.
type ServiceInitParams struct {
	// RetentionPeriod is stored on first start. Defaults to
	// DefaultRetentionPeriod (7 days).
	RetentionPeriod time.Duration
	// IdempotencyKeyTTL is stored on first start. Defaults to
	// DefaultIdempotencyKeyTTL (24 hours).
	IdempotencyKeyTTL time.Duration
	// AdminClient is created with the identity on first start. Defaults to
	// nil (none).
	AdminClient *ClientInsertParams
}

// ServiceInitResult is the answer of Store.ServiceInit.
type ServiceInitResult struct {
	// Config is the stored identity and configuration.
	Config *ServiceConfig
	// Created reports a first start.
	Created bool
	// AdminClient is the admin client created on first start, or nil.
	AdminClient *Client
}

// ServiceUpdateParams are the params of Store.ServiceUpdate. A zero field is
// left unchanged.
type ServiceUpdateParams struct {
	// RetentionPeriod replaces the retention period. Defaults to unchanged.
	RetentionPeriod time.Duration
	// IdempotencyKeyTTL replaces the key lifetime. Defaults to unchanged.
	IdempotencyKeyTTL time.Duration
}
