package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

const moduleColumns = "name, version, digest, size, functions, created_at"

func scanModule(s scanner) (*store.Module, error) {
	var (
		m       store.Module
		fns     string
		created int64
	)
	if err := s.Scan(&m.Name, &m.Version, &m.Digest, &m.Size, &fns, &created); err != nil {
		return nil, err
	}
	if err := backend.UnmarshalFunctions(&m, fns); err != nil {
		return nil, err
	}
	m.CreatedAt = fromMS(created)
	return &m, nil
}

// ModuleInsert implements store.Store.
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
		row, err := t.queryRow("SELECT "+moduleColumns+" FROM modules WHERE name = ? ORDER BY version DESC LIMIT 1", p.Name)
		if err != nil {
			return err
		}
		latest, err := scanModule(row)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			latest = nil
		case err != nil:
			return classify(err)
		}
		n := now()
		var write bool
		if m, write = backend.NextModule(latest, p, fns, n); !write {
			return nil
		}
		_, err = t.exec("INSERT INTO modules ("+moduleColumns+") VALUES (?, ?, ?, ?, ?, ?)",
			m.Name, m.Version, m.Digest, m.Size, fnJSON, ms(n))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert module: %w", err)
	}
	return m, nil
}

// ModuleGet implements store.Store.
func (db *DB) ModuleGet(ctx context.Context, name string) (*store.Module, error) {
	row, err := db.queryRow(ctx, "SELECT "+moduleColumns+" FROM modules WHERE name = ? ORDER BY version DESC LIMIT 1", name)
	if err != nil {
		return nil, fmt.Errorf("get module: %w", err)
	}
	m, err := scanModule(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get module %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get module: %w", classify(err))
	}
	return m, nil
}

// ModuleList implements store.Store.
func (db *DB) ModuleList(ctx context.Context) ([]*store.Module, error) {
	rows, err := db.query(ctx, `SELECT `+moduleColumns+` FROM modules m
		WHERE version = (SELECT max(version) FROM modules WHERE name = m.name) ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list modules: %w", err)
	}
	defer rows.Close()
	var out []*store.Module
	for rows.Next() {
		m, err := scanModule(rows)
		if err != nil {
			return nil, fmt.Errorf("list modules: %w", classify(err))
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list modules: %w", classify(err))
	}
	return out, nil
}

// ModuleDelete implements store.Store.
func (db *DB) ModuleDelete(ctx context.Context, name string) error {
	err := db.write(ctx, func(t *tx) error {
		r, err := t.exec("DELETE FROM modules WHERE name = ?", name)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
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
