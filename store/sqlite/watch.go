package sqlite

import "sync"

// watchers is the registry behind EventWatch: per task, the channels to
// signal after a commit that grew its log.
type watchers struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

func newWatchers() *watchers {
	return &watchers{m: make(map[string]map[chan struct{}]struct{})}
}

func (w *watchers) add(taskID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.m[taskID]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[taskID] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.m[taskID], ch)
			if len(w.m[taskID]) == 0 {
				delete(w.m, taskID)
			}
			w.mu.Unlock()
		})
	}
}

// notify signals every watcher of the tasks, without blocking: a signal
// already pending stands for this one too.
func (w *watchers) notify(taskIDs []string) {
	if len(taskIDs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return
	}
	for _, id := range taskIDs {
		for ch := range w.m[id] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// EventWatch implements store.Store.
func (db *DB) EventWatch(taskID string) (<-chan struct{}, func()) {
	return db.watch.add(taskID)
}
