package runtime

import (
	"sync"

	"github.com/weft-run/weft/store"
)

// admission decides which work may take a worker, so that no client holds
// more than its share of the workers while another waits, and so that the
// memory limits of the calls in flight stay within the daemon's budget
// (RATIONALE.md, "Fair workers and a memory budget").
//
// The rule, for a client c with r running tasks when a worker is free:
//
//   - c never holds more than the per-client ceiling (Config.ClientWorkers,
//     by default the workers less a reserve of max(1, workers/8)), so a
//     newcomer always finds a worker free;
//   - below the ceiling, c may take the worker while r is below its fair
//     share, workers / (clients running or queued), or while no other
//     client has queued work;
//   - the memory limits of the running tasks, each its own or the default,
//     never sum past Config.MemoryBudget; a task that does not fit stays
//     queued until enough memory is free.
//
// Work handed from a run straight to the next on the same worker (a
// workflow and its activities, which belong to the workflow's client) keeps
// the worker it has: the hand-over moves the worker's accounting to the new
// task without asking again.
type admission struct {
	workers  int
	ceiling  int
	budget   int64
	defLimit int64

	mu      sync.Mutex
	running map[string]int // client id → tasks holding a worker
	memory  int64          // sum of the memory limits of those tasks
	// refused is set when a task was kept waiting; the next release wakes
	// the scheduler to try again.
	refused bool
	notify  func()
}

// ticket is what one worker holds while it runs a task.
type ticket struct {
	owner  string
	memory int64
}

func newAdmission(cfg Config, notify func()) *admission {
	return &admission{
		workers:  cfg.Workers,
		ceiling:  cfg.ClientWorkers,
		budget:   cfg.MemoryBudget,
		defLimit: cfg.DefaultMemoryLimit,
		running:  map[string]int{},
		notify:   notify,
	}
}

// limitOf is the memory limit a task runs with.
func (a *admission) limitOf(memoryLimit int64) int64 {
	if memoryLimit <= 0 {
		return a.defLimit
	}
	return memoryLimit
}

// ticketOf is the ticket of task t: a worker that runs t holds it.
func (a *admission) ticketOf(t *store.Task) ticket {
	return ticket{owner: t.OwnerClientID, memory: a.limitOf(t.MemoryLimit)}
}

// fairShare is the share of the workers of each of n active clients, at
// least one.
func fairShare(workers, n int) int {
	if n <= 1 {
		return workers
	}
	return max(1, workers/n)
}

// mayTake is the share rule for owner, whose next task needs memory bytes,
// given whether another client has queued work and how many clients are
// active. a.mu is held.
func (a *admission) mayTake(owner string, memory int64, othersQueued bool, active int) bool {
	r := a.running[owner]
	if r >= a.ceiling || a.memory+memory > a.budget {
		return false
	}
	return !othersQueued || r < fairShare(a.workers, active)
}

// hold counts t as running; the caller already decided it runs.
func (a *admission) hold(t *store.Task) ticket {
	tk := a.ticketOf(t)
	a.mu.Lock()
	a.take(tk)
	a.mu.Unlock()
	return tk
}

// take counts tk; a.mu is held.
func (a *admission) take(tk ticket) {
	a.running[tk.owner]++
	a.memory += tk.memory
}

// release ends what tk counted, and wakes the scheduler when a task was
// kept waiting meanwhile.
func (a *admission) release(tk ticket) {
	a.mu.Lock()
	a.drop(tk)
	wake := a.refused
	a.refused = false
	a.mu.Unlock()
	if wake && a.notify != nil {
		a.notify()
	}
}

// drop uncounts tk; a.mu is held.
func (a *admission) drop(tk ticket) {
	if n := a.running[tk.owner] - 1; n > 0 {
		a.running[tk.owner] = n
	} else {
		delete(a.running, tk.owner)
	}
	a.memory -= tk.memory
}

// hand moves the accounting of a worker from the task it ran to the next
// one it runs at once.
func (a *admission) hand(from ticket, to *store.Task) ticket {
	tk := a.ticketOf(to)
	a.mu.Lock()
	a.drop(from)
	a.take(tk)
	a.mu.Unlock()
	return tk
}

// tryStart admits a task of owner that would start at once, without a
// trip through the queue: the clients the engine knows of are those
// running. It counts the task when it admits it.
func (a *admission) tryStart(owner string, memoryLimit int64) (ticket, bool) {
	tk := ticket{owner: owner, memory: a.limitOf(memoryLimit)}
	a.mu.Lock()
	defer a.mu.Unlock()
	active := len(a.running)
	if a.running[owner] == 0 {
		active++
	}
	if !a.mayTake(owner, tk.memory, active > 1, active) {
		a.refused = true
		return ticket{}, false
	}
	a.take(tk)
	return tk, true
}

// fits reports whether a task with memoryLimit could ever run: its limit
// is within the whole budget.
func (a *admission) fits(memoryLimit int64) bool {
	return a.limitOf(memoryLimit) <= a.budget
}

// gate returns the store.ClaimGate of one claim.
func (a *admission) gate() *claimGate { return &claimGate{a: a} }

// claimGate applies the admission rule inside one store claim, counting
// each task it admits at once; if the claim fails, abort uncounts them.
type claimGate struct {
	a      *admission
	queued []string
	taken  []ticket
}

// Queued implements store.ClaimGate. A claim that runs again starts over.
func (g *claimGate) Queued(owners []string) {
	g.abort()
	g.queued = append(g.queued[:0], owners...)
}

// Admit implements store.ClaimGate.
func (g *claimGate) Admit(owner string, memoryLimit int64) bool {
	a := g.a
	tk := ticket{owner: owner, memory: a.limitOf(memoryLimit)}
	a.mu.Lock()
	defer a.mu.Unlock()
	othersQueued := false
	active := len(a.running)
	for _, o := range g.queued {
		if o != owner {
			othersQueued = true
		}
		if a.running[o] == 0 {
			active++
		}
	}
	if !a.mayTake(owner, tk.memory, othersQueued, active) {
		a.refused = true
		return false
	}
	a.take(tk)
	g.taken = append(g.taken, tk)
	return true
}

// abort uncounts what the gate admitted.
func (g *claimGate) abort() {
	if len(g.taken) == 0 {
		return
	}
	g.a.mu.Lock()
	for _, tk := range g.taken {
		g.a.drop(tk)
	}
	g.a.mu.Unlock()
	g.taken = g.taken[:0]
}
