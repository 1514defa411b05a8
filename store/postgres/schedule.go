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

const scheduleColumns = `owner_client_id, id, definition, paused, note, last_tick_at, next_run_at, buffered,
	missed, skipped, version, created_at, updated_at`

func scanSchedule(s scanner) (*store.Schedule, error) {
	var (
		sc                     store.Schedule
		def                    string
		last, created, updated time.Time
		next                   *time.Time
	)
	if err := s.Scan(&sc.OwnerClientID, &sc.ID, &def, &sc.Paused, &sc.Note, &last, &next, &sc.Buffered,
		&sc.Missed, &sc.Skipped, &sc.Version, &created, &updated); err != nil {
		return nil, err
	}
	sc.Definition = []byte(def)
	sc.LastTickAt = fromTS(last)
	sc.NextRunAt = fromNullTS(next)
	sc.CreatedAt = fromTS(created)
	sc.UpdatedAt = fromTS(updated)
	return &sc, nil
}

// ScheduleInsert implements store.Store.
func (db *DB) ScheduleInsert(ctx context.Context, p *store.ScheduleInsertParams) (*store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("insert schedule: %w", err)
	}
	var sc *store.Schedule
	err := db.write(ctx, func(t *tx) error {
		sc = nil
		if p.MaxPerOwner > 0 {
			// The owner's client row serializes the inserts that count.
			if _, err := t.exec("SELECT 1 FROM clients WHERE id = $1 FOR UPDATE", p.OwnerClientID); err != nil {
				return err
			}
			var n int
			if err := t.scanRow("SELECT count(*) FROM schedules WHERE owner_client_id = $1", []any{p.OwnerClientID}, &n); err != nil {
				return err
			}
			if n >= p.MaxPerOwner {
				return fmt.Errorf("%w: the client has %d schedules, the most allowed", store.ErrLimit, n)
			}
		}
		n := now()
		tag, err := t.exec(`INSERT INTO schedules (owner_client_id, id, definition, paused, note, last_tick_at, next_run_at,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT DO NOTHING`,
			p.OwnerClientID, p.ID, string(p.Definition), p.Paused, p.Note, msTime(p.LastTickAt), tsOrNull(p.NextRunAt), n)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: schedule %q", store.ErrExists, p.ID)
		}
		sc = &store.Schedule{
			OwnerClientID: p.OwnerClientID, ID: p.ID, Definition: append([]byte(nil), p.Definition...),
			Paused: p.Paused, Note: p.Note, LastTickAt: msTime(p.LastTickAt),
			Version: 1, CreatedAt: n, UpdatedAt: n,
		}
		if !p.NextRunAt.IsZero() {
			sc.NextRunAt = msTime(p.NextRunAt)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert schedule: %w", err)
	}
	return sc, nil
}

