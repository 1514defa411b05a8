package postgres

import "sync"

// watchers is the registry behind EventWatch: per task, the channels to
// signal after a commit that grew its log.
//
// Every commit of this process that appends events calls publish with the
// tasks whose logs grew, after the COMMIT returned. Today publish signals
// the watchers of this process only. The seam for many hosts sharing one
// database is publish and deliver: publish would also run pg_notify inside
// the transaction (channel weft_events, payload the task id), and a
// listener connection running LISTEN would call deliver for every
// notification, so a watcher on one host sees the appends of another.
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

// publish reports the tasks whose logs a commit of this process grew.
func (w *watchers) publish(taskIDs []string) { w.deliver(taskIDs) }

// deliver signals every watcher of the tasks, without blocking: a signal
// already pending stands for this one too.
func (w *watchers) deliver(taskIDs []string) {
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
