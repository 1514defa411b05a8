package runtime

import (
	"context"
	"sync"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
)

// signalBudget counts, per workflow, the signals it holds that no wait
// consumed yet, so that TaskSignal can bound them by count and bytes
// (Config.MaxPendingSignals, MaxPendingSignalBytes). The count of a
// workflow is read from its journal the first time it gets a signal, kept
// up to date by each signal and reset from the journal by each run that
// commits a wait; it is forgotten when the workflow finishes.
type signalBudget struct {
	mu sync.Mutex
	m  map[string]*pendingSignals
}

// pendingSignals is the count of one workflow.
type pendingSignals struct {
	mu     sync.Mutex
	loaded bool
	// lastSeq is the last sequence number of the log that count and bytes
	// reflect; after lists the signals appended past it.
	lastSeq int64
	count   int
	bytes   int64
	after   []signalRecord
}

// signalRecord is one signal appended to a workflow's log.
type signalRecord struct {
	seq  int64
	size int64
}

// entry returns the count of workflow id, creating it.
func (b *signalBudget) entry(id string) *pendingSignals {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*pendingSignals)
	}
	ps, ok := b.m[id]
	if !ok {
		ps = &pendingSignals{}
		b.m[id] = ps
	}
	return ps
}

// drop forgets workflow id.
func (b *signalBudget) drop(id string) {
	b.mu.Lock()
	delete(b.m, id)
	b.mu.Unlock()
}

// settle resets the count of workflow id from a journal that reads its log
// up to lastSeq; a journal older than what the count reflects is ignored.
// ps.mu is held.
func (ps *pendingSignals) settle(lastSeq int64, count int, bytes int64) {
	if ps.loaded && lastSeq < ps.lastSeq {
		return
	}
	ps.loaded, ps.lastSeq, ps.count, ps.bytes = true, lastSeq, count, bytes
	kept := ps.after[:0]
	for _, r := range ps.after {
		if r.seq > lastSeq {
			kept = append(kept, r)
		}
	}
	ps.after = kept
}

// totals returns the pending signals and their bytes. ps.mu is held.
func (ps *pendingSignals) totals() (int, int64) {
	n, size := ps.count, ps.bytes
	for _, r := range ps.after {
		n++
		size += r.size
	}
	return n, size
}

// settleSignals records what a committed run of workflow j left pending.
func (e *Engine) settleSignals(j *journal.Journal) {
	n, size := j.PendingSignals()
	ps := e.signals.entry(j.TaskID())
	ps.mu.Lock()
	ps.settle(j.LastSeq(), n, size)
	ps.mu.Unlock()
}

// admitSignal checks that workflow id may take one more pending signal of
// size bytes; ps.mu is held. It reads the journal once, the first time.
func (e *Engine) admitSignal(ctx context.Context, ps *pendingSignals, id string, size int64) error {
	if !ps.loaded {
		t, err := e.store.TaskGet(ctx, id)
		if err != nil {
			return fault.Wrap("get task", err)
		}
		j, err := journal.Read(ctx, e.store, t)
		if err != nil {
			return fault.Wrap("read journal", err)
		}
		n, b := j.PendingSignals()
		ps.settle(j.LastSeq(), n, b)
	}
	n, b := ps.totals()
	if n+1 > e.cfg.MaxPendingSignals {
		return fault.Errorf(fault.SignalLimitExceeded, "task %s holds %d signals that no wait consumed yet, the most it may; retry once it consumed some", id, n)
	}
	if b+size > e.cfg.MaxPendingSignalBytes {
		return fault.Errorf(fault.SignalLimitExceeded, "task %s holds %d bytes of signals that no wait consumed yet; this one would pass the limit of %d bytes", id, b, e.cfg.MaxPendingSignalBytes)
	}
	return nil
}
