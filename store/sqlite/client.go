package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

const clientColumns = "id, name, token_hash, scopes, created_at, revoked_at, max_memory_limit"

func scanClient(s scanner) (*store.Client, error) {
	var (
		c       store.Client
		scopes  string
		created int64
		revoked sql.NullInt64
	)
	if err := s.Scan(&c.ID, &c.Name, &c.TokenHash, &scopes, &created, &revoked, &c.MaxMemoryLimit); err != nil {
		return nil, err
	}
	var err error
	if c.Scopes, err = unmarshalStrings(scopes); err != nil {
		return nil, fmt.Errorf("client %s scopes: %w", c.ID, err)
	}
	c.CreatedAt = fromMS(created)
	c.RevokedAt = fromNullMS(revoked)
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
	_, err := t.exec("INSERT INTO clients (id, name, token_hash, scopes, created_at) VALUES (?, ?, ?, ?, ?)",
		c.ID, c.Name, c.TokenHash, marshalStrings(c.Scopes), ms(n))
	if isConstraint(err) {
		return nil, fmt.Errorf("%w: a client with this token hash", store.ErrExists)
	}
	return c, err
}

func (db *DB) getClient(ctx context.Context, where string, arg any) (*store.Client, error) {
	row, err := db.queryRow(ctx, "SELECT "+clientColumns+" FROM clients WHERE "+where, arg)
	if err != nil {
		return nil, err
	}
	c, err := scanClient(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, classify(err)
}

// ClientGet implements store.Store.
func (db *DB) ClientGet(ctx context.Context, id string) (*store.Client, error) {
	c, err := db.getClient(ctx, "id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, err)
	}
	return c, nil
}

// ClientGetByTokenHash implements store.Store.
func (db *DB) ClientGetByTokenHash(ctx context.Context, hash []byte) (*store.Client, error) {
	c, err := db.getClient(ctx, "token_hash = ?", hash)
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
	defer rows.Close()
	var out []*store.Client
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("list clients: %w", classify(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list clients: %w", classify(err))
	}
	return out, nil
}

// ClientRevoke implements store.Store.
func (db *DB) ClientRevoke(ctx context.Context, id string) (*store.Client, error) {
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		if _, err := t.exec("UPDATE clients SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", ms(now()), id); err != nil {
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
			ExpiresAt: p.ExpiresAt.UTC().Truncate(time.Millisecond),
		}
		_, err := t.exec("INSERT INTO pairings (id, code_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
			pr.ID, pr.CodeHash, marshalStrings(pr.Scopes), ms(n), ms(pr.ExpiresAt))
		if isConstraint(err) {
			return fmt.Errorf("%w: a pairing with this code hash", store.ErrExists)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert pairing: %w", err)
	}
	return pr, nil
}

// PairingRedeem implements store.Store.
func (db *DB) PairingRedeem(ctx context.Context, p *store.PairingRedeemParams) (*store.Client, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("redeem pairing: %w", err)
	}
	cp := &store.ClientInsertParams{Name: p.ClientName, TokenHash: p.TokenHash}
	var c *store.Client
	err := db.write(ctx, func(t *tx) error {
		n := now()
		at := n
		if !p.Now.IsZero() {
			at = p.Now
		}
		var (
			id      string
			scopes  string
			expires int64
			used    sql.NullInt64
		)
		if err := t.scanRow("SELECT id, scopes, expires_at, used_at FROM pairings WHERE code_hash = ?",
			[]any{p.CodeHash}, &id, &scopes, &expires, &used); err != nil {
			return err
		}
		if used.Valid {
			return store.ErrUsed
		}
		if ms(at) >= expires {
			return store.ErrExpired
		}
		var err error
		if cp.Scopes, err = unmarshalStrings(scopes); err != nil {
			return fmt.Errorf("pairing scopes: %w", err)
		}
		if c, err = t.insertClient(cp, n); err != nil {
			return err
		}
		_, err = t.exec("UPDATE pairings SET used_at = ?, client_id = ? WHERE id = ?", ms(n), c.ID, id)
		return err
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
			if _, err := t.exec("UPDATE clients SET max_memory_limit = ? WHERE id = ?", *p.MaxMemoryLimit, p.ID); err != nil {
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
	row, err := t.queryRow("SELECT "+clientColumns+" FROM clients WHERE id = ?", id)
	if err != nil {
		return nil, err
	}
	c, err := scanClient(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, err
}
