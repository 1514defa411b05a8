package callrec

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/store"
)

// Progress throttles the progress reports of one call into
// task.progress events. A report only replaces the pending one under a
// lock; a goroutine of its own appends it, so the plugin call never waits
// for the store. Between two appends of the goroutine at least the
// interval passes; End writes what is still pending when the call ends.
// One worker uses it for one call at a time.
type Progress struct {
	store    store.Store
	interval time.Duration
	log      hclog.Logger

	mu      sync.Mutex
	taskID  string
	lease   int64
	pending store.TaskProgress // the latest report not yet appended, when has
	has     bool
	writing bool          // the writer goroutine runs
	stop    chan struct{} // closed by end; nil until the first report
	ended   bool
	wg      sync.WaitGroup
}

// NewProgress returns the progress log of a worker: it appends to s, at
// most one event per interval, and logs a failed append to log.
func NewProgress(s store.Store, interval time.Duration, log hclog.Logger) *Progress {
	return &Progress{store: s, interval: interval, log: log}
}

// Begin prepares the log for a call of task id, whose appends are fenced
// by lease (store.EventAppendParams.Lease; 0 for none).
func (l *Progress) Begin(id string, lease int64) {
	l.mu.Lock()
	l.taskID, l.lease, l.has, l.stop, l.ended = id, lease, false, nil, false
	l.mu.Unlock()
}

// Report takes one report of the call; it never blocks on the store.
func (l *Progress) Report(done, total int64, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.pending = store.TaskProgress{Done: done, Total: total, Message: message}
	l.has = true
	if l.writing {
		return // the writer takes it at its next turn
	}
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	l.writing = true
	l.wg.Add(1)
	go l.writer(l.taskID, l.lease, l.stop)
}

// writer appends the pending report, waits the interval, and goes on while
// reports keep coming; it ends once an interval passed without one, or
// when the call ends (End appends what is left).
func (l *Progress) writer(id string, lease int64, stop <-chan struct{}) {
	defer l.wg.Done()
	timer := time.NewTimer(l.interval)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if !l.has || l.ended {
			l.writing = false
			l.mu.Unlock()
			return
		}
		p := l.pending
		l.has = false
		l.mu.Unlock()
		l.append(context.Background(), id, lease, &p)
		timer.Reset(l.interval)
		select {
		case <-timer.C:
		case <-stop:
		}
	}
}

// End stops the writer, waits for its append in flight, and appends the
// report still pending, so the last report of the call is recorded, once,
// before the call's outcome is written.
func (l *Progress) End(ctx context.Context) {
	l.mu.Lock()
	l.ended = true
	if l.stop != nil {
		close(l.stop)
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.mu.Lock()
	p, has, id, lease := l.pending, l.has, l.taskID, l.lease
	l.has = false
	l.mu.Unlock()
	if has {
		l.append(ctx, id, lease, &p)
	}
}

// progressData is the payload of a task.progress event.
type progressData struct {
	Done    int64  `json:"done"`
	Total   int64  `json:"total"`
	Message string `json:"message,omitempty"`
}

// append writes one task.progress event and the task's progress with it.
// A task that has already finished keeps its log as it is, and so does a
// task whose lease was lost (the call is being stopped).
func (l *Progress) append(ctx context.Context, id string, lease int64, p *store.TaskProgress) {
	payload, err := json.Marshal(progressData{Done: p.Done, Total: p.Total, Message: p.Message})
	if err != nil {
		return
	}
	_, err = l.store.EventAppend(ctx, &store.EventAppendParams{
		TaskID: id, Progress: p, Lease: lease,
		Events: []store.EventDraft{{Type: store.EventProgress, Payload: payload}},
	})
	if err != nil && !errors.Is(err, store.ErrTaskFinished) && !errors.Is(err, store.ErrLeaseLost) {
		l.log.Warn("record task progress", "task_id", id, "error", err)
	}
}
