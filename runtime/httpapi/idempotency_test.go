package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func TestRequestDigest(t *testing.T) {
	t.Parallel()
	base := requestDigest("POST", "/v1/tasks", []byte(`{"module":"m","function":"f","timeout_ms":10}`))
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		same   bool
	}{
		{name: "identical", method: "POST", path: "/v1/tasks", body: `{"module":"m","function":"f","timeout_ms":10}`, same: true},
		{name: "whitespace", method: "POST", path: "/v1/tasks", body: "{ \"module\" : \"m\",\n\t\"function\":\"f\", \"timeout_ms\": 10 }\n", same: true},
		{name: "member order", method: "POST", path: "/v1/tasks", body: `{"timeout_ms":10,"function":"f","module":"m"}`, same: true},
		{name: "escaped string", method: "POST", path: "/v1/tasks", body: `{"module":"\u006d","function":"f","timeout_ms":10}`, same: true},
		{name: "other value", method: "POST", path: "/v1/tasks", body: `{"module":"m","function":"g","timeout_ms":10}`},
		{name: "number spelled differently", method: "POST", path: "/v1/tasks", body: `{"module":"m","function":"f","timeout_ms":1e1}`},
		{name: "extra member", method: "POST", path: "/v1/tasks", body: `{"module":"m","function":"f","timeout_ms":10,"on_restart":"fail"}`},
		{name: "other path", method: "POST", path: "/v1/responses", body: `{"module":"m","function":"f","timeout_ms":10}`},
		{name: "other method", method: "PUT", path: "/v1/tasks", body: `{"module":"m","function":"f","timeout_ms":10}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := requestDigest(tc.method, tc.path, []byte(tc.body))
			require.Len(t, got, 32)
			require.Equal(t, tc.same, bytes.Equal(base, got))
		})
	}
	t.Run("binary body counts byte for byte", func(t *testing.T) {
		a := requestDigest("PUT", "/v1/modules/m", fakeModule("a:activity"))
		require.Equal(t, a, requestDigest("PUT", "/v1/modules/m", fakeModule("a:activity")))
		require.NotEqual(t, a, requestDigest("PUT", "/v1/modules/m", fakeModule("b:activity")))
	})
}

// TestIdempotency drives Idempotency-Key through the real engine and store.
func TestIdempotency(t *testing.T) {
	t.Parallel()

	t.Run("Replay", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		first := b.do(t, "POST", "/v1/tasks", `{"module":"m","function":"echo","timeout_ms":5}`, hdr("Idempotency-Key", "k1"))
		firstBody := MustReadBody(t, first)
		require.Equal(t, 202, first.StatusCode, "%s", firstBody)
		require.Empty(t, first.Header.Get("Idempotent-Replayed"))

		again := b.do(t, "POST", "/v1/tasks", "{ \"timeout_ms\": 5,\n \"function\": \"echo\", \"module\": \"m\" }", hdr("Idempotency-Key", `"k1"`))
		require.Equal(t, 202, again.StatusCode)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
		require.Equal(t, string(firstBody), string(MustReadBody(t, again)), "replayed byte for byte")

		e := MustError(t, b.do(t, "POST", "/v1/tasks", `{"module":"m","function":"echo","timeout_ms":6}`, hdr("Idempotency-Key", "k1")), 422, "idempotency_key_reused")
		require.Equal(t, "Idempotency-Key", e.param())
		MustError(t, b.do(t, "POST", "/v1/responses", `{"module":"m","function":"echo","timeout_ms":5}`, hdr("Idempotency-Key", "k1")), 422, "idempotency_key_reused")

		require.Len(t, MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200).Data, 1)
	})

	t.Run("PerClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		_, other := b.pair(t, "other", "tasks:write", "tasks:read")
		body := taskBody(t, "echo")
		a := MustDecode[task](t, b.do(t, "POST", "/v1/tasks", body, hdr("Idempotency-Key", "shared")), 202)
		resp := doToken(t, other, "POST", b.url+"/v1/tasks", body, hdr("Idempotency-Key", "shared"))
		require.Empty(t, resp.Header.Get("Idempotent-Replayed"))
		o := MustDecode[task](t, resp, 202)
		require.NotEqual(t, a.ID, o.ID, "keys belong to one client")
	})

	t.Run("StoredErrorReplays", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		body := `{"module":"m","function":"missing"}`
		MustError(t, b.do(t, "POST", "/v1/tasks", body, hdr("Idempotency-Key", "e1")), 404, "function_not_found")
		resp := b.do(t, "POST", "/v1/tasks", body, hdr("Idempotency-Key", "e1"))
		require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
		MustError(t, resp, 404, "function_not_found")
	})

	t.Run("InFlight", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		body := taskBody(t, "block")
		type result struct {
			status int
			body   string
		}
		firstDone := make(chan result, 1)
		go func() {
			resp := b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "slow"))
			firstDone <- result{resp.StatusCode, string(MustReadBody(t, resp))}
		}()
		// Wait until the first request's task runs: its key is in flight.
		var id string
		select {
		case id = <-b.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the task never started")
		}
		MustError(t, b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "slow")), 409, "idempotency_key_in_flight")
		b.release()
		first := <-firstDone
		require.Equal(t, 200, first.status, first.body)
		require.Contains(t, first.body, strings.TrimPrefix(id, "task_"))

		resp := b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "slow"))
		require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.body, string(MustReadBody(t, resp)))
		require.Len(t, MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200).Data, 1)
	})

	t.Run("ClientGoneResponse", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		body := taskBody(t, "block")
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, "POST", b.url+"/v1/responses", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.admin)
		req.Header.Set("Idempotency-Key", "gone")
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		id := <-b.started
		cancel() // the client gives up while the task runs
		require.Error(t, <-errc)

		// The key still waits for the real answer rather than being freed.
		MustError(t, b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "gone")), 409, "idempotency_key_in_flight")
		b.release()
		b.waitStatus(t, id, "completed")
		var replay map[string]any
		require.Eventually(t, func() bool {
			resp := b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "gone"))
			if resp.StatusCode != 200 {
				return false
			}
			require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
			replay = MustDecode[map[string]any](t, resp, 200)
			return true
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, id, replay["task_id"])
		require.Equal(t, "completed", replay["status"])
		require.Len(t, MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200).Data, 1, "no second task")
	})

	t.Run("ClientGoneEngineStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		body := taskBody(t, "block")
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, "POST", b.url+"/v1/responses", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.admin)
		req.Header.Set("Idempotency-Key", "orphan")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-b.started
		cancel()
		require.NoError(t, b.engine.Close(t.Context()))
		// The waiting handler ends with the engine; the key stays bound to
		// its task, and a retry is served (503, the engine is closed), not
		// refused as in flight.
		require.Eventually(t, func() bool {
			resp := b.do(t, "POST", "/v1/responses", body, hdr("Idempotency-Key", "orphan"))
			MustReadBody(t, resp)
			return resp.StatusCode == 503
		}, 10*time.Second, 20*time.Millisecond)
	})

	t.Run("Parallel50", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		body := taskBody(t, "echo")
		const n = 50
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
			ids      = map[string]bool{}
		)
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				resp := b.do(t, "POST", "/v1/tasks", body, hdr("Idempotency-Key", "burst"))
				raw := MustReadBody(t, resp)
				mu.Lock()
				defer mu.Unlock()
				statuses[resp.StatusCode]++
				switch resp.StatusCode {
				case 202:
					var tk task
					if err := json.Unmarshal(raw, &tk); err != nil {
						t.Errorf("decode task: %v", err)
					}
					ids[tk.ID] = true
				case 409:
					if !strings.Contains(string(raw), `"idempotency_key_in_flight"`) {
						t.Errorf("409 without idempotency_key_in_flight: %s", raw)
					}
				default:
					t.Errorf("unexpected %d: %s", resp.StatusCode, raw)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, n, statuses[202]+statuses[409], "statuses: %v", statuses)
		require.GreaterOrEqual(t, statuses[202], 1)
		require.Len(t, ids, 1, "every 202 names the same task")
		list := MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200)
		require.Len(t, list.Data, 1, "exactly one task was created")
	})

	t.Run("ModuleAndPairing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		wasm := string(fakeModule("x:activity"))
		first := b.do(t, "PUT", "/v1/modules/x", wasm, hdr("Idempotency-Key", "deploy"))
		firstBody := MustReadBody(t, first)
		require.Equal(t, 201, first.StatusCode)
		again := b.do(t, "PUT", "/v1/modules/x", wasm, hdr("Idempotency-Key", "deploy"))
		require.Equal(t, 201, again.StatusCode)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, "/v1/modules/x", again.Header.Get("Location"))
		require.Equal(t, firstBody, MustReadBody(t, again))
		MustError(t, b.do(t, "PUT", "/v1/modules/x", string(fakeModule("y:activity")), hdr("Idempotency-Key", "deploy")), 422, "idempotency_key_reused")

		pairing := b.do(t, "POST", "/v1/pairings", `{}`, hdr("Idempotency-Key", "pair"))
		require.Equal(t, "no-store", pairing.Header.Get("Cache-Control"))
		p1 := MustDecode[map[string]any](t, pairing, 201)
		require.NotEmpty(t, p1["code"])
		// The code is shown once: a replay makes no second code and shows
		// none.
		replay := b.do(t, "POST", "/v1/pairings", `{}`, hdr("Idempotency-Key", "pair"))
		require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
		MustError(t, replay, 409, "idempotency_secret_not_replayed")
	})

	t.Run("BadKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		for _, h := range []http.Header{
			hdr("Idempotency-Key", strings.Repeat("k", 256)),
			hdr("Idempotency-Key", ""),
			hdr("Idempotency-Key", "has space"),
			hdr("Idempotency-Key", "a", "Idempotency-Key", "b"),
		} {
			e := MustError(t, b.do(t, "POST", "/v1/tasks", taskBody(t, "echo"), h), 400, "invalid_request")
			require.Equal(t, "Idempotency-Key", e.param())
		}
		require.Empty(t, MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200).Data)
	})
}

// TestIdempotencyRelease injects failures: a 5xx answer or a panic must
// release the key, anything else must complete it with the exact answer.
func TestIdempotencyRelease(t *testing.T) {
	t.Parallel()
	type call struct {
		op     string
		status int
		body   string
	}
	tests := []struct {
		name   string
		create func() (*store.Task, error)
		status int
		want   call
	}{
		{name: "success stores with the task", create: func() (*store.Task, error) {
			return &store.Task{ID: "task_1", Status: store.StatusQueued}, nil
		}, status: 202, want: call{op: "insert", status: 202}},
		{name: "client error completes", create: func() (*store.Task, error) {
			return nil, fault.Errorf(fault.ModuleNotFound, "no module")
		}, status: 404, want: call{op: "complete", status: 404}},
		{name: "server error releases", create: func() (*store.Task, error) {
			return nil, fault.Errorf(fault.Unavailable, "shutting down")
		}, status: 503, want: call{op: "release"}},
		{name: "internal error releases", create: func() (*store.Task, error) {
			return nil, context.DeadlineExceeded
		}, status: 504, want: call{op: "release"}},
		{name: "panic releases", create: func() (*store.Task, error) {
			panic("handler bug")
		}, status: 500, want: call{op: "release"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu    sync.Mutex
				calls []call
			)
			f := &fakeEngine{
				AuthenticateFunc: fakeAuth(scopeTasksWrite),
				IdempotencyBeginFunc: func(_ context.Context, clientID, key string, digest []byte) (*access.Replay, error) {
					require.Equal(t, "cli_fake", clientID)
					require.Equal(t, "key", key)
					require.Len(t, digest, 32)
					return nil, nil
				},
				IdempotencyCompleteFunc: func(_ context.Context, _, _ string, status int, body []byte) error {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, call{op: "complete", status: status, body: string(body)})
					return nil
				},
				IdempotencyReleaseFunc: func(context.Context, string, string) error {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, call{op: "release"})
					return nil
				},
				TaskCreateFunc: func(_ context.Context, p *runtime.TaskCreateParams) (*store.Task, error) {
					task, err := tc.create()
					if err != nil {
						return nil, err
					}
					require.NotNil(t, p.Idempotency, "the answer is stored with the task")
					body, err := p.Idempotency.Body(task)
					require.NoError(t, err)
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, call{op: "insert", status: p.Idempotency.StatusCode, body: string(body)})
					return task, nil
				},
			}
			ts := MustFakeServer(t, f, Config{})
			resp := do(t, "POST", ts.URL+"/v1/tasks", `{"module":"m","function":"f"}`, hdr("Idempotency-Key", "key"))
			body := MustReadBody(t, resp)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, calls, 1)
			if tc.want.op == "complete" || tc.want.op == "insert" {
				tc.want.body = string(body)
			}
			require.Equal(t, tc.want, calls[0])
		})
	}

	t.Run("begin error", func(t *testing.T) {
		t.Parallel()
		created := false
		f := &fakeEngine{
			AuthenticateFunc: fakeAuth(scopeTasksWrite),
			IdempotencyBeginFunc: func(context.Context, string, string, []byte) (*access.Replay, error) {
				return nil, &fault.Error{Code: fault.IdempotencyKeyInFlight, Message: "busy", Param: "Idempotency-Key"}
			},
			TaskCreateFunc: func(context.Context, *runtime.TaskCreateParams) (*store.Task, error) {
				created = true
				return nil, nil
			},
		}
		ts := MustFakeServer(t, f, Config{})
		MustError(t, do(t, "POST", ts.URL+"/v1/tasks", `{"module":"m","function":"f"}`, hdr("Idempotency-Key", "key")), 409, "idempotency_key_in_flight")
		require.False(t, created)
	})
}
