package backend

import "sync"

// Watchers is the in-process registry behind EventWatch and WorkWatch:
// per key (a task id, or a backend's key for claimable work), the
// channels to signal after a commit. The zero Watchers is not ready; use
// NewWatchers.
type Watchers struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

// NewWatchers returns an empty registry.
func NewWatchers() *Watchers {
	return &Watchers{m: make(map[string]map[chan struct{}]struct{})}
}

// Add registers a watcher of key. It returns the channel Notify signals
// and the function that ends the watch; calling that more than once does
// nothing more.
func (w *Watchers) Add(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.m[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[key] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.m[key], ch)
			if len(w.m[key]) == 0 {
				delete(w.m, key)
			}
			w.mu.Unlock()
		})
	}
}

// Notify signals every watcher of the keys, without blocking: a signal
// already pending stands for this one too.
func (w *Watchers) Notify(keys []string) {
	if len(keys) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return
	}
	for _, k := range keys {
		for ch := range w.m[k] {
			signal(ch)
		}
	}
}

// NotifyAll signals every watcher.
func (w *Watchers) NotifyAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.m {
		for ch := range set {
			signal(ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
