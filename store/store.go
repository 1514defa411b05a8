package store

import (
	"context"
	"errors"
)

// Sentinel errors returned by every Store implementation. Methods wrap them
// with context; test them with errors.Is.
var (
	// ErrNotFound reports that the task, event, response, client, pairing,
	// module, idempotency key or service record asked for does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict reports a lost compare-and-set: the task was not in one of
	// the statuses the caller expected. The method returns the task as it is
	// now beside the error.
	ErrConflict = errors.New("store: conflict")
	// ErrExists reports a unique record that already exists, such as a task
	// id, a client token hash or a pairing code hash.
	ErrExists = errors.New("store: already exists")
	// ErrInvalid reports params that break the contract: a missing field, an
	// unknown status, a transition the state machine does not have, an event
	// payload that is not JSON.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrTaskFinished reports a write to the log of a task whose terminal
	// event has been written: a finished task's log never grows.
	ErrTaskFinished = errors.New("store: task finished")
	// ErrCancelRequested reports a cancel request (EventAppendParams.
	// CancelRequest) of a workflow that was asked to cancel before.
	ErrCancelRequested = errors.New("store: cancel requested before")
	// ErrRevoked reports a client whose access was revoked.
	ErrRevoked = errors.New("store: client revoked")
	// ErrExpired reports a pairing code past its expiry.
	ErrExpired = errors.New("store: expired")
	// ErrUsed reports a pairing code that was already redeemed.
	ErrUsed = errors.New("store: already used")
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("store: closed")
	// ErrLeaseLost reports a write fenced by a lease token (a runner's
	// write for a task it claimed) whose lease the task no longer holds:
	// it was taken over by another host, or released. The write changed
	// nothing; the method returns the task as it is now beside the error,
	// as for ErrConflict.
	ErrLeaseLost = errors.New("store: lease lost")
	// ErrWorkflowIDInUse reports a workflow task inserted with the workflow
	// id of an open run (queued, loading, running or cancelling) of the
	// same owner.
	ErrWorkflowIDInUse = errors.New("store: workflow id in use")
	// ErrWorkflowIDReuse reports a workflow task inserted with the workflow
	// id of an ended run that its reuse policy does not let it take.
	ErrWorkflowIDReuse = errors.New("store: workflow id reuse refused")
	// ErrLimit reports an insert past a bound the caller set, such as the
	// number of schedules of one owner.
	ErrLimit = errors.New("store: limit reached")
)

