package httpapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/store"
)

// TestServices checks how a Config wires the services: each must be set,
// on its own or through Engine, and one set on its own wins over Engine.
func TestServices(t *testing.T) {
	t.Parallel()

	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		_, err := New(Config{})
		require.ErrorContains(t, err, "no Readiness service and no engine")
		f := &fakeEngine{}
		_, err = New(Config{Readiness: f, Auth: f, Modules: f, Tasks: f, Events: f, Responses: f, Clients: f})
		require.ErrorContains(t, err, "no Idempotency service and no access")
		_, err = New(Config{Engine: f, Access: f})
		require.ErrorContains(t, err, "no Modules service and no module registry", "the engine does not fill Modules")
	})

	t.Run("EachOnItsOwn", func(t *testing.T) {
		t.Parallel()
		f := &fakeEngine{
			AuthenticateFunc: fakeAuth(access.ScopeModulesRead),
			ModuleListFunc:   func(context.Context) ([]*store.Module, error) { return nil, nil },
		}
		s, err := New(Config{
			Readiness: f, Auth: f, Modules: f, Tasks: f, Events: f, Responses: f, Clients: f, Idempotency: f,
			Logger: testLogger(t),
		})
		require.NoError(t, err)
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		require.Equal(t, 200, do(t, "GET", ts.URL+"/v1/modules", "", nil).StatusCode)
	})

	t.Run("OverrideWins", func(t *testing.T) {
		t.Parallel()
		var engineCalls, ownCalls atomic.Int32
		f := &fakeEngine{
			AuthenticateFunc: fakeAuth(access.ScopeTasksRead),
			TaskListFunc: func(context.Context, runtime.Caller, *runtime.TaskListParams) ([]*store.Task, string, error) {
				engineCalls.Add(1)
				return nil, "", nil
			},
		}
		own := &fakeEngine{TaskListFunc: func(context.Context, runtime.Caller, *runtime.TaskListParams) ([]*store.Task, string, error) {
			ownCalls.Add(1)
			return nil, "", nil
		}}
		s, err := New(Config{Engine: f, Access: f, Modules: f, Tasks: own, Logger: testLogger(t)})
		require.NoError(t, err)
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		require.Equal(t, 200, do(t, "GET", ts.URL+"/v1/tasks", "", nil).StatusCode)
		require.Equal(t, int32(1), ownCalls.Load())
		require.Equal(t, int32(0), engineCalls.Load())
	})

	t.Run("StoreRefusesWrites", func(t *testing.T) {
		t.Parallel()
		f := &fakeEngine{StoreErrorFunc: func() error { return errors.New("the store refuses writes") }}
		ts := MustFakeServer(t, f, Config{})
		e := MustError(t, doToken(t, "", "GET", ts.URL+"/readyz", "", nil), 503, "not_ready")
		require.Contains(t, e.Error.Message, "the store refuses writes")
	})
}
