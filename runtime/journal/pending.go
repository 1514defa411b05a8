package journal

import "sync"

// Signals counts, per workflow, the signals it holds that no wait consumed
// yet, so that the engine can bound them by count and bytes before it
// appends another. The count of a workflow is read from its journal the
// first time it gets a signal (Pending.Settle), kept up to date by each
// signal appended (Pending.Appended) and reset from the journal by each
// run that commits a wait (Signals.Settle); it is forgotten when the
// workflow finishes (Drop). The zero Signals is ready; it is safe for
// concurrent use.
type Signals struct {
	mu sync.Mutex
	m  map[string]*Pending
}

// Pending is the count of one workflow's pending signals. Callers hold it
// (Lock) across a check and the append it admits, so that the two are one
// step per workflow; its other methods are called with it held.
type Pending struct {
	mu     sync.Mutex
	loaded bool
	// lastSeq is the last sequence number of the log that count and bytes
	// reflect; after lists the signals appended past it.
	lastSeq int64
	count   int
	bytes   int64
	after   []appended
}

// appended is one signal appended to a workflow's log.
type appended struct {
	seq  int64
	size int64
}

// Of returns the count of workflow id, creating it.
func (s *Signals) Of(id string) *Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*Pending)
	}
	p, ok := s.m[id]
	if !ok {
		p = &Pending{}
		s.m[id] = p
	}
	return p
}

// Drop forgets workflow id.
func (s *Signals) Drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// Settle records what the committed run of journal j left pending.
func (s *Signals) Settle(j *Journal) {
	p := s.Of(j.taskID)
	p.Lock()
	p.Settle(j)
	p.Unlock()
}

// Lock holds p.
func (p *Pending) Lock() { p.mu.Lock() }

// Unlock releases p.
func (p *Pending) Unlock() { p.mu.Unlock() }

// Loaded reports whether p was settled from a journal yet.
func (p *Pending) Loaded() bool { return p.loaded }

// Settle resets the count from journal j, which reads the log up to its
// LastSeq; a journal older than what the count reflects is ignored.
func (p *Pending) Settle(j *Journal) {
	n, size := j.PendingSignals()
	p.settle(j.lastSeq, n, size)
}

func (p *Pending) settle(lastSeq int64, count int, bytes int64) {
	if p.loaded && lastSeq < p.lastSeq {
		return
	}
	p.loaded, p.lastSeq, p.count, p.bytes = true, lastSeq, count, bytes
	kept := p.after[:0]
	for _, r := range p.after {
		if r.seq > lastSeq {
			kept = append(kept, r)
		}
	}
	p.after = kept
}

// Appended records a signal of size bytes appended at sequence number seq.
func (p *Pending) Appended(seq, size int64) {
	p.after = append(p.after, appended{seq: seq, size: size})
}

// Totals returns the pending signals and their bytes.
func (p *Pending) Totals() (int, int64) {
	n, size := p.count, p.bytes
	for _, r := range p.after {
		n++
		size += r.size
	}
	return n, size
}
