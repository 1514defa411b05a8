// Package store is the persistence contract of weft: the Store interface,
// the records it reads and writes, the params structs of its methods, the
// task-status vocabulary and the sentinel errors every backend returns.
//
// The embedded default backend is store/sqlite; store/postgres serves
// hosts that share one database. store/storetest is the conformance suite
// every backend passes, method by method, and runtime/enginetest the
// end-to-end one, which runs the real engine and plugins over the backend
// (cmd/weft instantiates it for each backend, as it alone may wire
// concrete implementations). This package imports nothing from
// the rest of weft and holds durable values opaque: a Payload is a codec tag
// and the raw single-object frame, never decoded here (house style rule 4).
//
// # Atomic rules
//
// Each rule of persistence §11.2 is one Store method that owns its
// transaction:
//
//   - TaskInsert writes the task and its first event (response.created,
//     sequence 0) together, so a task is durable before the API answers 202.
//   - TaskTransition, TaskClaim and TaskCancel change a status together with
//     its event and the next sequence number; TaskTransition and TaskCancel
//     are compare-and-set, so of a cancel racing a completion exactly one
//     wins and the other sees that it lost.
//   - RetentionPurge deletes finished tasks only, in short batches.
//   - TaskRecover applies the persistence §11.3 table to every leftover task
//     at start-up, on a store one host owns; TaskReclaim applies it to the
//     tasks whose lease expired, on any store.
//
// # Leases and fencing
//
// A claim (TaskClaim, WorkflowClaim, the hand-over of WorkflowChildEnd,
// TaskInsert and WorkflowCommit with a start) gives each task it hands
// out running or loading a lease for the claiming host (params Host and
// LeaseTTL): Task.Lease names the host, a fencing token and an expiry.
// The token of a task goes up by one at every claim and takeover and is
// never reused. The expiry is counted from the store's clock: the
// database's on a shared store, so hosts whose clocks disagree agree on
// leases. A task gives its lease up when it goes back to queued, when it
// finishes, and when a workflow waits: a waiting workflow holds no lease.
//
// Every write a runner makes for a task it claimed (TaskTransition,
// TaskCheckpoint, EventAppend of its logs and progress, WorkflowCommit,
// WorkflowChildEnd) carries the token of its lease (params Lease); when
// the task no longer holds that lease, because another host took it over
// or the lease was given up, the write changes nothing and returns
// ErrLeaseLost with the task as it is. A write that is not a runner's (an
// API cancel, a signal, recovery) carries token 0 and is not fenced.
//
// A host renews all its leases in one call (LeaseExtend), which also names
// the ones it lost. Once a lease has expired, TaskReclaim on any host takes
// the task over: a task.recovered event with reason lease_expired and both
// hosts, then the persistence §11.3 cell of its policy; a running task of
// policy resume stays running under a fresh lease for the reclaiming host.
//
// A store says whether several hosts may share it (Store.Shared). A host
// of a shared store starts with TaskReclaim, never TaskRecover, and
// releases stale in-flight idempotency keys by age
// (TaskReclaimParams.StaleKeysAfter); a host of a store it owns alone
// (store/sqlite) starts with TaskRecover. EventWatch and WorkWatch on a
// shared store also fire for other hosts' commits; they are hints, and
// readers and claimers still poll.
//
// # Events
//
// Every task has an append-only log whose sequence numbers start at 0 and
// have no gaps. The first event is response.created; every status change
// appends a status event (see StatusEvent) in the same transaction; exactly
// one terminal event (response.completed, response.failed or
// response.cancelled) ends the log and carries the whole Response document.
// Event payloads are JSON documents; a durable value inside one is written as
// a {codec, blob} envelope under a key ending in "_envelope", which is the
// slot the pre-deploy preflight inspects.
//
// # Time
//
// Every time the store keeps (of tasks, events, responses, clients,
// pairings, idempotency keys, modules and the service) is stored and
// returned truncated to the millisecond, in UTC, and so are durations
// (timeouts, retention periods): a time written with nanoseconds, in any
// zone, reads back as its UTC millisecond. A time the store sets itself is
// its clock at the commit, at millisecond precision: an event's CreatedAt is
// when the transaction that appended it committed, and the times of a task
// (CreatedAt, UpdatedAt, StartedAt, FinishedAt) those of the writes that set
// them. The engine relies on this: it builds records in memory (the task a
// request is answered with before the insert, the events a workflow run
// replays before they are read back) with times truncated the same way, and
// they must equal what a later read returns.
//
// # Validation
//
// Every params struct has a Validate method holding the rules of its
// method's params; a backend calls it first and returns its ErrInvalid
// error, so every backend refuses the same params with the same message.
// ValidDigest and ValidModuleName are the forms of a module digest and a
// module name.
//
// # Usage
//
//	t, err := s.TaskInsert(ctx, &store.TaskInsertParams{
//		Module: "echo", ModuleDigest: digest, Function: "echo",
//		Input: store.Payload{Codec: "avro", Data: frame},
//	})
//	...
//	_, err = s.TaskTransition(ctx, &store.TaskTransitionParams{
//		ID: t.ID, From: []store.Status{store.StatusRunning},
//		To: store.StatusCompleted, Output: out,
//	})
//	if errors.Is(err, store.ErrConflict) {
//		// a cancel won the race
//	}
package store
