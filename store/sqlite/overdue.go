package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/weft-run/weft/store"
)

// TaskOverdue implements store.Store. Both queries read the partial index
// tasks_start_deadline, which holds only queued tasks with a deadline.
func (db *DB) TaskOverdue(ctx context.Context, p *store.TaskOverdueParams) (*store.TaskOverdueResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", err)
	}
	at := p.Now
	if at.IsZero() {
		at = now()
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	rows, err := db.query(ctx, "SELECT "+taskColumns+` FROM tasks
		WHERE status = 'queued' AND start_deadline IS NOT NULL AND start_deadline <= ?
		ORDER BY start_deadline, id LIMIT ?`, ms(at), limit)
	if err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", err)
	}
	defer rows.Close()
	res := &store.TaskOverdueResult{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("overdue tasks: %w", classify(err))
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", classify(err))
	}
	row, err := db.queryRow(ctx, `SELECT min(start_deadline) FROM tasks
		WHERE status = 'queued' AND start_deadline IS NOT NULL AND start_deadline > ?`, ms(at))
	if err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", err)
	}
	var next sql.NullInt64
	if err := row.Scan(&next); err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", classify(err))
	}
	res.Next = fromNullMS(next)
	return res, nil
}
