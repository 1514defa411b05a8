package runtime

import (
	"sync"

	"github.com/weft-run/weft/store"
)

// finishWatch tells waiters that a task reached its terminal status, so
// that TaskRun reads the task once when it ends instead of after every
// event of its log. Every terminal status the engine writes goes through
// Engine.taskFinished.
type finishWatch struct {
	mu sync.Mutex
	m  map[string][]chan struct{}
}

// add returns a channel closed once task id finishes through the engine,
// and a function that stops the watch.
func (f *finishWatch) add(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	if f.m == nil {
		f.m = make(map[string][]chan struct{})
	}
	f.m[id] = append(f.m[id], ch)
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		chs := f.m[id]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(f.m, id)
		} else {
			f.m[id] = chs
		}
	}
}

// done closes the channels of the watchers of task id.
func (f *finishWatch) done(id string) {
	f.mu.Lock()
	chs := f.m[id]
	delete(f.m, id)
	f.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
}

// taskFinished records a task that reached its terminal status: in the
// metrics, and for the waiters of TaskRun.
func (e *Engine) taskFinished(t *store.Task) {
	e.metrics.ObserveFinished(t)
	e.finished.done(t.ID)
	if t.Kind == store.KindWorkflow {
		e.signals.Drop(t.ID)
	}
}
