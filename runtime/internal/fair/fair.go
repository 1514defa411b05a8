package fair

import (
	"sync"

	"github.com/weft-run/weft/store"
)

// Config is what the admission rule needs of an engine's configuration.
type Config struct {
	// Workers is the number of workers.
	Workers int
	// ClientWorkers is the per-client ceiling.
	ClientWorkers int
	// MemoryBudget bounds the sum of the memory limits of running tasks.
	MemoryBudget int64
	// DefaultMemoryLimit is the limit of a task that sets none.
	DefaultMemoryLimit int64
	// Notify, when set, is called when a release may let in a task that
	// was kept waiting: it wakes the scheduler.
	Notify func()
}

// Admission decides which work may take a worker, so that no client holds
// more than its share of the workers while another waits, and so that the
// memory limits of the calls in flight stay within the daemon's budget
// (RATIONALE.md, "Fair workers and a memory budget").
//
// The rule, for a client c with r running tasks when a worker is free:
//
//   - c never holds more than the per-client ceiling (runtime.Config.ClientWorkers,
//     by default the workers less a reserve of max(1, workers/8)), so a
//     newcomer always finds a worker free;
//   - below the ceiling, c may take the worker while r is below its fair
//     share, workers / (clients running or queued), or while no other
//     client has queued work;
//   - the memory limits of the running tasks, each its own or the default,
//     never sum past runtime.Config.MemoryBudget; a task that does not fit stays
//     queued until enough memory is free.
//
// Work handed from a run straight to the next on the same worker (a
// workflow and its activities, which belong to the workflow's client) keeps
// the worker it has: the hand-over moves the worker's accounting to the new
// task without asking again.
type Admission struct {
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

// Ticket is what one worker holds while it runs a task.
type Ticket struct {
	owner  string
	memory int64
}

// New returns the admission of an engine configured by cfg.
func New(cfg Config) *Admission {
	return &Admission{
		workers:  cfg.Workers,
		ceiling:  cfg.ClientWorkers,
		budget:   cfg.MemoryBudget,
		defLimit: cfg.DefaultMemoryLimit,
		running:  map[string]int{},
		notify:   cfg.Notify,
	}
}

// LimitOf is the memory limit a task runs with.
func (a *Admission) LimitOf(memoryLimit int64) int64 {
	if memoryLimit <= 0 {
		return a.defLimit
	}
	return memoryLimit
}

// TicketOf is the ticket of task t: a worker that runs t holds it.
func (a *Admission) TicketOf(t *store.Task) Ticket {
	return Ticket{owner: t.OwnerClientID, memory: a.LimitOf(t.MemoryLimit)}
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
func (a *Admission) mayTake(owner string, memory int64, othersQueued bool, active int) bool {
	r := a.running[owner]
	if r >= a.ceiling || a.memory+memory > a.budget {
		return false
	}
	return !othersQueued || r < fairShare(a.workers, active)
}

// Hold counts t as running; the caller already decided it runs.
func (a *Admission) Hold(t *store.Task) Ticket {
	tk := a.TicketOf(t)
	a.mu.Lock()
	a.take(tk)
	a.mu.Unlock()
	return tk
}

// take counts tk; a.mu is held.
func (a *Admission) take(tk Ticket) {
	a.running[tk.owner]++
	a.memory += tk.memory
}

// Release ends what tk counted, and wakes the scheduler when a task was
// kept waiting meanwhile.
func (a *Admission) Release(tk Ticket) {
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
func (a *Admission) drop(tk Ticket) {
	if n := a.running[tk.owner] - 1; n > 0 {
		a.running[tk.owner] = n
	} else {
		delete(a.running, tk.owner)
	}
	a.memory -= tk.memory
}

// Hand moves the accounting of a worker from the task it ran to the next
// one it runs at once.
func (a *Admission) Hand(from Ticket, to *store.Task) Ticket {
	tk := a.TicketOf(to)
	a.mu.Lock()
	a.drop(from)
	a.take(tk)
	a.mu.Unlock()
	return tk
}

// TryStart admits a task of owner that would start at once, without a
// trip through the queue: the clients the engine knows of are those
// running. It counts the task when it admits it.
func (a *Admission) TryStart(owner string, memoryLimit int64) (Ticket, bool) {
	tk := Ticket{owner: owner, memory: a.LimitOf(memoryLimit)}
	a.mu.Lock()
	defer a.mu.Unlock()
	active := len(a.running)
	if a.running[owner] == 0 {
		active++
	}
	if !a.mayTake(owner, tk.memory, active > 1, active) {
		a.refused = true
		return Ticket{}, false
	}
	a.take(tk)
	return tk, true
}

// Fits reports whether a task with memoryLimit could ever run: its limit
// is within the whole budget.
func (a *Admission) Fits(memoryLimit int64) bool {
	return a.LimitOf(memoryLimit) <= a.budget
}

// Gate returns the store.ClaimGate of one claim.
func (a *Admission) Gate() *Gate { return &Gate{a: a} }

// Gate applies the admission rule inside one store claim, counting
// each task it admits at once; if the claim fails, abort uncounts them.
type Gate struct {
	a      *Admission
	queued []string
	taken  []Ticket
}

// Queued implements store.ClaimGate. A claim that runs again starts over.
func (g *Gate) Queued(owners []string) {
	g.Abort()
	g.queued = append(g.queued[:0], owners...)
}

// Admit implements store.ClaimGate.
func (g *Gate) Admit(owner string, memoryLimit int64) bool {
	a := g.a
	tk := Ticket{owner: owner, memory: a.LimitOf(memoryLimit)}
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

// Abort uncounts what the gate admitted.
func (g *Gate) Abort() {
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
