package httpapi

import (
	"context"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// The services below are what the handlers call, one per resource of the
// API: *runtime.Engine provides those of the durable-execution engine
// (Engine), *modules.Registry the ModuleService (runtime.Engine.Modules)
// and *access.Service those of access control (Access); tests may hand in
// fakes. Every method is called concurrently from request
// goroutines and returns errors that carry a fault.Code (fault.CodeOf),
// which writeError maps to a status; an error without one is answered 500
// internal. No method checks a scope: the routes do, once per request (see
// routeTable). A method that takes a runtime.Caller shows the caller only
// what it may see (its own tasks, or every client's for an admin) and hides
// the rest as fault.NotFound, and one that takes a ctx returns ctx's error
// once ctx ends.

// ReadinessService reports whether the engine accepts work (GET /readyz,
// and POST /v1/responses when its wait ends).
type ReadinessService interface {
	// Ready reports whether the engine is open and accepting work.
	Ready() bool
	// StoreError reports why the store keeps an open engine from being
	// ready (it refuses writes), or nil when the store takes writes.
	StoreError() error
}

// AuthService turns bearer tokens into principals, for every request but
// the health, metrics and pairing endpoints.
type AuthService interface {
	// Authenticate returns the client a bearer token belongs to, read anew
	// on every call. It returns fault.MissingCredential for an empty token
	// and fault.InvalidCredential for a malformed, unknown or revoked one.
	Authenticate(ctx context.Context, token string) (*access.Principal, error)
}

// ModuleService deploys and reads modules (/v1/modules), as
// *modules.Registry provides it.
type ModuleService interface {
	// Deploy validates a module and records it as the next version of
	// name; the bytes of the latest version again return that version. It
	// returns fault.Invalid for a bad name or an empty module and
	// fault.ModuleInvalid for a module the executor rejects.
	Deploy(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	// DeployCheckReplay deploys like Deploy once no running
	// workflow of name would diverge on replay under the new version;
	// otherwise it deploys nothing and returns fault.ReplayDivergence.
	// It returns Deploy's codes too.
	DeployCheckReplay(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	// Get returns the latest version of a module, or
	// fault.ModuleNotFound.
	Get(ctx context.Context, name string) (*store.Module, error)
	// List returns the latest version of every module, by name.
	List(ctx context.Context) ([]*store.Module, error)
	// Delete removes every version of a module's metadata; tasks
	// already created keep their pinned digest. It returns
	// fault.ModuleNotFound for an unknown name.
	Delete(ctx context.Context, name string) error
}

// TaskService creates, runs, reads, cancels and signals tasks (/v1/tasks,
// and POST /v1/responses, which runs a task and waits for it).
type TaskService interface {
	// TaskCreate persists a queued task, owned by p.ClientID, before it
	// returns. It returns
	// fault.Invalid (with Param) for bad params,
	// fault.MemoryLimitTooHigh for a memory limit above the
	// ceiling, fault.ModuleNotFound, fault.FunctionNotFound, a
	// codec code for a bad input envelope and fault.Unavailable when
	// the engine is not open.
	TaskCreate(ctx context.Context, p *runtime.TaskCreateParams) (*store.Task, error)
	// TaskRun creates a task like TaskCreate, with its codes, and waits
	// until it finishes and returns its response. When ctx ends first it
	// returns ctx's error and the task goes on.
	TaskRun(ctx context.Context, p *runtime.TaskCreateParams) (*store.Response, error)
	// TaskWait waits until a task the caller may see finishes and returns
	// its response (a retry of POST /v1/responses whose task was committed
	// before a crash). It returns fault.NotFound for a task the caller may
	// not see and fault.Unavailable when the engine is not open.
	TaskWait(ctx context.Context, who runtime.Caller, id string) (*store.Response, error)
	// TaskGet returns a task the caller may see; it returns
	// fault.NotFound for an unknown id or another client's task.
	TaskGet(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	// TaskList returns one page of the tasks the caller may see, newest
	// first, and the cursor of the next page ("" on the last). It returns
	// fault.Invalid for an unknown status or a bad cursor.
	TaskList(ctx context.Context, who runtime.Caller, p *runtime.TaskListParams) ([]*store.Task, string, error)
	// TaskCancel cancels a task and returns it as it is after the call;
	// cancelling a cancelling or finished task changes nothing. It returns
	// fault.NotFound for a task the caller may not see.
	TaskCancel(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	// TaskTerminate ends a task at once, without a workflow's say, and
	// returns it as it is after the call; terminating a cancelling or
	// finished task changes nothing. Errors as TaskCancel.
	TaskTerminate(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	// TaskSignal appends a named signal to an unfinished workflow task, once
	// and in order, and wakes it. It returns fault.NotFound for a task the caller may not see,
	// fault.SignalTargetFinished for a finished task,
	// fault.SignalLimitExceeded when the task holds too many
	// unconsumed signals, and fault.Invalid for an activity task, a
	// bad name or payload.
	TaskSignal(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope) error
	// TaskSignalIdempotent is TaskSignal, with its codes, under the
	// caller's in-flight idempotency key: the key is completed with status
	// and body in the transaction that appends the signal. It returns
	// fault.Conflict when the key is not in flight.
	TaskSignalIdempotent(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope, key string, status int, body []byte) error
	// TaskQuery answers the query name of a workflow task the caller may
	// see by replaying its journal, changing nothing. It returns the codes
	// of runtime.Engine.TaskQuery.
	TaskQuery(ctx context.Context, who runtime.Caller, id, name string, input codec.Envelope) (*runtime.QueryAnswer, error)
	// WorkflowRun returns the latest run of the caller's workflow id (the
	// open one while there is one). It returns fault.Invalid for a bad id
	// and fault.NotFound when the caller has no run of that id.
	WorkflowRun(ctx context.Context, who runtime.Caller, workflowID string) (*store.Task, error)
}

// EventService reads a task's event log (/v1/tasks/{id}/events, as a page
// or an SSE stream).
type EventService interface {
	// EventList returns up to limit events of a task the caller may see,
	// those with a sequence number above after (−1 for the whole log), in
	// order. It returns fault.NotFound for a task the caller may not see.
	EventList(ctx context.Context, who runtime.Caller, id string, after int64, limit int) ([]*store.Event, error)
	// EventSubscribe streams the log of a task the caller may see: the
	// stored events above after, then each new one after its commit, each
	// exactly once and in order. The channel is closed after the terminal
	// event, when ctx ends, or when the task disappears or the store fails.
	// It returns fault.NotFound for a task the caller may not see.
	EventSubscribe(ctx context.Context, who runtime.Caller, id string, after int64) (<-chan *store.Event, error)
}

// ResponseService reads the responses of finished tasks
// (GET /v1/responses/{id}).
type ResponseService interface {
	// ResponseGet returns the response of a finished task the caller may
	// see. It returns fault.TaskNotFinished while the task runs and fault.NotFound for an unknown id or
	// another client's response.
	ResponseGet(ctx context.Context, who runtime.Caller, id string) (*store.Response, error)
}

// ClientService pairs and manages clients (/v1/pairings, /v1/pair,
// /v1/clients).
type ClientService interface {
	// PairingCreate makes a single-use pairing code that grants scopes (the
	// default pairing scopes when empty) until ttl passes (the service's
	// default when zero); by is the asking client, for the log. It returns
	// fault.Invalid for an unknown scope or a bad ttl.
	PairingCreate(ctx context.Context, by string, scopes []string, ttl time.Duration) (*access.Pairing, error)
	// Pair redeems a pairing code: it creates a client named name with the
	// code's scopes and returns its token, once. It returns
	// fault.RateLimited, fault.Invalid for a bad name,
	// fault.InvalidCredential for an unknown code,
	// fault.PairingUsed and fault.PairingExpired.
	Pair(ctx context.Context, code, name string) (*access.Paired, error)
	// ClientList returns every client, oldest first, revoked ones included.
	ClientList(ctx context.Context) ([]*store.Client, error)
	// ClientGet returns a client, or fault.NotFound.
	ClientGet(ctx context.Context, id string) (*store.Client, error)
	// ClientRevoke revokes a client at once; revoking twice keeps the first
	// time. It returns fault.NotFound for an unknown id.
	ClientRevoke(ctx context.Context, id string) (*store.Client, error)
	// ClientUpdate changes a client's settings (its ceiling on task memory
	// limits). It returns fault.NotFound for an unknown id and
	// fault.Invalid (param max_memory_limit_bytes) for a limit out of
	// range.
	ClientUpdate(ctx context.Context, id string, p *access.ClientUpdateParams) (*store.Client, error)
}

// IdempotencyService holds the Idempotency-Key of the mutating requests
// that carry one.
type IdempotencyService interface {
	// IdempotencyBegin claims a client's key for one request: of
	// concurrent calls with one key exactly one gets (nil, nil) and must
	// end with IdempotencyComplete, IdempotencyRelease or
	// IdempotencyCompleted; a key done with the same digest gives its
	// Replay. It returns fault.IdempotencyKeyReused for a different
	// digest, fault.IdempotencyKeyInFlight while the first request runs
	// and fault.Invalid for a malformed key.
	IdempotencyBegin(ctx context.Context, clientID, key string, digest []byte) (*access.Replay, error)
	// IdempotencyComplete stores the answer of the request that holds the
	// key, for later requests with the key and digest. It returns
	// fault.Conflict unless the key is in flight.
	IdempotencyComplete(ctx context.Context, clientID, key string, status int, body []byte) error
	// IdempotencyCompleted ends the hold on a key that the request's
	// engine call completed in its own transaction (a keyed TaskCreate or
	// TaskSignalIdempotent).
	IdempotencyCompleted(clientID, key string)
	// IdempotencyRelease forgets a key whose request changed nothing, so
	// that the client can try again with it; a key bound to a committed
	// task is kept. It returns fault.Conflict unless the key is in
	// flight.
	IdempotencyRelease(ctx context.Context, clientID, key string) error
}

// Engine is the engine's services at once, as *runtime.Engine provides
// them: Config.Engine fills each of them that a Config does not set on its
// own.
type Engine interface {
	ReadinessService
	TaskService
	EventService
	ResponseService
}

// Access is the access-control services at once, as *access.Service
// provides them: Config.Access fills each of them that a Config does not
// set on its own.
type Access interface {
	AuthService
	ClientService
	IdempotencyService
}

// *runtime.Engine and *access.Service provide every service.
var (
	_ Engine           = (*runtime.Engine)(nil)
	_ ReadinessService = (*runtime.Engine)(nil)
	_ TaskService      = (*runtime.Engine)(nil)
	_ EventService     = (*runtime.Engine)(nil)
	_ ResponseService  = (*runtime.Engine)(nil)
	_ ModuleService    = (*modules.Registry)(nil)

	_ Access             = (*access.Service)(nil)
	_ AuthService        = (*access.Service)(nil)
	_ ClientService      = (*access.Service)(nil)
	_ IdempotencyService = (*access.Service)(nil)
)
