package httpapi

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

func TestCheckMemberNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, param string
	}{
		{"exact", `{"module":"m","function":"f"}`, ""},
		{"exact nested", `{"module":"m","retry":{"maximum_attempts":3,"non_retryable_error_types":["x"]}}`, ""},
		{"raw member left to its parser", `{"input":{"Codec":"avro","codec":"avro"}}`, ""},
		{"upper case", `{"MODULE":"m"}`, "MODULE"},
		{"title case", `{"Module":"m"}`, "Module"},
		{"nested case", `{"retry":{"Maximum_Attempts":3}}`, "retry.Maximum_Attempts"},
		{"duplicate", `{"module":"a","module":"b"}`, "module"},
		{"nested duplicate", `{"retry":{"maximum_attempts":1,"maximum_attempts":2}}`, "retry.maximum_attempts"},
		{"duplicate in raw member", `{"input":{"blob":"a","blob":"b"}}`, "input.blob"},
		{"duplicate object", `{"retry":{"non_retryable_error_types":["a"]},"retry":null}`, "retry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := checkMemberNames([]byte(tc.body), reflect.TypeFor[*client.TaskRequest]())
			if tc.param == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, fault.Invalid, fault.CodeOf(err))
			require.Equal(t, tc.param, fault.Param(err))
		})
	}

	// decodeStrict applies it after decoding.
	var q client.TaskRequest
	err := decodeStrict([]byte(`{"Function":"f"}`), &q)
	require.Equal(t, "Function", fault.Param(err))
	require.Contains(t, fault.Message(err), "case-sensitive")
}

func TestCanonicalBodyDuplicates(t *testing.T) {
	t.Parallel()
	// Two bodies that decode alike but one names a member twice never
	// share a digest.
	a := requestDigest("POST", "/v1/tasks", []byte(`{"module":"a","module":"b"}`))
	b := requestDigest("POST", "/v1/tasks", []byte(`{"module":"b"}`))
	require.NotEqual(t, a, b)
	c := requestDigest("POST", "/v1/tasks", []byte(`{ "module" : "b" }`))
	require.Equal(t, b, c, "formatting still does not matter")
}

func TestMethodLabel(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
		require.Equal(t, m, methodLabel(m))
	}
	for _, m := range []string{"get", "BREW", "XYZZYABCDEF", ""} {
		require.Equal(t, "other", methodLabel(m))
	}
}

func TestStatusHeaders(t *testing.T) {
	t.Parallel()
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeAdmin),
		PairFunc: func(context.Context, string, string) (*access.Paired, error) {
			return nil, &fault.Error{Code: fault.RateLimited, Message: "slow down", Err: fault.RetryAfter(2500 * time.Millisecond)}
		},
		IdempotencyBeginFunc: func(context.Context, string, string, []byte) (*access.Replay, error) {
			return nil, &fault.Error{Code: fault.IdempotencyKeyInFlight, Param: "Idempotency-Key", Message: "busy"}
		},
	}
	ts := MustFakeServer(t, f, Config{})

	resp := do(t, "POST", ts.URL+"/v1/pair", `{"code":"weftpair-x","name":"n"}`, nil)
	MustError(t, resp, 429, "rate_limited")
	require.Equal(t, "3", resp.Header.Get("Retry-After"), "seconds, rounded up")

	resp = do(t, "POST", ts.URL+"/v1/tasks", `{"module":"m","function":"f"}`, hdr("Idempotency-Key", "k"))
	MustError(t, resp, 409, "idempotency_key_in_flight")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/tasks", "GET, POST"},
		{"GET", "/v1/tasks/task_1/cancel", "POST"},
		{"POST", "/v1/clients/cli_1", "GET, DELETE"},
		{"PUT", "/metrics", "GET"},
	} {
		resp := do(t, c.method, ts.URL+c.path, "", nil)
		MustError(t, resp, 405, "method_not_allowed")
		require.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
	}
}

