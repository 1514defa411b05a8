package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-run/weft/store"
)

// ResponseGet implements store.Store. The response row records the finish;
// output and error are read from the task row, their one home.
func (db *DB) ResponseGet(ctx context.Context, id string) (*store.Response, error) {
	if !strings.HasPrefix(id, store.ResponseIDPrefix) {
		return nil, fmt.Errorf("get response %s: %w", id, store.ErrNotFound)
	}
	row, err := db.queryRow(ctx, "SELECT "+prefixed("t.", taskColumns)+
		" FROM responses r JOIN tasks t ON t.id = r.task_id WHERE r.task_id = ?", store.TaskIDFor(id))
	if err != nil {
		return nil, fmt.Errorf("get response: %w", err)
	}
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get response %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get response: %w", classify(err))
	}
	return store.ResponseOf(t), nil
}
