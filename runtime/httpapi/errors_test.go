package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// TestErrorTable drives every code of the status table through a real HTTP
// request and checks status, type, code and message.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   fault.Code
		status int
		typ    string
	}{
		{name: "invalid", code: fault.Invalid, status: 400, typ: "invalid_request_error"},
		{name: "envelope", code: fault.Code(codec.CodeInvalidPayloadEnvelope), status: 400, typ: "invalid_request_error"},
		{name: "projection", code: fault.Code(codec.CodeInvalidProjection), status: 400, typ: "invalid_request_error"},
		{name: "pairing expired", code: fault.PairingExpired, status: 400, typ: "invalid_request_error"},
		{name: "missing credential", code: fault.MissingCredential, status: 401, typ: "authentication_error"},
		{name: "invalid credential", code: fault.InvalidCredential, status: 401, typ: "authentication_error"},
		{name: "insufficient scope", code: fault.InsufficientScope, status: 403, typ: "permission_error"},
		{name: "not found", code: fault.NotFound, status: 404, typ: "invalid_request_error"},
		{name: "module not found", code: fault.ModuleNotFound, status: 404, typ: "invalid_request_error"},
		{name: "function not found", code: fault.FunctionNotFound, status: 404, typ: "invalid_request_error"},
		{name: "conflict", code: fault.Conflict, status: 409, typ: "invalid_request_error"},
		{name: "task not finished", code: fault.TaskNotFinished, status: 409, typ: "invalid_request_error"},
		{name: "signal target finished", code: fault.SignalTargetFinished, status: 409, typ: "invalid_request_error"},
		{name: "pairing used", code: fault.PairingUsed, status: 409, typ: "invalid_request_error"},
		{name: "key in flight", code: fault.IdempotencyKeyInFlight, status: 409, typ: "invalid_request_error"},
		{name: "too large", code: fault.PayloadTooLarge, status: 413, typ: "invalid_request_error"},
		{name: "payload limit", code: fault.Code(codec.CodePayloadLimit), status: 413, typ: "invalid_request_error"},
		{name: "key reused", code: fault.IdempotencyKeyReused, status: 422, typ: "invalid_request_error"},
		{name: "module invalid", code: fault.ModuleInvalid, status: 422, typ: "invalid_request_error"},
		{name: "codec", code: fault.Code(codec.CodeUnsupportedPayloadCodec), status: 422, typ: "invalid_request_error"},
		{name: "schema", code: fault.Code(codec.CodeUnsupportedPayloadSchema), status: 422, typ: "invalid_request_error"},
		{name: "framing", code: fault.Code(codec.CodeInvalidPayloadFraming), status: 422, typ: "invalid_request_error"},
		{name: "map key", code: fault.Code(codec.CodeInvalidMapKey), status: 422, typ: "invalid_request_error"},
		{name: "overflow", code: fault.Code(codec.CodeIntegerOverflow), status: 422, typ: "invalid_request_error"},
		{name: "non finite", code: fault.Code(codec.CodeNonFiniteFloat), status: 422, typ: "invalid_request_error"},
		{name: "rate limited", code: fault.RateLimited, status: 429, typ: "rate_limit_error"},
		{name: "internal", code: fault.Internal, status: 500, typ: "server_error"},
		{name: "unknown code", code: fault.Code("trap"), status: 500, typ: "server_error"},
		{name: "unavailable", code: fault.Unavailable, status: 503, typ: "server_error"},
		{name: "server restarted", code: fault.ServerRestarted, status: 503, typ: "server_error"},
		{name: "cancelled", code: fault.Cancelled, status: 503, typ: "server_error"},
		{name: "timeout", code: fault.Timeout, status: 504, typ: "server_error"},
	}
	var current error
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeAdmin),
		TaskGetFunc: func(context.Context, runtime.Caller, string) (*store.Task, error) {
			return nil, current
		},
	}
	ts := MustFakeServer(t, f, Config{})
	for _, tc := range tests {
		// Sequential: the fake's answer is shared.
		current = &fault.Error{Code: tc.code, Message: "told " + string(tc.code), Param: "p_" + tc.name}
		resp := do(t, http.MethodGet, ts.URL+"/v1/tasks/task_x", "", nil)
		e := MustError(t, resp, tc.status, string(tc.code))
		require.Equal(t, tc.typ, e.Error.Type, tc.name)
		require.Equal(t, "p_"+tc.name, e.param(), tc.name)
		if tc.status < 500 {
			require.Equal(t, "told "+string(tc.code), e.Error.Message, tc.name)
		}
	}
}

// TestErrorHidesInternals checks that an internal error's message shows
// nothing of its cause.
func TestErrorHidesInternals(t *testing.T) {
	t.Parallel()
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeAdmin),
		TaskGetFunc: func(context.Context, runtime.Caller, string) (*store.Task, error) {
			return nil, errors.New("open /secret/weft-data/weft.db: disk I/O error")
		},
	}
	ts := MustFakeServer(t, f, Config{})
	resp := do(t, http.MethodGet, ts.URL+"/v1/tasks/task_x", "", nil)
	e := MustError(t, resp, http.StatusInternalServerError, "internal")
	require.Equal(t, "server_error", e.Error.Type)
	require.NotContains(t, e.Error.Message, "secret")
	require.NotContains(t, strings.ToLower(e.Error.Message), "disk")
	require.Nil(t, e.Error.Param)
}

// TestHandlerPanic checks that a panicking handler answers a JSON 500 and
// the server keeps serving.
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeAdmin),
		TaskGetFunc: func(context.Context, runtime.Caller, string) (*store.Task, error) {
			panic("boom at /secret")
		},
	}
	ts := MustFakeServer(t, f, Config{})
	e := MustError(t, do(t, http.MethodGet, ts.URL+"/v1/tasks/task_x", "", nil), 500, "internal")
	require.NotContains(t, e.Error.Message, "secret")
	MustDecode[map[string]string](t, do(t, http.MethodGet, ts.URL+"/healthz", "", nil), 200)
}