func TestSignalIdempotentStoredWithSignal(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls []string
	)
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s)
	}
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksWrite),
		IdempotencyBeginFunc: func(context.Context, string, string, []byte) (*access.Replay, error) {
			return nil, nil
		},
		IdempotencyCompleteFunc: func(context.Context, string, string, int, []byte) error {
			note("complete")
			return nil
		},
		IdempotencyReleaseFunc: func(context.Context, string, string) error {
			note("release")
			return nil
		},
		IdempotencyCompletedFunc: func(clientID, key string) { note("completed " + clientID + " " + key) },
		TaskSignalIdempotentFunc: func(_ context.Context, _ runtime.Caller, id, name string, _ codec.Envelope, key string, status int, body []byte) error {
			require.Equal(t, "k", key)
			require.Equal(t, 202, status)
			note("signal " + id + " " + name + " " + strings.TrimSpace(string(body)))
			return nil
		},
	}
	ts := MustFakeServer(t, f, Config{})
	resp := do(t, "POST", ts.URL+"/v1/tasks/task_1/signals/go", "", hdr("Idempotency-Key", "k"))
	body := MustReadBody(t, resp)
	require.Equal(t, 202, resp.StatusCode, "%s", body)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"signal task_1 go " + strings.TrimSpace(string(body)), "completed cli_fake k"}, calls,
		"the answer is stored with the signal, the key is not completed again, and the hold ends")
}

func TestResponseRetryAttachesToCommittedTask(t *testing.T) {
	t.Parallel()
	var completed []string
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksWrite, scopeTasksRead),
		IdempotencyBeginFunc: func(context.Context, string, string, []byte) (*access.Replay, error) {
			return &access.Replay{TaskID: "task_1"}, nil // committed before a crash
		},
		IdempotencyCompleteFunc: func(_ context.Context, _, _ string, status int, body []byte) error {
			completed = append(completed, string(body))
			return nil
		},
		TaskRunFunc: func(context.Context, *runtime.TaskCreateParams) (*store.Response, error) {
			t.Error("a second task was started")
			return nil, fault.Errorf(fault.Internal, "no")
		},
		TaskWaitFunc: func(_ context.Context, _ runtime.Caller, id string) (*store.Response, error) {
			require.Equal(t, "task_1", id)
			return &store.Response{ID: "resp_1", TaskID: id, Status: store.StatusCompleted}, nil
		},
	}
	ts := MustFakeServer(t, f, Config{})
	resp := do(t, "POST", ts.URL+"/v1/responses", `{"module":"m","function":"f"}`, hdr("Idempotency-Key", "k"))
	doc := MustDecode[map[string]any](t, resp, 200)
	require.Equal(t, "task_1", doc["task_id"])
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	require.Len(t, completed, 1, "the final answer is stored")
}

func TestCloseStreams(t *testing.T) {
	t.Parallel()
	events := make(chan *store.Event)
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksRead),
		EventSubscribeFunc: func(context.Context, runtime.Caller, string, int64) (<-chan *store.Event, error) {
			return events, nil // never delivers
		},
	}
	s, err := New(Config{Engine: f, Modules: f, Access: f, Logger: testLogger(t)})
	require.NoError(t, err)
	ts := httptestServer(t, s)
	resp := do(t, "GET", ts+"/v1/tasks/task_1/events", "", hdr("Accept", "text/event-stream"))
	require.Equal(t, 200, resp.StatusCode)
	ended := make(chan []byte)
	go func() { ended <- MustReadBody(t, resp) }()
	s.CloseStreams()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end at CloseStreams")
	}
	s.CloseStreams() // twice is fine

	// A stream opened afterwards ends at once.
	resp = do(t, "GET", ts+"/v1/tasks/task_1/events", "", hdr("Accept", "text/event-stream"))
	require.Equal(t, 200, resp.StatusCode)
	MustReadBody(t, resp)
}

// httptestServer serves s and returns its URL.
func httptestServer(t *testing.T, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}
