// Package fair is the engine's admission rule: which client's task may
// take a free worker, so that no client holds more than its share of the
// workers while another waits, and so that the memory limits of the calls
// in flight stay within the daemon's budget (RATIONALE.md, "Fair workers
// and a memory budget").
//
// An Admission counts, per client, the tasks that hold a worker and the
// memory their limits reserve. A store claim asks it through a Gate (a
// store.ClaimGate) for each candidate task; a task started at once, without
// the queue, asks through TryStart; a worker gives its Ticket back with
// Release when its task ends, or moves it to the next task it runs at once
// with Hand. It is safe for concurrent use and does no I/O.
package fair