// ScheduleGet implements store.Store.
func (db *DB) ScheduleGet(ctx context.Context, owner, id string) (*store.Schedule, error) {
	row, err := db.queryRow(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE owner_client_id = $1 AND id = $2", owner, id)
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	sc, err := scanSchedule(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get schedule %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", db.closedOr(err))
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
		WHERE owner_client_id = $1 AND id > $2 ORDER BY id LIMIT $3`, p.OwnerClientID, p.Cursor, limit)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out, err := collectSchedules(rows)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", db.closedOr(err))
	}
	return out, nil
}

func collectSchedules(rows pgx.Rows) ([]*store.Schedule, error) {
	defer rows.Close()
	var out []*store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// lockSchedule reads and locks a schedule row in the transaction.
func (t *tx) lockSchedule(owner, id string) (*store.Schedule, error) {
	sc, err := scanSchedule(t.queryRow("SELECT "+scheduleColumns+" FROM schedules WHERE owner_client_id = $1 AND id = $2 FOR UPDATE", owner, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("schedule %q: %w", id, store.ErrNotFound)
	}
	return sc, err
}

// ScheduleUpdate implements store.Store.
func (db *DB) ScheduleUpdate(ctx context.Context, p *store.ScheduleUpdateParams) (*store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update schedule: %w", err)
	}
	var sc *store.Schedule
	err := db.write(ctx, func(t *tx) error {
		cur, err := t.lockSchedule(p.OwnerClientID, p.ID)
		sc = cur
		if err != nil {
			return err
		}
		if cur.Version != p.Version {
			return fmt.Errorf("%w: schedule %q is at version %d, not %d", store.ErrConflict, p.ID, cur.Version, p.Version)
		}
		n := now()
		t.laterOne(`UPDATE schedules SET paused = $1, note = $2, last_tick_at = $3, next_run_at = $4, buffered = $5,
			version = version + 1, updated_at = $6 WHERE owner_client_id = $7 AND id = $8`,
			p.Paused, p.Note, msTime(p.LastTickAt), tsOrNull(p.NextRunAt), p.Buffered, n, p.OwnerClientID, p.ID)
		cur.Paused, cur.Note, cur.Buffered = p.Paused, p.Note, p.Buffered
		cur.LastTickAt, cur.NextRunAt = msTime(p.LastTickAt), time.Time{}
		if !p.NextRunAt.IsZero() {
			cur.NextRunAt = msTime(p.NextRunAt)
		}
		cur.Version++
		cur.UpdatedAt = n
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

// ScheduleDelete implements store.Store.
func (db *DB) ScheduleDelete(ctx context.Context, owner, id string) error {
	err := db.write(ctx, func(t *tx) error {
		n, err := t.affected("DELETE FROM schedules WHERE owner_client_id = $1 AND id = $2", owner, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("schedule %q: %w", id, store.ErrNotFound)
		}
		t.later("DELETE FROM schedule_runs WHERE owner_client_id = $1 AND schedule_id = $2", owner, id)
		return nil
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
		WHERE next_run_at IS NOT NULL AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2`, msTime(p.Now), limit)
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	res := &store.ScheduleDueResult{}
	if res.Schedules, err = collectSchedules(rows); err != nil {
		return nil, fmt.Errorf("due schedules: %w", db.closedOr(err))
	}
	row, err := db.queryRow(ctx, `SELECT min(next_run_at) FROM schedules WHERE next_run_at IS NOT NULL AND next_run_at > $1`, msTime(p.Now))
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	var next *time.Time
	if err := row.Scan(&next); err != nil {
		return nil, fmt.Errorf("due schedules: %w", db.closedOr(err))
	}
	res.Next = fromNullTS(next)
	return res, nil
}

// ScheduleTick implements store.Store. The schedule row is locked first:
// of hosts racing on one tick, the second reads the first's version after
// its commit and loses the compare-and-set.
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
		cur, err := t.lockSchedule(p.OwnerClientID, p.ID)
		if err != nil {
			return err
		}
		if cur.Version != p.Version || !cur.LastTickAt.Equal(msTime(p.LastTickAt)) {
			current = cur
			return fmt.Errorf("%w: schedule %q moved on (version %d)", store.ErrConflict, p.ID, cur.Version)
		}
		n := now()
		out := &store.ScheduleTickResult{}
		for i, r := range p.Runs {
			task, err := t.insertTask(r.Task, ids[i], p.OwnerClientID, retries[i], r.Task.Start, n)
			if err != nil {
				return err
			}
			key := r.Key
			t.laterInsert(func(err error) error {
				if isUnique(err, "schedule_runs_pkey") {
					return fmt.Errorf("%w: run %q of schedule %q", store.ErrExists, key, p.ID)
				}
				return err
			}, `INSERT INTO schedule_runs (owner_client_id, schedule_id, run_key, tick_at, started_at, task_id)
				VALUES ($1, $2, $3, $4, $5, $6)`, p.OwnerClientID, p.ID, r.Key, msTime(r.TickAt), n, task.ID)
			out.Tasks = append(out.Tasks, task)
		}
		// The run rows past the kept ones go every few versions, not at
		// each tick (as on SQLite).
		if len(p.Runs) > 0 && (cur.Version+1)%schedulePruneEvery == 0 {
			t.later(`DELETE FROM schedule_runs WHERE owner_client_id = $1 AND schedule_id = $2 AND run_key NOT IN (
				SELECT run_key FROM schedule_runs WHERE owner_client_id = $1 AND schedule_id = $2
				ORDER BY started_at DESC, tick_at DESC LIMIT $3)`, p.OwnerClientID, p.ID, store.ScheduleRunsKept)
		}
		t.laterOne(`UPDATE schedules SET last_tick_at = $1, next_run_at = $2, buffered = $3, missed = missed + $4,
			skipped = skipped + $5, version = version + 1, updated_at = $6 WHERE owner_client_id = $7 AND id = $8`,
			msTime(p.NewLastTickAt), tsOrNull(p.NextRunAt), p.Buffered, p.Missed, p.Skipped, n, p.OwnerClientID, p.ID)
		cur.LastTickAt = msTime(p.NewLastTickAt)
		cur.NextRunAt = time.Time{}
		if !p.NextRunAt.IsZero() {
			cur.NextRunAt = msTime(p.NextRunAt)
		}
		cur.Buffered = p.Buffered
		cur.Missed += p.Missed
		cur.Skipped += p.Skipped
		cur.Version++
		cur.UpdatedAt = n
		out.Schedule = cur
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
		WHERE owner_client_id = $1 AND schedule_id = $2 ORDER BY started_at DESC, tick_at DESC LIMIT $3`, owner, id, store.ScheduleRunsKept)
	if err != nil {
		return nil, fmt.Errorf("schedule runs: %w", err)
	}
	defer rows.Close()
	var out []*store.ScheduleRun
	for rows.Next() {
		var r store.ScheduleRun
		var tick, started time.Time
		if err := rows.Scan(&r.Key, &tick, &started, &r.TaskID); err != nil {
			return nil, fmt.Errorf("schedule runs: %w", db.closedOr(err))
		}
		r.TickAt, r.StartedAt = fromTS(tick), fromTS(started)
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedule runs: %w", db.closedOr(err))
	}
	return out, nil
}
