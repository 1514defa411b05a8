package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

const serviceColumns = "service_id, retention_ms, idempotency_ttl_ms, created_at, updated_at"

func scanService(s scanner) (*store.ServiceConfig, error) {
	var (
		c              store.ServiceConfig
		retention, ttl int64
		cre, upd       time.Time
	)
	if err := s.Scan(&c.ID, &retention, &ttl, &cre, &upd); err != nil {
		return nil, err
	}
	c.RetentionPeriod = time.Duration(retention) * time.Millisecond
	c.IdempotencyKeyTTL = time.Duration(ttl) * time.Millisecond
	c.CreatedAt, c.UpdatedAt = fromTS(cre), fromTS(upd)
	return &c, nil
}

// getService reads the service row, locked when lock is set.
func (t *tx) getService(lock bool) (*store.ServiceConfig, error) {
	q := "SELECT " + serviceColumns + " FROM service_config WHERE id = 1"
	if lock {
		q += " FOR UPDATE"
	}
	c, err := scanService(t.queryRow(q))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, err
}

// ServiceInit implements store.Store. The identity row is inserted with ON
// CONFLICT DO NOTHING: of hosts starting at once against a new database,
// exactly one creates the identity (and the admin client); the others read
// it.
func (db *DB) ServiceInit(ctx context.Context, p *store.ServiceInitParams) (*store.ServiceInitResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("init service: %w", err)
	}
	var res *store.ServiceInitResult
	err := db.write(ctx, func(t *tx) error {
		n := now()
		c := backend.NewServiceConfig(p, n)
		inserted, err := t.affected("INSERT INTO service_config (id, "+serviceColumns+") VALUES (1, $1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
			c.ID, c.RetentionPeriod.Milliseconds(), c.IdempotencyKeyTTL.Milliseconds(), n, n)
		if err != nil {
			return err
		}
		if inserted == 0 {
			if c, err = t.getService(false); err != nil {
				return err
			}
			res = &store.ServiceInitResult{Config: c}
			return nil
		}
		res = &store.ServiceInitResult{Config: c, Created: true}
		if p.AdminClient != nil {
			if res.AdminClient, err = t.insertClient(p.AdminClient, n); err != nil {
				return fmt.Errorf("admin client: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("init service: %w", err)
	}
	return res, nil
}

// ServiceGet implements store.Store.
func (db *DB) ServiceGet(ctx context.Context) (*store.ServiceConfig, error) {
	row, err := db.queryRow(ctx, "SELECT "+serviceColumns+" FROM service_config WHERE id = 1")
	if err != nil {
		return nil, fmt.Errorf("get service: %w", err)
	}
	c, err := scanService(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get service: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get service: %w", db.closedOr(err))
	}
	return c, nil
}

// ServiceUpdate implements store.Store.
func (db *DB) ServiceUpdate(ctx context.Context, p *store.ServiceUpdateParams) (*store.ServiceConfig, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update service: %w", err)
	}
	var c *store.ServiceConfig
	err := db.write(ctx, func(t *tx) error {
		var err error
		if c, err = t.getService(true); err != nil {
			return err
		}
		if p.RetentionPeriod > 0 {
			c.RetentionPeriod = p.RetentionPeriod.Truncate(time.Millisecond)
		}
		if p.IdempotencyKeyTTL > 0 {
			c.IdempotencyKeyTTL = p.IdempotencyKeyTTL.Truncate(time.Millisecond)
		}
		c.UpdatedAt = now()
		_, err = t.exec("UPDATE service_config SET retention_ms = $1, idempotency_ttl_ms = $2, updated_at = $3 WHERE id = 1",
			c.RetentionPeriod.Milliseconds(), c.IdempotencyKeyTTL.Milliseconds(), c.UpdatedAt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update service: %w", err)
	}
	return c, nil
}
