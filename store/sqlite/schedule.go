package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
)

const scheduleColumns = `owner_client_id, id, definition, paused, note, last_tick_at, next_run_at, buffered,
	missed, skipped, version, created_at, updated_at`

func scanSchedule(s scanner) (*store.Schedule, error) {
	var (
		sc                     store.Schedule
		def                    string
		paused                 int64
		last, created, updated int64
		next                   sql.NullInt64
	)
	if err := s.Scan(&sc.OwnerClientID, &sc.ID, &def, &paused, &sc.Note, &last, &next, &sc.Buffered,
		&sc.Missed, &sc.Skipped, &sc.Version, &created, &updated); err != nil {
		return nil, err
	}
	sc.Definition = []byte(def)
	sc.Paused = paused != 0
	sc.LastTickAt = fromMS(last)
	sc.NextRunAt = fromNullMS(next)
	sc.CreatedAt = fromMS(created)
	sc.UpdatedAt = fromMS(updated)
	return &sc, nil
}

// ScheduleInsert implements store.Store.
func (db *DB) ScheduleInsert(ctx context.Context, p *store.ScheduleInsertParams) (*store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert schedule: %w", err)
	}
	var sc *store.Schedule
	err := db.write(ctx, func(t *tx) error {
		if p.MaxPerOwner > 0 {
			var n int
			if err := t.scanRow("SELECT count(*) FROM schedules WHERE owner_client_id = ?", []any{p.OwnerClientID}, &n); err != nil {
				return err
			}
			if n >= p.MaxPerOwner {
				return fmt.Errorf("%w: the client has %d schedules, the most allowed", store.ErrLimit, n)
			}
		}
		n := now()
		_, err := t.exec(`INSERT INTO schedules (owner_client_id, id, definition, paused, note, last_tick_at, next_run_at,
			created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.OwnerClientID, p.ID, string(p.Definition), boolInt(p.Paused), p.Note, ms(p.LastTickAt), msOrNull(p.NextRunAt), ms(n), ms(n))
		if isConstraint(err) {
			return fmt.Errorf("%w: schedule %q", store.ErrExists, p.ID)
		}
		if err != nil {
			return err
		}
		sc = &store.Schedule{
			OwnerClientID: p.OwnerClientID, ID: p.ID, Definition: append([]byte(nil), p.Definition...),
			Paused: p.Paused, Note: p.Note, LastTickAt: p.LastTickAt.UTC().Truncate(1e6),
			NextRunAt: p.NextRunAt.UTC().Truncate(1e6), Version: 1, CreatedAt: n, UpdatedAt: n,
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert schedule: %w", err)
	}
	return sc, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ScheduleGet implements store.Store.
func (db *DB) ScheduleGet(ctx context.Context, owner, id string) (*store.Schedule, error) {
	row, err := db.queryRow(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE owner_client_id = ? AND id = ?", owner, id)
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	sc, err := scanSchedule(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get schedule %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", classify(err))
	}
	return sc, nil
}

// ScheduleList implements store.Store.
func (db *DB) ScheduleList(ctx context.Context, p *store.ScheduleListParams) ([]*store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	rows, err := db.query(ctx, "SELECT "+scheduleColumns+` FROM schedules
		WHERE owner_client_id = ? AND id > ? ORDER BY id LIMIT ?`, p.OwnerClientID, p.Cursor, limit)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return collectSchedules(rows)
}

func collectSchedules(rows *sql.Rows) ([]*store.Schedule, error) {
	defer rows.Close()
	var out []*store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("schedules: %w", classify(err))
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedules: %w", classify(err))
	}
	return out, nil
}

// getSchedule reads a schedule in the transaction.
func (t *tx) getSchedule(owner, id string) (*store.Schedule, error) {
	row, err := t.queryRow("SELECT "+scheduleColumns+" FROM schedules WHERE owner_client_id = ? AND id = ?", owner, id)
	if err != nil {
		return nil, err
	}
	sc, err := scanSchedule(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("schedule %q: %w", id, store.ErrNotFound)
	}
	return sc, classify(err)
}

// ScheduleUpdate implements store.Store.
func (db *DB) ScheduleUpdate(ctx context.Context, p *store.ScheduleUpdateParams) (*store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update schedule: %w", err)
	}
	var sc *store.Schedule
	err := db.write(ctx, func(t *tx) error {
		cur, err := t.getSchedule(p.OwnerClientID, p.ID)
		if err != nil {
			return err
		}
		if cur.Version != p.Version {
			sc = cur
			return fmt.Errorf("%w: schedule %q is at version %d, not %d", store.ErrConflict, p.ID, cur.Version, p.Version)
		}
		n := now()
		if _, err := t.exec(`UPDATE schedules SET paused = ?, note = ?, last_tick_at = ?, next_run_at = ?, buffered = ?,
			version = version + 1, updated_at = ? WHERE owner_client_id = ? AND id = ?`,
			boolInt(p.Paused), p.Note, ms(p.LastTickAt), msOrNull(p.NextRunAt), p.Buffered, ms(n), p.OwnerClientID, p.ID); err != nil {
			return err
		}
		cur.Paused, cur.Note, cur.Buffered = p.Paused, p.Note, p.Buffered
		cur.LastTickAt, cur.NextRunAt = fromMS(ms(p.LastTickAt)), fromNullMS(nullMS(p.NextRunAt))
		cur.Version++
		cur.UpdatedAt = n
		sc = cur
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return sc, fmt.Errorf("update schedule: %w", err)
		}
		return nil, fmt.Errorf("update schedule: %w", err)
	}
	return sc, nil
}

// nullMS is t as a nullable millisecond count.
func nullMS(t interface {
	IsZero() bool
	UnixMilli() int64
},
) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// ScheduleDelete implements store.Store.
func (db *DB) ScheduleDelete(ctx context.Context, owner, id string) error {
	err := db.write(ctx, func(t *tx) error {
		r, err := t.exec("DELETE FROM schedules WHERE owner_client_id = ? AND id = ?", owner, id)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("schedule %q: %w", id, store.ErrNotFound)
		}
		_, err = t.exec("DELETE FROM schedule_runs WHERE owner_client_id = ? AND schedule_id = ?", owner, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete schedule: %w", err)
	}
	return nil
}

// ScheduleDue implements store.Store. Both queries read the partial index
// schedules_due.
func (db *DB) ScheduleDue(ctx context.Context, p *store.ScheduleDueParams) (*store.ScheduleDueResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	rows, err := db.query(ctx, "SELECT "+scheduleColumns+` FROM schedules
		WHERE next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at LIMIT ?`, ms(p.Now), limit)
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	res := &store.ScheduleDueResult{}
	if res.Schedules, err = collectSchedules(rows); err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	row, err := db.queryRow(ctx, `SELECT min(next_run_at) FROM schedules WHERE next_run_at IS NOT NULL AND next_run_at > ?`, ms(p.Now))
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	var next sql.NullInt64
	if err := row.Scan(&next); err != nil {
		return nil, fmt.Errorf("due schedules: %w", classify(err))
	}
	res.Next = fromNullMS(next)
	return res, nil
}

// ScheduleTick implements store.Store.
func (db *DB) ScheduleTick(ctx context.Context, p *store.ScheduleTickParams) (*store.ScheduleTickResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("schedule tick: %w", err)
	}
	ids, retries, err := backend.TickRuns(p.Runs)
	if err != nil {
		return nil, fmt.Errorf("schedule tick: %w", err)
	}
	var res *store.ScheduleTickResult
	var current *store.Schedule
	err = db.write(ctx, func(t *tx) error {
		res, current = nil, nil
		n := now()
		// The compare-and-set is the UPDATE itself: it changes the row only
		// at the version and cursor the caller read.
		row, err := t.queryRow(`UPDATE schedules SET last_tick_at = ?, next_run_at = ?, buffered = ?, missed = missed + ?,
			skipped = skipped + ?, version = version + 1, updated_at = ?
			WHERE owner_client_id = ? AND id = ? AND version = ? AND last_tick_at = ?
			RETURNING `+scheduleColumns,
			ms(p.NewLastTickAt), msOrNull(p.NextRunAt), p.Buffered, p.Missed, p.Skipped, ms(n), p.OwnerClientID, p.ID,
			p.Version, ms(p.LastTickAt))
		if err != nil {
			return err
		}
		cur, err := scanSchedule(row)
		if errors.Is(err, sql.ErrNoRows) {
			if cur, err = t.getSchedule(p.OwnerClientID, p.ID); err != nil {
				return err
			}
			current = cur
			return fmt.Errorf("%w: schedule %q moved on (version %d)", store.ErrConflict, p.ID, cur.Version)
		}
		if err != nil {
			return classify(err)
		}
		out := &store.ScheduleTickResult{Schedule: cur}
		for i, r := range p.Runs {
			task, err := t.insertTask(r.Task, ids[i], p.OwnerClientID, retries[i], r.Task.Start, n)
			if err != nil {
				return err
			}
			_, err = t.exec(`INSERT INTO schedule_runs (owner_client_id, schedule_id, run_key, tick_at, started_at, task_id)
				VALUES (?, ?, ?, ?, ?, ?)`, p.OwnerClientID, p.ID, r.Key, ms(r.TickAt), ms(n), task.ID)
			if isConstraint(err) {
				return fmt.Errorf("%w: run %q of schedule %q", store.ErrExists, r.Key, p.ID)
			}
			if err != nil {
				return err
			}
			out.Tasks = append(out.Tasks, task)
		}
		// The run rows past the kept ones go every few versions, not at
		// each tick: a schedule holds at most ScheduleRunsKept plus
		// schedulePruneEvery of them.
		if len(p.Runs) > 0 && cur.Version%schedulePruneEvery == 0 {
			if _, err := t.exec(`DELETE FROM schedule_runs WHERE owner_client_id = ? AND schedule_id = ? AND run_key NOT IN (
				SELECT run_key FROM schedule_runs WHERE owner_client_id = ? AND schedule_id = ?
				ORDER BY started_at DESC, tick_at DESC LIMIT ?)`,
				p.OwnerClientID, p.ID, p.OwnerClientID, p.ID, store.ScheduleRunsKept); err != nil {
				return err
			}
		}
		res = out
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) && current != nil {
			return &store.ScheduleTickResult{Schedule: current}, fmt.Errorf("schedule tick: %w", err)
		}
		return nil, fmt.Errorf("schedule tick: %w", err)
	}
	return res, nil
}

// schedulePruneEvery is how many versions of a schedule go by between
// two prunes of its run rows.
const schedulePruneEvery = 8

// ScheduleRuns implements store.Store.
func (db *DB) ScheduleRuns(ctx context.Context, owner, id string) ([]*store.ScheduleRun, error) {
	if _, err := db.ScheduleGet(ctx, owner, id); err != nil {
		return nil, fmt.Errorf("schedule runs: %w", err)
	}
	rows, err := db.query(ctx, `SELECT run_key, tick_at, started_at, task_id FROM schedule_runs
		WHERE owner_client_id = ? AND schedule_id = ? ORDER BY started_at DESC, tick_at DESC LIMIT ?`, owner, id, store.ScheduleRunsKept)
	if err != nil {
		return nil, fmt.Errorf("schedule runs: %w", err)
	}
	defer rows.Close()
	var out []*store.ScheduleRun
	for rows.Next() {
		var r store.ScheduleRun
		var tick, started int64
		if err := rows.Scan(&r.Key, &tick, &started, &r.TaskID); err != nil {
			return nil, fmt.Errorf("schedule runs: %w", classify(err))
		}
		r.TickAt, r.StartedAt = fromMS(tick), fromMS(started)
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedule runs: %w", classify(err))
	}
	return out, nil
}
