package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

const clientColumns = "id, name, token_hash, scopes, created_at, revoked_at, max_memory_limit"

func scanClient(s scanner) (*store.Client, error) {
	var (
		c       store.Client
		created time.Time
		revoked *time.Time
	)
	if err := s.Scan(&c.ID, &c.Name, &c.TokenHash, &c.Scopes, &created, &revoked, &c.MaxMemoryLimit); err != nil {
		return nil, err
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	c.CreatedAt = fromTS(created)
	c.RevokedAt = fromNullTS(revoked)
	return &c, nil
}

// ClientInsert implements store.Store.
func (db *DB) ClientInsert(ctx context.Context, p *store.ClientInsertParams) (*store.Client, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert client: %w", err)
	}
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		var err error
		c, err = t.insertClient(p, now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert client: %w", err)
	}
	return c, nil
}

func (t *tx) insertClient(p *store.ClientInsertParams, n time.Time) (*store.Client, error) {
	c := &store.Client{
		ID:        store.NewID(store.ClientIDPrefix),
		Name:      p.Name,
		TokenHash: append([]byte(nil), p.TokenHash...),
		Scopes:    append([]string{}, p.Scopes...),
		CreatedAt: n,
	}
	inserted, err := t.affected(`INSERT INTO clients (id, name, token_hash, scopes, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (token_hash) DO NOTHING`, c.ID, c.Name, c.TokenHash, c.Scopes, n)
	if err != nil {
		return nil, err
	}
	if inserted == 0 {
		return nil, fmt.Errorf("%w: a client with this token hash", store.ErrExists)
	}
	return c, nil
}

func (db *DB) getClient(ctx context.Context, where string, arg any) (*store.Client, error) {
	row, err := db.queryRow(ctx, "SELECT "+clientColumns+" FROM clients WHERE "+where, arg)
	if err != nil {
		return nil, err
	}
	c, err := scanClient(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, db.closedOr(err)
	}
	return c, nil
}

// ClientGet implements store.Store.
func (db *DB) ClientGet(ctx context.Context, id string) (*store.Client, error) {
	c, err := db.getClient(ctx, "id = $1", id)
	if err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, err)
	}
	return c, nil
}

// ClientGetByTokenHash implements store.Store.
func (db *DB) ClientGetByTokenHash(ctx context.Context, hash []byte) (*store.Client, error) {
	c, err := db.getClient(ctx, "token_hash = $1", hash)
	if err != nil {
		return nil, fmt.Errorf("get client by token: %w", err)
	}
	if c.Revoked() {
		return c, fmt.Errorf("get client by token: client %s: %w", c.ID, store.ErrRevoked)
	}
	return c, nil
}

// ClientList implements store.Store.
func (db *DB) ClientList(ctx context.Context) ([]*store.Client, error) {
	rows, err := db.query(ctx, "SELECT "+clientColumns+" FROM clients ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Client, error) { return scanClient(r) })
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", db.closedOr(err))
	}
	return out, nil
}

// ClientRevoke implements store.Store.
func (db *DB) ClientRevoke(ctx context.Context, id string) (*store.Client, error) {
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		if _, err := t.exec("UPDATE clients SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", now(), id); err != nil {
			return err
		}
		var err error
		c, err = t.client(id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("revoke client %s: %w", id, err)
	}
	return c, nil
}

// PairingInsert implements store.Store.
func (db *DB) PairingInsert(ctx context.Context, p *store.PairingInsertParams) (*store.Pairing, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert pairing: %w", err)
	}
	var pr *store.Pairing
	err := db.write(ctx, func(t *tx) error {
		n := now()
		pr = &store.Pairing{
			ID:        store.NewID(store.PairingIDPrefix),
			CodeHash:  append([]byte(nil), p.CodeHash...),
			Scopes:    append([]string{}, p.Scopes...),
			CreatedAt: n,
			ExpiresAt: msTime(p.ExpiresAt),
		}
		inserted, err := t.affected(`INSERT INTO pairings (id, code_hash, scopes, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (code_hash) DO NOTHING`, pr.ID, pr.CodeHash, pr.Scopes, n, pr.ExpiresAt)
		if err != nil {
			return err
		}
		if inserted == 0 {
			return fmt.Errorf("%w: a pairing with this code hash", store.ErrExists)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert pairing: %w", err)
	}
	return pr, nil
}

// PairingRedeem implements store.Store. The pairing row is locked before it
// is checked, so of concurrent redemptions of one code exactly one finds it
// unused.
func (db *DB) PairingRedeem(ctx context.Context, p *store.PairingRedeemParams) (*store.Client, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("redeem pairing: %w", err)
	}
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = msTime(p.Now)
		}
		var (
			id      string
			scopes  []string
			expires time.Time
			used    *time.Time
		)
		if err := t.scanRow("SELECT id, scopes, expires_at, used_at FROM pairings WHERE code_hash = $1 FOR UPDATE",
			[]any{p.CodeHash}, &id, &scopes, &expires, &used); err != nil {
			return err
		}
		if used != nil {
			return store.ErrUsed
		}
		if !at.Before(expires) {
			return store.ErrExpired
		}
		cp := &store.ClientInsertParams{Name: p.ClientName, TokenHash: p.TokenHash, Scopes: scopes}
		var err error
		if c, err = t.insertClient(cp, n); err != nil {
			return err
		}
		t.laterOne("UPDATE pairings SET used_at = $1, client_id = $2 WHERE id = $3", n, c.ID, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redeem pairing: %w", err)
	}
	return c, nil
}

// ClientUpdate implements store.Store.
func (db *DB) ClientUpdate(ctx context.Context, p *store.ClientUpdateParams) (*store.Client, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update client: %w", err)
	}
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		if p.MaxMemoryLimit != nil {
			if _, err := t.exec("UPDATE clients SET max_memory_limit = $1 WHERE id = $2", *p.MaxMemoryLimit, p.ID); err != nil {
				return err
			}
		}
		var err error
		c, err = t.client(p.ID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update client %s: %w", p.ID, err)
	}
	return c, nil
}

// client reads the client id inside the transaction; store.ErrNotFound
// when there is none.
func (t *tx) client(id string) (*store.Client, error) {
	c, err := scanClient(t.queryRow("SELECT "+clientColumns+" FROM clients WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, err
}