// Store is the persistence contract of weft (persistence §11). Every method
// is safe for concurrent use. A write method returns only after its
// transaction is durably committed; each names the sentinels it returns, and
// any method may also return ErrClosed, an error of the backend's own (such
// as store/sqlite's ErrReadOnly) or a wrapped I/O error. A method with a
// params struct returns ErrInvalid for params whose Validate method refuses
// them, before it reads or writes anything. Times are stored and returned at
// millisecond precision, in UTC (see the package doc).
//
// # Notes
//
// Implementations live in this repository (store/sqlite, store/postgres)
// and must pass store/storetest. Consumers should declare the smaller interface they need.
type Store interface {
	// ServiceInit creates the service identity on first start, together with
	// the admin client in params when given, in one transaction. On later
	// starts it returns the stored identity and creates nothing.
	ServiceInit(ctx context.Context, params *ServiceInitParams) (*ServiceInitResult, error)
	// ServiceGet returns the service identity and configuration, or
	// ErrNotFound before ServiceInit.
	ServiceGet(ctx context.Context) (*ServiceConfig, error)
	// ServiceUpdate changes the service configuration (retention settings).
	// It returns ErrNotFound before ServiceInit and ErrInvalid for a
	// negative period.
	ServiceUpdate(ctx context.Context, params *ServiceUpdateParams) (*ServiceConfig, error)

	// ClientInsert stores a client. It returns ErrExists when the token hash
	// is taken and ErrInvalid for a missing name or hash.
	ClientInsert(ctx context.Context, params *ClientInsertParams) (*Client, error)
	// ClientGet returns a client by id, revoked or not, or ErrNotFound.
	ClientGet(ctx context.Context, id string) (*Client, error)
	// ClientGetByTokenHash returns the active client whose token hashes to
	// hash. It returns ErrNotFound for an unknown hash and ErrRevoked, with
	// the client, for a revoked one.
	ClientGetByTokenHash(ctx context.Context, hash []byte) (*Client, error)
	// ClientList returns every client, oldest first.
	ClientList(ctx context.Context) ([]*Client, error)
	// ClientRevoke revokes a client at once; revoking twice keeps the first
	// time. It returns ErrNotFound for an unknown id.
	ClientRevoke(ctx context.Context, id string) (*Client, error)
	// ClientUpdate changes a client's settings and returns it. It returns
	// ErrNotFound for an unknown id and ErrInvalid for a negative limit.
	ClientUpdate(ctx context.Context, params *ClientUpdateParams) (*Client, error)

	// PairingInsert stores a single-use pairing code by its hash. It returns
	// ErrExists when the hash is taken and ErrInvalid for a missing hash or
	// expiry.
	PairingInsert(ctx context.Context, params *PairingInsertParams) (*Pairing, error)
	// PairingRedeem marks a pairing code used and creates its client with the
	// code's scopes, in one transaction. It returns ErrNotFound for an
	// unknown code, ErrUsed for a redeemed one, ErrExpired for an expired one
	// and ErrExists when the new token hash is taken.
	PairingRedeem(ctx context.Context, params *PairingRedeemParams) (*Client, error)

	// ModuleInsert records a deployed module as the next version of its
	// name. Deploying the bytes of the latest version again returns that
	// version and writes nothing. It returns ErrInvalid for a bad name or
	// digest.
	ModuleInsert(ctx context.Context, params *ModuleInsertParams) (*Module, error)
	// ModuleGet returns the latest version of a module, or ErrNotFound.
	ModuleGet(ctx context.Context, name string) (*Module, error)
	// ModuleList returns the latest version of every module, by name.
	ModuleList(ctx context.Context) ([]*Module, error)
	// ModuleDelete removes every version of a module's metadata. Tasks keep
	// their pinned digest. It returns ErrNotFound for an unknown name.
	ModuleDelete(ctx context.Context, name string) error

	// TaskOverdue lists the queued tasks whose start deadline
	// (Task.StartDeadline) has passed, at most Limit of them, earliest
	// first, and the next start deadline ahead; it writes nothing. A
	// query over an index of queued tasks with a deadline: it costs
	// nothing while no task has one. Returns ErrInvalid for a bad Limit.
	TaskOverdue(ctx context.Context, params *TaskOverdueParams) (*TaskOverdueResult, error)

	// TaskInsert persists a new queued task and its response.created event
	// (sequence 0) in one transaction (persistence §11.2), with the
	// parent's journal events and the idempotency key's result when params
	// carry them. It returns ErrExists for a taken id, ErrInvalid for bad
	// params, ErrNotFound for an unknown parent or idempotency key, and
	// ErrTaskFinished when the parent has finished.
	TaskInsert(ctx context.Context, params *TaskInsertParams) (*Task, error)
	// TaskGet returns a task, or ErrNotFound.
	TaskGet(ctx context.Context, id string) (*Task, error)
	// TaskList returns one page of tasks matching params, ordered by id.
	TaskList(ctx context.Context, params *TaskListParams) ([]*Task, error)
	// TaskCount returns the number of tasks in each status (absent statuses
	// count zero).
	TaskCount(ctx context.Context) (map[Status]int, error)
	// TaskTransition moves a task from one of params.From to params.To with
	// its status event, compare-and-set (persistence §11.2). A terminal
	// status also writes the Response and the terminal event. On a lost race
	// it returns the current task and ErrConflict; with params.Lease, it
	// returns the current task and ErrLeaseLost when the task no longer
	// holds that lease. It returns ErrNotFound for an unknown task and
	// ErrInvalid for a transition the state machine does not have.
	TaskTransition(ctx context.Context, params *TaskTransitionParams) (*Task, error)
	// TaskCancel cancels a task atomically (persistence §11.2): a queued or
	// loading task becomes cancelled at once, a running one cancelling. A
	// cancelling or finished task is left as it is. It returns the task as
	// it is after the call and whether this call changed it, or ErrNotFound.
	TaskCancel(ctx context.Context, id string) (task *Task, changed bool, err error)
	// TaskClaim moves up to params.Limit eligible queued tasks (not_before at
	// or before params.Now) to loading, each with its event, and returns
	// them. Claims are fair across owner clients: round-robin over the owners
	// with eligible tasks, oldest first within an owner. The attempt counter
	// of each claimed task goes up by one (see Task.Attempt), and each gets
	// a lease for params.Host (see Task.Lease). It returns ErrInvalid for a
	// bad host or lease.
	TaskClaim(ctx context.Context, params *TaskClaimParams) ([]*Task, error)
	// TaskCheckpoint stores the last checkpoint of a loading or running task,
	// with optional journal events, in one transaction. It returns the
	// current task and ErrConflict when the task is in another status, the
	// current task and ErrLeaseLost when it no longer holds params.Lease,
	// and ErrNotFound for an unknown task.
	TaskCheckpoint(ctx context.Context, params *TaskCheckpointParams) (*Task, error)
	// TaskRecover applies the persistence §11.3 table to every unfinished
	// task at start-up, each new state with its event in one transaction,
	// and releases the idempotency keys left in flight that are bound to no
	// task (a bound key outlives a restart). Call it before any
	// work starts, on a store that is not Shared: it treats every
	// unfinished task as left over, which is wrong while other hosts run
	// theirs. A shared store's hosts use TaskReclaim instead.
	TaskRecover(ctx context.Context) (*TaskRecoverResult, error)
	// TaskReclaim takes over up to params.Limit tasks in loading, running
	// or cancelling whose lease expired (their host stopped renewing it)
	// and applies the persistence §11.3 row of each one's on_restart
	// policy, as TaskRecover does, each in the transaction that first
	// writes a task.recovered event with reason lease_expired, the previous
	// host and params.Host (see StatusEvent). A running task of policy
	// resume stays running with a fresh lease for params.Host and is
	// returned for it to continue. It never touches a task whose lease is
	// live (but, with params.Restart, those params.Host holds), or one
	// that holds none (queued, a waiting workflow); hosts reclaiming at
	// once never take the same task. With
	// params.StaleKeysAfter it also releases old in-flight idempotency keys
	// bound to no task. Safe at any time on any store; the shared-store
	// counterpart of TaskRecover. It returns ErrInvalid for bad params.
	TaskReclaim(ctx context.Context, params *TaskReclaimParams) (*TaskReclaimResult, error)
	// LeaseExtend renews, in one transaction (one statement on a shared
	// store, whatever the number of leases), every lease of params.Held that
	// params.Host still holds (the task's token is the one given), to
	// params.TTL from now by the store's clock, and returns the tasks whose
	// lease it no longer holds: their runs must stop, since every fenced
	// write for them fails with ErrLeaseLost. A lease that expired but was
	// not taken over is renewed. It also names the renewed tasks that are
	// cancelling (a cancel accepted by another host), whose calls must
	// stop. It returns ErrInvalid for bad params.
	LeaseExtend(ctx context.Context, params *LeaseExtendParams) (*LeaseExtendResult, error)

	// WorkflowCommit commits one run of a running workflow in one
	// transaction (fenced by params.Lease, and EndChild's by its Lease): its journal events, its new child activity tasks, and
	// either a wait (the workflow stays running, holds no worker, and is
	// claimable again through WorkflowClaim) or its end (a terminal status,
	// as TaskTransition writes it). It returns the current task and
	// ErrConflict when the task is not running or, for a wait, when its log
	// grew past params.LastSeq (with params.EndChild: also when the
	// workflow is not waiting); ErrConflict alone when params.EndChild's
	// task is not running; ErrNotFound for an unknown task; ErrExists for a
	// taken child id; ErrInvalid for bad params; ErrLeaseLost, with the
	// task that lost it (the workflow's beside it, or EndChild's as Ended),
	// when a lease given is no longer held. A workflow that waits or ends
	// releases its lease; StartChild's child gets a lease for params.Host.
	WorkflowCommit(ctx context.Context, params *WorkflowCommitParams) (*WorkflowCommitResult, error)
	// WorkflowClaim hands out up to params.Limit waiting workflows that fell
	// due (their wake time is at or before params.Now, or an event woke
	// them): each stops waiting and is returned running, for one worker to
	// run, with a lease for params.Host. It also returns the earliest wake
	// time still ahead. It returns ErrInvalid for a bad host or lease.
	WorkflowClaim(ctx context.Context, params *WorkflowClaimParams) (*WorkflowClaimResult, error)
	// WorkflowChildEnd moves a child activity task of a workflow to a
	// terminal status like TaskTransition, with params.ParentEvents appended
	// to the workflow's log in the same transaction; when the workflow
	// waits, it stops waiting and is handed to the caller, claimed, instead
	// of being woken for the scheduler, with a lease for params.Host.
	// params.Lease fences the child. Errors as TaskTransition.
	WorkflowChildEnd(ctx context.Context, params *TaskTransitionParams) (*WorkflowChildEndResult, error)
	// WorkflowResume makes each running workflow of params.IDs that is not waiting
	// claimable now by WorkflowClaim, and leaves a waiting one waiting: at
	// start-up, a workflow that was in the middle of a run (policy resume)
	// runs again from its journal. It gives up the leases of the
	// workflows it makes claimable. Ids of other tasks are ignored.
	WorkflowResume(ctx context.Context, params *WorkflowResumeParams) error

	// EventAppend appends events to a task's log with the next sequence
	// numbers, in one transaction. Status event types are reserved for the
	// methods that change a status. With params.Wake it also makes a queued
	// task claimable now, or a waiting workflow claimable through
	// WorkflowClaim. It returns ErrNotFound for an unknown task,
	// ErrTaskFinished for a finished one, ErrLeaseLost when the task no
	// longer holds params.Lease, and ErrInvalid for a reserved type or a
	// payload that is not JSON.
	EventAppend(ctx context.Context, params *EventAppendParams) ([]*Event, error)
	// EventList returns one page of a task's events in sequence order. It
	// returns ErrNotFound for an unknown task.
	EventList(ctx context.Context, params *EventListParams) ([]*Event, error)
	// EventWatch returns a channel that receives a value (coalesced) after
	// each commit that appends events to the task, and a function that
	// stops the watch. It does no I/O; pair it with EventList. On a shared
	// store it also fires for appends committed by other hosts, and now
	// and then with nothing new (a missed notice must not stall a reader).
	EventWatch(taskID string) (<-chan struct{}, func())
	// WorkWatch returns a channel that receives a value (coalesced) after
	// a commit that may have made work claimable (a queued task, a
	// workflow woken or set to wait for a time), and a function that stops
	// the watch. On a shared store it fires for other hosts' commits too,
	// and now and then with nothing new. A latency hint only: a claimer
	// still polls. It does no I/O.
	WorkWatch() (<-chan struct{}, func())
	// Shared reports whether several hosts may use the store at once
	// (store/postgres): then a host starts with TaskReclaim, renews its
	// leases with LeaseExtend, and never calls TaskRecover. A store that
	// is not shared (store/sqlite, one host per data directory) is
	// recovered with TaskRecover at start-up.
	Shared() bool

	// ResponseGet returns a finished task's response by response id, or
	// ErrNotFound (also while the task is unfinished).
	ResponseGet(ctx context.Context, id string) (*Response, error)

	// IdempotencyKeyBegin claims (client, key) for a request atomically: of
	// concurrent identical calls exactly one gets IdempotencyNew. An expired
	// key counts as absent. An in-flight key bound to a task (see
	// TaskInsertParams.IdempotencyTask) gives IdempotencyTask. It returns
	// ErrInvalid for missing fields.
	IdempotencyKeyBegin(ctx context.Context, params *IdempotencyKeyBeginParams) (*IdempotencyKeyBeginResult, error)
	// IdempotencyKeyComplete stores the result of an in-flight key. It
	// returns ErrNotFound unless the key is in flight.
	IdempotencyKeyComplete(ctx context.Context, params *IdempotencyKeyCompleteParams) error
	// IdempotencyKeyRelease deletes an in-flight key whose request failed
	// before it changed anything. A key bound to a task is kept, since its
	// task was committed: the call then changes nothing and returns nil. It
	// returns ErrNotFound unless the key is in flight, and ErrInvalid for
	// missing fields.
	IdempotencyKeyRelease(ctx context.Context, params *IdempotencyKeyReleaseParams) error

	// RetentionPurge deletes finished tasks whose finish time is before
	// params.OlderThan, with their events and responses, and idempotency
	// keys expired by now, in batches of at most params.Batch rows, each its
	// own short transaction. It never touches an unfinished task
	// (persistence §11.2). It returns ErrInvalid for a missing cutoff or a
	// negative batch.
	RetentionPurge(ctx context.Context, params *RetentionPurgeParams) (*RetentionPurgeResult, error)

	// ScheduleInsert stores a new schedule. It returns ErrExists when the
	// owner has a schedule of that id, ErrLimit when the owner has
	// params.MaxPerOwner schedules, and ErrInvalid for bad params.
	ScheduleInsert(ctx context.Context, params *ScheduleInsertParams) (*Schedule, error)
	// ScheduleGet returns an owner's schedule, or ErrNotFound.
	ScheduleGet(ctx context.Context, owner, id string) (*Schedule, error)
	// ScheduleList returns one page of an owner's schedules, ordered by id.
	ScheduleList(ctx context.Context, params *ScheduleListParams) ([]*Schedule, error)
	// ScheduleUpdate writes a schedule's new state (pause, resume)
	// compare-and-set on its version, and returns it. It returns
	// ErrNotFound for an unknown schedule, the current schedule and
	// ErrConflict when its version moved, and ErrInvalid for bad params.
	ScheduleUpdate(ctx context.Context, params *ScheduleUpdateParams) (*Schedule, error)
	// ScheduleDelete deletes a schedule and its run rows; the runs' tasks
	// are left alone. It returns ErrNotFound for an unknown schedule.
	ScheduleDelete(ctx context.Context, owner, id string) error
	// ScheduleDue lists the schedules whose next run is due by
	// params.Now, earliest first, and the next due time ahead; it writes
	// nothing. A query over an index of the unpaused schedules' next run
	// times. It returns ErrInvalid for bad params.
	ScheduleDue(ctx context.Context, params *ScheduleDueParams) (*ScheduleDueResult, error)
	// ScheduleTick commits one pass of the scheduler over a schedule in one
	// transaction: compare-and-set on its version and cursor, it moves the
	// cursor, sets the next run time, the buffered run and the counts, and
	// inserts each run's task (as TaskInsert) with its run row, deleting
	// now and then the run rows past ScheduleRunsKept. Of callers racing on one
	// version, exactly one commits: the others get the current schedule
	// and ErrConflict, and nothing is written. It returns ErrNotFound for
	// an unknown schedule, ErrExists for a run key or task id taken,
	// ErrInvalid for bad params, and the errors of TaskInsert for a task.
	ScheduleTick(ctx context.Context, params *ScheduleTickParams) (*ScheduleTickResult, error)
	// ScheduleRuns returns the latest runs of a schedule, newest first, at
	// most ScheduleRunsKept. It returns ErrNotFound for an unknown
	// schedule.
	ScheduleRuns(ctx context.Context, owner, id string) ([]*ScheduleRun, error)

	// PayloadScan calls fn for every stored durable value and every stored
	// JSON document that may hold envelopes, for the pre-deploy preflight.
	// It reads only. An error from fn stops the scan and is returned.
	PayloadScan(ctx context.Context, fn func(*ScannedPayload) error) error
}
