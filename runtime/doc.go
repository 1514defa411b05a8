// Package runtime is the durable-execution engine of weft: the task state
// machine, the workers that run plugin functions, retries, cancellation,
// start-up recovery, retention and the event broker. It persists everything through store.Store and reaches
// plugins through its own small Executor interface, which the daemon
// satisfies with the wazero host; it never imports the host, the SQLite
// backend or the HTTP layer (house style rule 4).
//
// # Tasks
//
// A task moves queued → loading → running → completed | failed |
// cancelled, with cancelling on the way to cancelled (BRIEF §3.3). Every
// move is one atomic store operation that writes the status and its event
// together (persistence §11.2):
//
//   - TaskCreate persists the task and its response.created event before it
//     returns, then wakes the scheduler through a channel.
//   - The scheduler claims queued tasks for idle workers (store.TaskClaim:
//     queued → loading, fair across clients). A worker loads the module (the
//     first task of a digest reads and compiles it), moves the task to
//     running, calls the plugin through Executor.Call, and completes or
//     fails the task with a compare-and-set.
//   - A failed attempt is retried by the task's retry policy: exponential
//     backoff with jitter, a maximum interval and a maximum number of
//     attempts, error types that are never retried, a per-attempt timeout
//     and a total timeout. A retry moves the task back to queued with a
//     not_before time and arms the scheduler's timer for that time; nothing
//     polls.
//   - TaskCancel cancels a queued or loading task at once; a running one
//     goes through cancelling: its call's context is cancelled and the
//     worker writes cancelled. Of a cancel racing a completion exactly one
//     wins; cancelling a finished task succeeds and changes nothing.
//
// # Start-up and shutdown
//
// Open applies the persistence §11.3 recovery table through the store and
// continues the running tasks of policy resume from their last checkpoint
// (Call.Checkpoint); plugins save checkpoints with Call.SaveCheckpoint.
// Close stops claiming, cancels the calls in progress and leaves their
// tasks as they are, for the next start's recovery to handle by their
// on_restart policy; it returns within Config.ShutdownTimeout (10 s). A
// retention loop purges finished tasks past the retention period in small
// batches and never touches an unfinished task.
//
// # Leases
//
// Every claim names this engine's host (Config.Host) and lease
// (Config.LeaseTTL, 20 s by default), and the worker passes the lease's
// fencing token on every write for the task it runs: status changes,
// checkpoints, log and progress appends, workflow commits, an activity's
// end, and the rewrites of the StoreRetry queue (see store's "Leases and
// fencing"). A write refused with store.ErrLeaseLost means another host
// owns the task now: the call is stopped, nothing more is written for the
// task, nothing is retried, and one warning says so. A heartbeat renews
// every lease the engine holds in one store.LeaseExtend each third of the
// lease; it stops the calls whose lease the store reports lost, and those
// whose task another host made cancelling (a cross-host cancel lands
// within one heartbeat). A renewal the store refuses is tried again with
// backoff; on a shared store a call whose lease ran out without a renewal
// is stopped too, since another host may have taken it over.
//
// On a shared store (Store.Shared, store/postgres) Open never calls
// TaskRecover: it takes back the tasks its own host id held (left over
// from its earlier run, so give a daemon a stable id) and any whose lease
// expired (TaskReclaim, releasing in-flight idempotency keys older than
// StaleKeysAfter), then a reclaim loop does the same every quarter of the
// lease: a dead host's tasks are taken over within the lease and a
// quarter, each per its on_restart policy after a task.recovered event
// that names both hosts. The scheduler also wakes on Store.WorkWatch, so
// work that another host queues or wakes (a task created there, a signal
// accepted there) starts here at once. Retention may run on every host:
// it deletes finished tasks only, in short idempotent batches, so hosts
// purging at once only split the work.
//
// # Workflows
//
// A workflow task runs on a worker like an activity, but its function is
// replayed over its journal (package runtime/journal): the engine loads the
// journal (from journal.Cache or the log), runs the guest with a
// journal.Replay as Call.Workflow, and commits what the run recorded with
// the workflow's next state in one store.WorkflowCommit: completed, or
// waiting for an activity, a timer or a signal. A waiting workflow holds no
// worker; the store wakes it when an activity ends, a timer falls due or a
// signal arrives, and an activity's end goes on into the workflow's next run
// on the same worker (one commit per step). Cancelling a workflow cancels
// its activities.
//
// # Events
//
// EventSubscribe replays a task's log from any sequence number and then
// delivers each new event right after its commit, exactly once and in
// order, until the terminal event.
//
// # Access
//
// Access control is package runtime/access, which this package does not
// import: tokens, clients, pairing and the Idempotency-Key of requests live
// there, and the HTTP layer checks each route's scope once, through it.
// The engine checks no scope. TaskCreate takes the owning client's id; the
// methods that read or change a task take a Caller, which only decides
// visibility: a client sees its own tasks, and another client's task is
// fault.NotFound as if it did not exist, while a Caller with All (the
// admin scope) sees every client's. A keyed TaskCreate
// (TaskCreateParams.Idempotency), TaskRun (TaskCreateParams.IdempotencyKey)
// and TaskSignalIdempotent write their idempotency key in the transaction
// of the task or the signal, so a crash never separates the two.
//
// # Errors
//
// Every error meant for clients carries a fault.Code (package runtime/fault: fault.CodeOf
// and fault.Message); the HTTP layer maps codes to statuses.
//
// # Usage
//
//	eng, err := runtime.New(runtime.Config{Store: db, Executor: exec, Modules: files, Logger: log})
//	if err != nil { ... }
//	if err := eng.Open(ctx); err != nil { ... }
//	defer eng.Close(context.Background())
//	t, err := eng.TaskCreate(ctx, &runtime.TaskCreateParams{
//		ClientID: clientID, Module: "echo", Function: "echo", Input: env,
//	})
//	r, err := eng.ResponseGet(ctx, runtime.Caller{ClientID: clientID}, store.ResponseIDFor(t.ID))
package runtime
