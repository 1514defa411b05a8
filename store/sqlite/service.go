package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

const serviceColumns = "service_id, retention_ms, idempotency_ttl_ms, created_at, updated_at"

func scanService(s scanner) (*store.ServiceConfig, error) {
	var (
		c                        store.ServiceConfig
		retention, ttl, cre, upd int64
	)
	if err := s.Scan(&c.ID, &retention, &ttl, &cre, &upd); err != nil {
		return nil, err
	}
	c.RetentionPeriod = time.Duration(retention) * time.Millisecond
	c.IdempotencyKeyTTL = time.Duration(ttl) * time.Millisecond
	c.CreatedAt, c.UpdatedAt = fromMS(cre), fromMS(upd)
	return &c, nil
}

func (t *tx) getService() (*store.ServiceConfig, error) {
	row, err := t.queryRow("SELECT " + serviceColumns + " FROM service_config WHERE id = 1")
	if err != nil {
		return nil, err
	}
	c, err := scanService(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, classify(err)
}

// ServiceInit implements store.Store.
func (db *DB) ServiceInit(ctx context.Context, p *store.ServiceInitParams) (*store.ServiceInitResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("init service: %w", err)
	}
	var res *store.ServiceInitResult
	err := db.write(ctx, func(t *tx) error {
		c, err := t.getService()
		if err == nil {
			res = &store.ServiceInitResult{Config: c}
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n := now()
		c = backend.NewServiceConfig(p, n)
		if _, err := t.exec("INSERT INTO service_config (id, "+serviceColumns+") VALUES (1, ?, ?, ?, ?, ?)",
			c.ID, c.RetentionPeriod.Milliseconds(), c.IdempotencyKeyTTL.Milliseconds(), ms(n), ms(n)); err != nil {
			return err
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
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get service: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get service: %w", classify(err))
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
		if c, err = t.getService(); err != nil {
			return err
		}
		if p.RetentionPeriod > 0 {
			c.RetentionPeriod = p.RetentionPeriod.Truncate(time.Millisecond)
		}
		if p.IdempotencyKeyTTL > 0 {
			c.IdempotencyKeyTTL = p.IdempotencyKeyTTL.Truncate(time.Millisecond)
		}
		c.UpdatedAt = now()
		_, err = t.exec("UPDATE service_config SET retention_ms = ?, idempotency_ttl_ms = ?, updated_at = ? WHERE id = 1",
			c.RetentionPeriod.Milliseconds(), c.IdempotencyKeyTTL.Milliseconds(), ms(c.UpdatedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update service: %w", err)
	}
	return c, nil
}
