package httpapi

import (
	"context"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
)

// Engine is the part of the durable-execution engine the HTTP API calls.
// *runtime.Engine satisfies it; tests may hand in a fake. Every method is
// called concurrently from request goroutines and returns errors that carry a
// runtime.Code (runtime.ErrorCode), which writeError maps to a status. See
// the runtime.Engine method of the same name for each contract.
type Engine interface {
	Ready() bool

	ModuleDeploy(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	ModuleDeployCheckReplay(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	ModuleGet(ctx context.Context, name string) (*store.Module, error)
	ModuleList(ctx context.Context) ([]*store.Module, error)
	ModuleDelete(ctx context.Context, name string) error

	TaskCreate(ctx context.Context, p *runtime.TaskCreateParams) (*store.Task, error)
	TaskRun(ctx context.Context, p *runtime.TaskCreateParams) (*store.Response, error)
	TaskWait(ctx context.Context, who *runtime.Principal, id string) (*store.Response, error)
	TaskGet(ctx context.Context, who *runtime.Principal, id string) (*store.Task, error)
	TaskList(ctx context.Context, who *runtime.Principal, p *runtime.TaskListParams) ([]*store.Task, string, error)
	TaskCancel(ctx context.Context, who *runtime.Principal, id string) (*store.Task, error)
	TaskSignal(ctx context.Context, who *runtime.Principal, id, name string, payload codec.Envelope) error
	TaskSignalIdempotent(ctx context.Context, who *runtime.Principal, id, name string, payload codec.Envelope, key string, status int, body []byte) error
	EventList(ctx context.Context, who *runtime.Principal, id string, after int64, limit int) ([]*store.Event, error)
	EventSubscribe(ctx context.Context, who *runtime.Principal, id string, after int64) (<-chan *store.Event, error)
	ResponseGet(ctx context.Context, who *runtime.Principal, id string) (*store.Response, error)

	Authenticate(ctx context.Context, token string) (*runtime.Principal, error)
	PairingCreate(ctx context.Context, who *runtime.Principal, scopes []string, ttl time.Duration) (*runtime.Pairing, error)
	Pair(ctx context.Context, code, name string) (*runtime.Paired, error)
	ClientList(ctx context.Context, who *runtime.Principal) ([]*store.Client, error)
	ClientGet(ctx context.Context, who *runtime.Principal, id string) (*store.Client, error)
	ClientRevoke(ctx context.Context, who *runtime.Principal, id string) (*store.Client, error)
	ClientUpdate(ctx context.Context, who *runtime.Principal, id string, p *runtime.ClientUpdateParams) (*store.Client, error)

	IdempotencyBegin(ctx context.Context, clientID, key string, digest []byte) (*runtime.Replay, error)
	IdempotencyComplete(ctx context.Context, clientID, key string, status int, body []byte) error
	IdempotencyRelease(ctx context.Context, clientID, key string) error
}

var _ Engine = (*runtime.Engine)(nil)
