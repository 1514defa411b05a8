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

const moduleColumns = "name, version, digest, size, functions, created_at"

func scanModule(s scanner) (*store.Module, error) {
	var (
		m       store.Module
		fns     string
		created time.Time
	)
	if err := s.Scan(&m.Name, &m.Version, &m.Digest, &m.Size, &fns, &created); err != nil {
		return nil, err
	}
	if err := backend.UnmarshalFunctions(&m, fns); err != nil {
		return nil, err
	}
	m.CreatedAt = fromTS(created)
	return &m, nil
}

// ModuleInsert implements store.Store. Two concurrent deployments of one
// name may both read the same latest version; the primary key (name,
// version) lets one insert the next version, and the other runs again and
// deploys after it.
func (db *DB) ModuleInsert(ctx context.Context, p *store.ModuleInsertParams) (*store.Module, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert module: %w", err)
	}
	fns, fnJSON, err := backend.ModuleFunctions(p)
	if err != nil {
		return nil, fmt.Errorf("insert module: %w", err)
	}
	var m *store.Module
	err = db.write(ctx, func(t *tx) error {
		latest, err := scanModule(t.queryRow("SELECT "+moduleColumns+" FROM modules WHERE name = $1 ORDER BY version DESC LIMIT 1", p.Name))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			latest = nil
		case err != nil:
			return err
		}
		n := now()
		var write bool
		if m, write = backend.NextModule(latest, p, fns, n); !write {
			return nil
		}
		inserted, err := t.affected("INSERT INTO modules ("+moduleColumns+") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
			m.Name, m.Version, m.Digest, m.Size, fnJSON, n)
		if err != nil {
			return err
		}
		if inserted == 0 {
			return errRetry // a concurrent deployment took this version
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert module: %w", err)
	}
	return m, nil
}

// ModuleGet implements store.Store.
func (db *DB) ModuleGet(ctx context.Context, name string) (*store.Module, error) {
	row, err := db.queryRow(ctx, "SELECT "+moduleColumns+" FROM modules WHERE name = $1 ORDER BY version DESC LIMIT 1", name)
	if err != nil {
		return nil, fmt.Errorf("get module: %w", err)
	}
	m, err := scanModule(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get module %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get module: %w", db.closedOr(err))
	}
	return m, nil
}

// ModuleList implements store.Store.
func (db *DB) ModuleList(ctx context.Context) ([]*store.Module, error) {
	rows, err := db.query(ctx, `SELECT DISTINCT ON (name) `+moduleColumns+` FROM modules ORDER BY name, version DESC`)
	if err != nil {
		return nil, fmt.Errorf("list modules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Module, error) { return scanModule(r) })
	if err != nil {
		return nil, fmt.Errorf("list modules: %w", db.closedOr(err))
	}
	return out, nil
}

// ModuleDelete implements store.Store.
func (db *DB) ModuleDelete(ctx context.Context, name string) error {
	err := db.write(ctx, func(t *tx) error {
		n, err := t.affected("DELETE FROM modules WHERE name = $1", name)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete module %s: %w", name, err)
	}
	return nil
}
