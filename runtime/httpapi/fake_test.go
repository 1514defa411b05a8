package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// fakeEngine is an Engine and an Access, every service at once, whose every method is a
// func field, for failure injection: a test sets the fields it needs. A
// method whose field is nil answers not_found, so a forgotten field fails
// the test visibly; Ready answers true and StoreError nil.
type fakeEngine struct {
	ReadyFunc                func() bool
	StoreErrorFunc           func() error
	ModuleDeployFunc         func(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	ModuleDeployCheckFunc    func(ctx context.Context, name string, wasm []byte) (*store.Module, error)
	ModuleGetFunc            func(ctx context.Context, name string) (*store.Module, error)
	ModuleListFunc           func(ctx context.Context) ([]*store.Module, error)
	ModuleDeleteFunc         func(ctx context.Context, name string) error
	TaskCreateFunc           func(ctx context.Context, p *runtime.TaskCreateParams) (*store.Task, error)
	TaskRunFunc              func(ctx context.Context, p *runtime.TaskCreateParams) (*store.Response, error)
	TaskWaitFunc             func(ctx context.Context, who runtime.Caller, id string) (*store.Response, error)
	TaskSignalIdempotentFunc func(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope, key string, status int, body []byte) error
	TaskQueryFunc            func(ctx context.Context, who runtime.Caller, id, name string, input codec.Envelope) (*runtime.QueryAnswer, error)
	WorkflowRunFunc          func(ctx context.Context, who runtime.Caller, workflowID string) (*store.Task, error)
	TaskGetFunc              func(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	TaskListFunc             func(ctx context.Context, who runtime.Caller, p *runtime.TaskListParams) ([]*store.Task, string, error)
	TaskCancelFunc           func(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	TaskTerminateFunc        func(ctx context.Context, who runtime.Caller, id string) (*store.Task, error)
	TaskSignalFunc           func(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope) error
	EventListFunc            func(ctx context.Context, who runtime.Caller, id string, after int64, limit int) ([]*store.Event, error)
	EventSubscribeFunc       func(ctx context.Context, who runtime.Caller, id string, after int64) (<-chan *store.Event, error)
	ResponseGetFunc          func(ctx context.Context, who runtime.Caller, id string) (*store.Response, error)
	AuthenticateFunc         func(ctx context.Context, token string) (*access.Principal, error)
	PairingCreateFunc        func(ctx context.Context, by string, scopes []string, ttl time.Duration) (*access.Pairing, error)
	PairFunc                 func(ctx context.Context, code, name string) (*access.Paired, error)
	ClientListFunc           func(ctx context.Context) ([]*store.Client, error)
	ClientGetFunc            func(ctx context.Context, id string) (*store.Client, error)
	ClientRevokeFunc         func(ctx context.Context, id string) (*store.Client, error)
	ClientUpdateFunc         func(ctx context.Context, id string, p *access.ClientUpdateParams) (*store.Client, error)
	IdempotencyBeginFunc     func(ctx context.Context, clientID, key string, digest []byte) (*access.Replay, error)
	IdempotencyCompleteFunc  func(ctx context.Context, clientID, key string, status int, body []byte) error
	IdempotencyReleaseFunc   func(ctx context.Context, clientID, key string) error
	IdempotencyCompletedFunc func(clientID, key string)

	// calls counts the calls of every method but Ready, StoreError and
	// Authenticate.
	calls atomic.Int32
}

var (
	_ Engine        = (*fakeEngine)(nil)
	_ ModuleService = (*fakeEngine)(nil)
	_ Access        = (*fakeEngine)(nil)
)

var errFakeUnset = fault.Errorf(fault.NotFound, "fake engine: method not set")

func (f *fakeEngine) Ready() bool {
	if f.ReadyFunc == nil {
		return true
	}
	return f.ReadyFunc()
}

func (f *fakeEngine) StoreError() error {
	if f.StoreErrorFunc == nil {
		return nil
	}
	return f.StoreErrorFunc()
}

func (f *fakeEngine) Deploy(ctx context.Context, name string, wasm []byte) (*store.Module, error) {
	f.calls.Add(1)
	if f.ModuleDeployFunc == nil {
		return nil, errFakeUnset
	}
	return f.ModuleDeployFunc(ctx, name, wasm)
}

func (f *fakeEngine) DeployCheckReplay(ctx context.Context, name string, wasm []byte) (*store.Module, error) {
	f.calls.Add(1)
	if f.ModuleDeployCheckFunc == nil {
		return nil, errFakeUnset
	}
	return f.ModuleDeployCheckFunc(ctx, name, wasm)
}

func (f *fakeEngine) Get(ctx context.Context, name string) (*store.Module, error) {
	f.calls.Add(1)
	if f.ModuleGetFunc == nil {
		return nil, errFakeUnset
	}
	return f.ModuleGetFunc(ctx, name)
}

func (f *fakeEngine) List(ctx context.Context) ([]*store.Module, error) {
	f.calls.Add(1)
	if f.ModuleListFunc == nil {
		return nil, errFakeUnset
	}
	return f.ModuleListFunc(ctx)
}

func (f *fakeEngine) Delete(ctx context.Context, name string) error {
	f.calls.Add(1)
	if f.ModuleDeleteFunc == nil {
		return errFakeUnset
	}
	return f.ModuleDeleteFunc(ctx, name)
}

func (f *fakeEngine) TaskCreate(ctx context.Context, p *runtime.TaskCreateParams) (*store.Task, error) {
	f.calls.Add(1)
	if f.TaskCreateFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskCreateFunc(ctx, p)
}

func (f *fakeEngine) TaskRun(ctx context.Context, p *runtime.TaskCreateParams) (*store.Response, error) {
	f.calls.Add(1)
	if f.TaskRunFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskRunFunc(ctx, p)
}

func (f *fakeEngine) TaskWait(ctx context.Context, who runtime.Caller, id string) (*store.Response, error) {
	f.calls.Add(1)
	if f.TaskWaitFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskWaitFunc(ctx, who, id)
}

func (f *fakeEngine) TaskGet(ctx context.Context, who runtime.Caller, id string) (*store.Task, error) {
	f.calls.Add(1)
	if f.TaskGetFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskGetFunc(ctx, who, id)
}

func (f *fakeEngine) TaskList(ctx context.Context, who runtime.Caller, p *runtime.TaskListParams) ([]*store.Task, string, error) {
	f.calls.Add(1)
	if f.TaskListFunc == nil {
		return nil, "", errFakeUnset
	}
	return f.TaskListFunc(ctx, who, p)
}

func (f *fakeEngine) TaskCancel(ctx context.Context, who runtime.Caller, id string) (*store.Task, error) {
	f.calls.Add(1)
	if f.TaskCancelFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskCancelFunc(ctx, who, id)
}

func (f *fakeEngine) TaskTerminate(ctx context.Context, who runtime.Caller, id string) (*store.Task, error) {
	f.calls.Add(1)
	if f.TaskTerminateFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskTerminateFunc(ctx, who, id)
}

func (f *fakeEngine) TaskSignal(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope) error {
	f.calls.Add(1)
	if f.TaskSignalFunc == nil {
		return errFakeUnset
	}
	return f.TaskSignalFunc(ctx, who, id, name, payload)
}

func (f *fakeEngine) TaskSignalIdempotent(ctx context.Context, who runtime.Caller, id, name string, payload codec.Envelope, key string, status int, body []byte) error {
	f.calls.Add(1)
	if f.TaskSignalIdempotentFunc == nil {
		return errFakeUnset
	}
	return f.TaskSignalIdempotentFunc(ctx, who, id, name, payload, key, status, body)
}

func (f *fakeEngine) WorkflowRun(ctx context.Context, who runtime.Caller, workflowID string) (*store.Task, error) {
	f.calls.Add(1)
	if f.WorkflowRunFunc == nil {
		return nil, errFakeUnset
	}
	return f.WorkflowRunFunc(ctx, who, workflowID)
}

func (f *fakeEngine) TaskQuery(ctx context.Context, who runtime.Caller, id, name string, input codec.Envelope) (*runtime.QueryAnswer, error) {
	f.calls.Add(1)
	if f.TaskQueryFunc == nil {
		return nil, errFakeUnset
	}
	return f.TaskQueryFunc(ctx, who, id, name, input)
}

func (f *fakeEngine) EventList(ctx context.Context, who runtime.Caller, id string, after int64, limit int) ([]*store.Event, error) {
	f.calls.Add(1)
	if f.EventListFunc == nil {
		return nil, errFakeUnset
	}
	return f.EventListFunc(ctx, who, id, after, limit)
}

func (f *fakeEngine) EventSubscribe(ctx context.Context, who runtime.Caller, id string, after int64) (<-chan *store.Event, error) {
	f.calls.Add(1)
	if f.EventSubscribeFunc == nil {
		return nil, errFakeUnset
	}
	return f.EventSubscribeFunc(ctx, who, id, after)
}

func (f *fakeEngine) ResponseGet(ctx context.Context, who runtime.Caller, id string) (*store.Response, error) {
	f.calls.Add(1)
	if f.ResponseGetFunc == nil {
		return nil, errFakeUnset
	}
	return f.ResponseGetFunc(ctx, who, id)
}

func (f *fakeEngine) Authenticate(ctx context.Context, token string) (*access.Principal, error) {
	if f.AuthenticateFunc == nil {
		return nil, fault.Errorf(fault.InvalidCredential, "fake engine: no authenticator")
	}
	return f.AuthenticateFunc(ctx, token)
}

func (f *fakeEngine) PairingCreate(ctx context.Context, by string, scopes []string, ttl time.Duration) (*access.Pairing, error) {
	f.calls.Add(1)
	if f.PairingCreateFunc == nil {
		return nil, errFakeUnset
	}
	return f.PairingCreateFunc(ctx, by, scopes, ttl)
}

func (f *fakeEngine) Pair(ctx context.Context, code, name string) (*access.Paired, error) {
	f.calls.Add(1)
	if f.PairFunc == nil {
		return nil, errFakeUnset
	}
	return f.PairFunc(ctx, code, name)
}

func (f *fakeEngine) ClientList(ctx context.Context) ([]*store.Client, error) {
	f.calls.Add(1)
	if f.ClientListFunc == nil {
		return nil, errFakeUnset
	}
	return f.ClientListFunc(ctx)
}

func (f *fakeEngine) ClientGet(ctx context.Context, id string) (*store.Client, error) {
	f.calls.Add(1)
	if f.ClientGetFunc == nil {
		return nil, errFakeUnset
	}
	return f.ClientGetFunc(ctx, id)
}

func (f *fakeEngine) ClientRevoke(ctx context.Context, id string) (*store.Client, error) {
	f.calls.Add(1)
	if f.ClientRevokeFunc == nil {
		return nil, errFakeUnset
	}
	return f.ClientRevokeFunc(ctx, id)
}

func (f *fakeEngine) ClientUpdate(ctx context.Context, id string, p *access.ClientUpdateParams) (*store.Client, error) {
	f.calls.Add(1)
	if f.ClientUpdateFunc == nil {
		return nil, errFakeUnset
	}
	return f.ClientUpdateFunc(ctx, id, p)
}

func (f *fakeEngine) IdempotencyBegin(ctx context.Context, clientID, key string, digest []byte) (*access.Replay, error) {
	f.calls.Add(1)
	if f.IdempotencyBeginFunc == nil {
		return nil, errFakeUnset
	}
	return f.IdempotencyBeginFunc(ctx, clientID, key, digest)
}

func (f *fakeEngine) IdempotencyComplete(ctx context.Context, clientID, key string, status int, body []byte) error {
	f.calls.Add(1)
	if f.IdempotencyCompleteFunc == nil {
		return errFakeUnset
	}
	return f.IdempotencyCompleteFunc(ctx, clientID, key, status, body)
}

func (f *fakeEngine) IdempotencyRelease(ctx context.Context, clientID, key string) error {
	f.calls.Add(1)
	if f.IdempotencyReleaseFunc == nil {
		return errFakeUnset
	}
	return f.IdempotencyReleaseFunc(ctx, clientID, key)
}

func (f *fakeEngine) IdempotencyCompleted(clientID, key string) {
	f.calls.Add(1)
	if f.IdempotencyCompletedFunc != nil {
		f.IdempotencyCompletedFunc(clientID, key)
	}
}

// fakeToken is the bearer token fakeAuth accepts, for a client with scopes.
const fakeToken = "fake-token"

// fakeAuth returns an Authenticate func that accepts fakeToken as a client
// with the given scopes and rejects every other token.
func fakeAuth(scopes ...string) func(ctx context.Context, token string) (*access.Principal, error) {
	return func(_ context.Context, token string) (*access.Principal, error) {
		if token != fakeToken {
			return nil, fault.Errorf(fault.InvalidCredential, "unknown token")
		}
		return &access.Principal{ClientID: "cli_fake", Name: "fake", Scopes: scopes}, nil
	}
}

// MustFakeServer serves a Server over f on a test HTTP server.
func MustFakeServer(tb testingTB, f *fakeEngine, cfg Config) *httptest.Server {
	tb.Helper()
	cfg.Engine, cfg.Access = f, f
	if cfg.Modules == nil {
		cfg.Modules = f
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(tb)
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatalf("new server: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	return ts
}

// do sends a request with the fake token and returns the response; the body
// is closed at cleanup.
func do(tb testingTB, method, url string, body string, header http.Header) *http.Response {
	tb.Helper()
	return doToken(tb, fakeToken, method, url, body, header)
}

var _ ScheduleService = (*fakeEngine)(nil)

// The fake's schedule methods count their calls and answer not_found.

func (f *fakeEngine) ScheduleCreate(context.Context, runtime.Caller, *runtime.ScheduleCreateParams) (*runtime.Schedule, error) {
	f.calls.Add(1)
	return nil, errFakeUnset
}

func (f *fakeEngine) ScheduleGet(context.Context, runtime.Caller, string) (*runtime.Schedule, error) {
	f.calls.Add(1)
	return nil, errFakeUnset
}

func (f *fakeEngine) ScheduleList(context.Context, runtime.Caller, string, int) ([]*runtime.Schedule, string, error) {
	f.calls.Add(1)
	return nil, "", errFakeUnset
}

func (f *fakeEngine) SchedulePause(context.Context, runtime.Caller, string, string) (*runtime.Schedule, error) {
	f.calls.Add(1)
	return nil, errFakeUnset
}

func (f *fakeEngine) ScheduleResume(context.Context, runtime.Caller, string, string) (*runtime.Schedule, error) {
	f.calls.Add(1)
	return nil, errFakeUnset
}

func (f *fakeEngine) ScheduleTrigger(context.Context, runtime.Caller, string) (*runtime.ScheduleTriggerResult, error) {
	f.calls.Add(1)
	return nil, errFakeUnset
}

func (f *fakeEngine) ScheduleDelete(context.Context, runtime.Caller, string) error {
	f.calls.Add(1)
	return errFakeUnset
}
