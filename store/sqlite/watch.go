package sqlite

import "github.com/weft-run/weft/store/internal/backend"

// watchers is the registry behind EventWatch and WorkWatch: per task (and
// workKey), the channels the writer signals after a commit.
type watchers struct{ *backend.Watchers }

func newWatchers() *watchers { return &watchers{backend.NewWatchers()} }

func (w *watchers) add(key string) (<-chan struct{}, func()) { return w.Add(key) }

// EventWatch implements store.Store.
func (db *DB) EventWatch(taskID string) (<-chan struct{}, func()) {
	return db.watch.add(taskID)
}
