package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

// Envelopes of real frames: the long 7, and the null value.
var (
	env7    = mustEnvelope(codec.Long(7))
	envNull = mustEnvelope(codec.Null())
)

// TestTaskCreateDecoding sends bodies to POST /v1/tasks over HTTP and checks
// how each is parsed or refused, with its code and param.
func TestTaskCreateDecoding(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		last *runtime.TaskCreateParams
	)
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksWrite),
		TaskCreateFunc: func(_ context.Context, p *runtime.TaskCreateParams) (*store.Task, error) {
			mu.Lock()
			last = p
			mu.Unlock()
			return &store.Task{ID: "task_1", Module: p.Module, Function: p.Function, Status: store.StatusQueued, CreatedAt: time.Now()}, nil
		},
	}
	ts := MustFakeServer(t, f, Config{MaxJSONBody: 1024})
	valid := `{"module":"m","function":"f","input":` + string(mustJSON(t, env7)) + `}`

	tests := []struct {
		name   string
		body   string
		status int
		code   string
		param  string
	}{
		{name: "valid", body: valid, status: 202},
		{name: "no input means null", body: `{"module":"m","function":"f"}`, status: 202},
		{name: "null input means null", body: `{"module":"m","function":"f","input":null}`, status: 202},
		{name: "all options", body: `{"module":"m","function":"f","on_restart":"resume","timeout_ms":1500,"retry":{"initial_interval_ms":10,"backoff_coefficient":2,"maximum_interval_ms":100,"maximum_attempts":3,"non_retryable_error_types":["bad"]}}`, status: 202},
		{name: "empty body", body: ``, status: 400, code: "invalid_request"},
		{name: "malformed", body: `{"module":`, status: 400, code: "invalid_request"},
		{name: "syntax error", body: `{"module" "m"}`, status: 400, code: "invalid_request"},
		{name: "trailing data", body: valid + `{}`, status: 400, code: "invalid_request"},
		{name: "trailing garbage", body: valid + `x`, status: 400, code: "invalid_request"},
		{name: "array body", body: `[]`, status: 400, code: "invalid_request"},
		{name: "unknown field", body: `{"module":"m","function":"f","modul":"x"}`, status: 400, code: "invalid_request", param: "modul"},
		{name: "unknown nested field", body: `{"module":"m","function":"f","retry":{"max_tries":3}}`, status: 400, code: "invalid_request", param: "retry.max_tries"},
		{name: "wrong type", body: `{"module":5,"function":"f"}`, status: 400, code: "invalid_request", param: "module"},
		{name: "wrong nested type", body: `{"module":"m","function":"f","retry":{"maximum_attempts":"3"}}`, status: 400, code: "invalid_request", param: "retry.maximum_attempts"},
		{name: "fraction for integer", body: `{"module":"m","function":"f","timeout_ms":1.5}`, status: 400, code: "invalid_request", param: "timeout_ms"},
		{name: "missing module", body: `{"function":"f"}`, status: 400, code: "invalid_request", param: "module"},
		{name: "missing function", body: `{"module":"m"}`, status: 400, code: "invalid_request", param: "function"},
		{name: "bad on_restart", body: `{"module":"m","function":"f","on_restart":"later"}`, status: 400, code: "invalid_request", param: "on_restart"},
		{name: "negative timeout", body: `{"module":"m","function":"f","timeout_ms":-1}`, status: 400, code: "invalid_request", param: "timeout_ms"},
		{name: "huge timeout", body: `{"module":"m","function":"f","timeout_ms":9223372036854775807}`, status: 400, code: "invalid_request", param: "timeout_ms"},
		{name: "bad coefficient", body: `{"module":"m","function":"f","retry":{"backoff_coefficient":0.5}}`, status: 400, code: "invalid_request", param: "retry.backoff_coefficient"},
		{name: "negative attempts", body: `{"module":"m","function":"f","retry":{"maximum_attempts":-2}}`, status: 400, code: "invalid_request", param: "retry.maximum_attempts"},
		{name: "json codec", body: `{"module":"m","function":"f","input":{"codec":"json","blob":"{}"}}`, status: 422, code: "unsupported_payload_codec", param: "input"},
		{name: "codec checked first", body: `{"module":"m","function":"f","input":{"codec":"json","blob":5}}`, status: 422, code: "unsupported_payload_codec", param: "input"},
		{name: "missing codec", body: `{"module":"m","function":"f","input":{"blob":"wwE="}}`, status: 422, code: "unsupported_payload_codec", param: "input"},
		{name: "input not an object", body: `{"module":"m","function":"f","input":"wwE="}`, status: 400, code: "invalid_payload_envelope", param: "input"},
		{name: "missing blob", body: `{"module":"m","function":"f","input":{"codec":"avro"}}`, status: 400, code: "invalid_payload_envelope", param: "input"},
		{name: "extra envelope member", body: `{"module":"m","function":"f","input":{"codec":"avro","blob":"wwE=","x":1}}`, status: 400, code: "invalid_payload_envelope", param: "input"},
		{name: "oversized", body: `{"module":"m","function":"f","input":{"codec":"avro","blob":"` + strings.Repeat("A", 2048) + `"}}`, status: 413, code: "payload_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, http.MethodPost, ts.URL+"/v1/tasks", tc.body, nil)
			if tc.status == 202 {
				doc := MustDecode[map[string]any](t, resp, 202)
				require.Equal(t, "task_1", doc["id"])
				require.Equal(t, "/v1/tasks/task_1", resp.Header.Get("Location"))
				return
			}
			e := MustError(t, resp, tc.status, tc.code)
			require.Equal(t, tc.param, e.param(), "message: %s", e.Error.Message)
		})
	}

	t.Run("parsed params", func(t *testing.T) {
		body := `{"module":"m","function":"f","input":` + string(mustJSON(t, env7)) + `,"on_restart":"retry","timeout_ms":2500,"retry":{"initial_interval_ms":10,"backoff_coefficient":2,"maximum_interval_ms":100,"maximum_attempts":3,"non_retryable_error_types":["bad"]}}`
		MustDecode[map[string]any](t, do(t, http.MethodPost, ts.URL+"/v1/tasks", body, nil), 202)
		mu.Lock()
		p := last
		mu.Unlock()
		require.Equal(t, "cli_fake", p.ClientID)
		require.Equal(t, env7, p.Input)
		require.Equal(t, store.OnRestartRetry, p.OnRestart)
		require.Equal(t, int64(2500), p.TimeoutMS)
		require.Equal(t, &store.RetryPolicy{
			InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 100 * time.Millisecond,
			MaximumAttempts: 3, NonRetryableErrorTypes: []string{"bad"},
		}, p.Retry)

		MustDecode[map[string]any](t, do(t, http.MethodPost, ts.URL+"/v1/tasks", `{"module":"m","function":"f"}`, nil), 202)
		mu.Lock()
		p = last
		mu.Unlock()
		require.Equal(t, envNull, p.Input)
	})

	t.Run("oversized by content length", func(t *testing.T) {
		resp := do(t, http.MethodPost, ts.URL+"/v1/tasks", strings.Repeat(" ", 4096), nil)
		MustError(t, resp, 413, "payload_too_large")
	})
}

// TestUnknownField covers the path finder on its own.
func TestUnknownField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "top level", body: `{"module":"m","x":1}`, want: "x"},
		{name: "nested", body: `{"retry":{"y":1}}`, want: "retry.y"},
		{name: "case folded is known", body: `{"Module":"m"}`, want: ""},
		{name: "raw member is opaque", body: `{"input":{"anything":1}}`, want: ""},
		{name: "none", body: `{"module":"m"}`, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, unknownField([]byte(tc.body), typeOf[*client.TaskRequest]()))
		})
	}
}
