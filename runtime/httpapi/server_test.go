package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// TestServer exercises every route over real HTTP against the real engine
// and SQLite store.
func TestServer(t *testing.T) {
	t.Parallel()

	t.Run("Health", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		require.Equal(t, map[string]string{"status": "ok"}, MustDecode[map[string]string](t, doToken(t, "", "GET", b.url+"/healthz", "", nil), 200))
		require.Equal(t, map[string]string{"status": "ready"}, MustDecode[map[string]string](t, doToken(t, "", "GET", b.url+"/readyz", "", nil), 200))
	})

	t.Run("ReadyNamesTheHost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Host: "weft-2"})
		require.Equal(t, map[string]string{"status": "ready", "host": "weft-2"}, MustDecode[map[string]string](t, doToken(t, "", "GET", b.url+"/readyz", "", nil), 200))
	})

	t.Run("NotReady", func(t *testing.T) {
		t.Parallel()
		ts := MustFakeServer(t, &fakeEngine{ReadyFunc: func() bool { return false }}, Config{})
		MustError(t, doToken(t, "", "GET", ts.URL+"/readyz", "", nil), 503, "not_ready")
	})

	t.Run("Metrics", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "echo")
		b.waitStatus(t, tk.ID, "completed")
		// The finished counter moves right after the end's commit, which
		// the status shows first.
		var body string
		require.Eventually(t, func() bool {
			resp := doToken(t, "", "GET", b.url+"/metrics", "", nil)
			require.Equal(t, 200, resp.StatusCode)
			body = string(MustReadBody(t, resp))
			return strings.Contains(body, `weft_tasks_finished_total{status="completed"} 1`)
		}, 10*time.Second, 10*time.Millisecond, "the finished counter")
		require.Contains(t, body, `weft_http_requests_total{code="202",method="POST",route="/v1/tasks"} 1`)
		require.Contains(t, body, `weft_http_request_duration_seconds_count{method="GET",route="/v1/tasks/{id}"}`)
	})

	t.Run("UnknownRouteAndMethod", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		MustError(t, b.do(t, "GET", "/v1/nothing", "", nil), 404, "not_found")
		MustError(t, b.do(t, "PATCH", "/v1/tasks", "", nil), 405, "method_not_allowed")
	})

	t.Run("Modules", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		wasm := fakeModule("hello:activity", "flow:workflow")
		sum := sha256.Sum256(wasm)
		resp := b.do(t, "PUT", "/v1/modules/greeter", string(wasm), hdr("Content-Type", "application/wasm"))
		mod := MustDecode[map[string]any](t, resp, 201)
		require.Equal(t, "/v1/modules/greeter", resp.Header.Get("Location"))
		require.Equal(t, "greeter", mod["name"])
		require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), mod["digest"])
		require.EqualValues(t, len(wasm), mod["size"])
		require.EqualValues(t, 1, mod["version"])
		require.Equal(t, []any{
			map[string]any{"name": "hello", "kind": "activity"},
			map[string]any{"name": "flow", "kind": "workflow"},
		}, mod["functions"])

		got := MustDecode[map[string]any](t, b.do(t, "GET", "/v1/modules/greeter", "", nil), 200)
		require.Equal(t, mod, got)

		list := MustDecode[listDoc[map[string]any]](t, b.do(t, "GET", "/v1/modules", "", nil), 200)
		names := []string{}
		for _, m := range list.Data {
			names = append(names, m["name"].(string))
		}
		require.ElementsMatch(t, []string{"greeter", "m"}, names)

		resp = b.do(t, "DELETE", "/v1/modules/greeter", "", nil)
		require.Equal(t, 204, resp.StatusCode)
		MustError(t, b.do(t, "GET", "/v1/modules/greeter", "", nil), 404, "module_not_found")
	})

	t.Run("ModuleErrors", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{MaxModuleBody: 64})
		MustError(t, b.do(t, "PUT", "/v1/modules/bad", "not wasm at all", nil), 422, "module_invalid")
		e := MustError(t, b.do(t, "PUT", "/v1/modules/.hidden", string(fakeModule("a:activity")), nil), 400, "invalid_request")
		require.Equal(t, "name", e.param())
		e = MustError(t, b.do(t, "PUT", "/v1/modules/empty", "", nil), 400, "invalid_request")
		require.Equal(t, "body", e.param())
		MustError(t, b.do(t, "PUT", "/v1/modules/big", string(fakeModule(strings.Repeat("a", 100)+":activity")), nil), 413, "payload_too_large")
		MustError(t, b.do(t, "GET", "/v1/modules/nothing", "", nil), 404, "module_not_found")
		MustError(t, b.do(t, "DELETE", "/v1/modules/nothing", "", nil), 404, "module_not_found")
	})

	t.Run("TaskLifecycle", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "echo", `"on_restart":"retry"`, `"timeout_ms":30000`)
		require.Equal(t, "task", tk.Object)
		require.Equal(t, "m", tk.Module)
		require.True(t, strings.HasPrefix(tk.ModuleDigest, "sha256:"))
		require.Equal(t, "echo", tk.Function)
		require.Equal(t, "activity", tk.Kind)
		require.Equal(t, "retry", tk.OnRestart)
		require.EqualValues(t, 30000, tk.TimeoutMS)
		require.Equal(t, map[string]any{"codec": "avro", "blob": env7.Blob}, tk.InputEnvelope)
		require.EqualValues(t, 7, tk.Input)
		require.Nil(t, tk.OutputEnvelope)
		require.Nil(t, tk.Output)
		require.NotEmpty(t, tk.ClientID)
		require.Equal(t, "resp_"+strings.TrimPrefix(tk.ID, "task_"), tk.ResponseID)
		require.WithinDuration(t, time.Now(), tk.CreatedAt, time.Minute)

		done := b.waitStatus(t, tk.ID, "completed")
		require.Equal(t, map[string]any{"codec": "avro", "blob": env7.Blob}, done.OutputEnvelope)
		require.EqualValues(t, 7, done.Output)
		require.NotNil(t, done.FinishedAt)
		require.Positive(t, done.LastSequenceNumber)

		resp := MustDecode[map[string]any](t, b.do(t, "GET", "/v1/responses/"+tk.ResponseID, "", nil), 200)
		require.Equal(t, "completed", resp["status"])
		require.Equal(t, tk.ID, resp["task_id"])
		require.EqualValues(t, 7, resp["output"])
	})

	t.Run("TaskInputProjection", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		v := codec.Map(codec.Entry{Key: "name", Value: codec.String("weft")}, codec.Entry{Key: "ratio", Value: codec.Double(7)},
			codec.Entry{Key: "raw", Value: codec.Bytes([]byte{1, 2})})
		env, err := codec.EncodeEnvelope(v)
		require.NoError(t, err)
		body := `{"module":"m","function":"echo","input":` + string(mustJSON(t, env)) + `}`
		resp := b.do(t, "POST", "/v1/tasks", body, nil)
		raw := MustReadBody(t, resp)
		require.Equal(t, 202, resp.StatusCode, "%s", raw)
		// The projection keeps the double's fraction and marks bytes.
		require.Contains(t, string(raw), `"input":{"name":"weft","ratio":7.0,"raw":{"$type":"bytes","base64":"AQI="}}`)
	})

	t.Run("TaskBadBlobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		badSchema, err := codec.EncodeFrame(codec.Long(7))
		require.NoError(t, err)
		badSchema[2] ^= 0xff // the fingerprint
		tests := []struct {
			name   string
			input  string
			status int
			code   string
		}{
			{name: "bad base64", input: `{"codec":"avro","blob":"!!!"}`, status: 422, code: "invalid_payload_framing"},
			{name: "json in blob", input: `{"codec":"avro","blob":"{\"a\":1}"}`, status: 422, code: "invalid_payload_framing"},
			{name: "json codec", input: `{"codec":"json","blob":"e30="}`, status: 422, code: "unsupported_payload_codec"},
			{name: "no magic", input: `{"codec":"avro","blob":"` + base64.StdEncoding.EncodeToString([]byte("hello world")) + `"}`, status: 422, code: "invalid_payload_framing"},
			{name: "wrong fingerprint", input: `{"codec":"avro","blob":"` + base64.StdEncoding.EncodeToString(badSchema) + `"}`, status: 422, code: "unsupported_payload_schema"},
			{name: "not an envelope", input: `[1]`, status: 400, code: "invalid_payload_envelope"},
		}
		for _, tc := range tests {
			body := `{"module":"m","function":"echo","input":` + tc.input + `}`
			e := MustError(t, b.do(t, "POST", "/v1/tasks", body, nil), tc.status, tc.code)
			require.Equal(t, "input", e.param(), tc.name)
		}
		list := MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks", "", nil), 200)
		require.Empty(t, list.Data, "a refused request creates nothing")
	})

	t.Run("TaskCreateErrors", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		MustError(t, b.do(t, "POST", "/v1/tasks", `{"module":"nothing","function":"echo"}`, nil), 404, "module_not_found")
		e := MustError(t, b.do(t, "POST", "/v1/tasks", `{"module":"m","function":"nothing"}`, nil), 404, "function_not_found")
		require.Equal(t, "function", e.param())
		MustError(t, b.do(t, "GET", "/v1/tasks/task_01JAAAAAAAAAAAAAAAAAAAAAAA", "", nil), 404, "not_found")
		MustError(t, b.do(t, "GET", "/v1/tasks/nonsense", "", nil), 404, "not_found")
	})

	t.Run("TaskList", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		var ids []string
		for range 3 {
			tk := b.createTask(t, "echo")
			b.waitStatus(t, tk.ID, "completed")
			ids = append(ids, tk.ID)
		}
		blocked := b.createTask(t, "block")
		b.waitStarted(t, blocked.ID)

		page := MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks?limit=2", "", nil), 200)
		require.Equal(t, "list", page.Object)
		require.Len(t, page.Data, 2)
		require.True(t, page.HasMore)
		require.Equal(t, blocked.ID, page.Data[0].ID, "newest first")
		require.NotEmpty(t, page.NextCursor)
		rest := MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks?limit=2&cursor="+page.NextCursor, "", nil), 200)
		require.Len(t, rest.Data, 2)
		require.False(t, rest.HasMore)
		require.Equal(t, ids[0], rest.Data[1].ID)

		running := MustDecode[listDoc[task]](t, b.do(t, "GET", "/v1/tasks?status=running", "", nil), 200)
		require.Len(t, running.Data, 1)
		require.Equal(t, blocked.ID, running.Data[0].ID)

		e := MustError(t, b.do(t, "GET", "/v1/tasks?status=sleeping", "", nil), 400, "invalid_request")
		require.Equal(t, "status", e.param())
		for _, bad := range []string{"0", "1001", "x", "-1"} {
			e = MustError(t, b.do(t, "GET", "/v1/tasks?limit="+bad, "", nil), 400, "invalid_request")
			require.Equal(t, "limit", e.param())
		}
	})

	t.Run("TaskCancel", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "block")
		b.waitStarted(t, tk.ID)
		got := MustDecode[task](t, b.do(t, "POST", "/v1/tasks/"+tk.ID+"/cancel", "", nil), 200)
		require.Contains(t, []string{"cancelling", "cancelled"}, got.Status)
		b.waitStatus(t, tk.ID, "cancelled")

		// Cancelling a finished task succeeds and changes nothing.
		again := MustDecode[task](t, b.do(t, "POST", "/v1/tasks/"+tk.ID+"/cancel", "", nil), 200)
		require.Equal(t, "cancelled", again.Status)
		MustError(t, b.do(t, "POST", "/v1/tasks/task_01JAAAAAAAAAAAAAAAAAAAAAAA/cancel", "", nil), 404, "not_found")
	})

	t.Run("TaskSignal", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		wf := b.createTask(t, "wf")
		resp := b.do(t, "POST", "/v1/tasks/"+wf.ID+"/signals/approve", `{"input":`+string(mustJSON(t, env7))+`}`, nil)
		require.Equal(t, map[string]any{"object": "signal", "task_id": wf.ID, "name": "approve"}, MustDecode[map[string]any](t, resp, 202))
		resp = b.do(t, "POST", "/v1/tasks/"+wf.ID+"/signals/nudge", "", nil)
		MustDecode[map[string]any](t, resp, 202)

		events := MustDecode[listDoc[map[string]any]](t, b.do(t, "GET", "/v1/tasks/"+wf.ID+"/events", "", nil), 200)
		var signals []any
		for _, e := range events.Data {
			if e["type"] == "signal.received" {
				signals = append(signals, e["data"].(map[string]any)["name"])
			}
		}
		require.Equal(t, []any{"approve", "nudge"}, signals)

		e := MustError(t, b.do(t, "POST", "/v1/tasks/"+wf.ID+"/signals/x", `{"input":{"codec":"avro","blob":"!"}}`, nil), 422, "invalid_payload_framing")
		require.Equal(t, "input", e.param())
		e = MustError(t, b.do(t, "POST", "/v1/tasks/"+wf.ID+"/signals/x", `{"value":1}`, nil), 400, "invalid_request")
		require.Equal(t, "value", e.param())

		done := b.createTask(t, "echo")
		b.waitStatus(t, done.ID, "completed")
		MustError(t, b.do(t, "POST", "/v1/tasks/"+done.ID+"/signals/x", "", nil), 409, "signal_target_finished")
		MustError(t, b.do(t, "POST", "/v1/tasks/task_01JAAAAAAAAAAAAAAAAAAAAAAA/signals/x", "", nil), 404, "not_found")
	})

	t.Run("Responses", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		resp := MustDecode[map[string]any](t, b.do(t, "POST", "/v1/responses", taskBody(t, "echo"), nil), 200)
		require.Equal(t, "response", resp["object"])
		require.Equal(t, "completed", resp["status"])
		require.EqualValues(t, 7, resp["output"])
		require.Equal(t, map[string]any{"codec": "avro", "blob": env7.Blob}, resp["output_envelope"])
		require.Nil(t, resp["error"])
		got := MustDecode[map[string]any](t, b.do(t, "GET", "/v1/responses/"+resp["id"].(string), "", nil), 200)
		require.Equal(t, resp, got)

		failed := MustDecode[map[string]any](t, b.do(t, "POST", "/v1/responses", taskBody(t, "fail"), nil), 200)
		require.Equal(t, "failed", failed["status"], "a failed task is still a 200")
		require.Nil(t, failed["output"])
		errDoc := failed["error"].(map[string]any)
		require.Equal(t, "bad_input", errDoc["type"])
		require.Equal(t, "the input was rejected", errDoc["message"])

		blocked := b.createTask(t, "block")
		MustError(t, b.do(t, "GET", "/v1/responses/"+blocked.ResponseID, "", nil), 409, "task_not_finished")
		MustError(t, b.do(t, "GET", "/v1/responses/resp_01JAAAAAAAAAAAAAAAAAAAAAAA", "", nil), 404, "not_found")
		MustError(t, b.do(t, "POST", "/v1/responses", `{"module":"m"}`, nil), 400, "invalid_request")
	})

	t.Run("EventsPage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "echo")
		done := b.waitStatus(t, tk.ID, "completed")
		all := MustDecode[listDoc[eventJSON]](t, b.do(t, "GET", "/v1/tasks/"+tk.ID+"/events", "", nil), 200)
		require.Len(t, all.Data, int(done.LastSequenceNumber)+1)
		for i, e := range all.Data {
			require.EqualValues(t, i, e.SequenceNumber, "gapless from 0")
			require.Equal(t, tk.ID, e.TaskID)
		}
		require.Equal(t, "response.created", all.Data[0].Type)
		last := all.Data[len(all.Data)-1]
		require.Equal(t, "response.completed", last.Type)
		var resp map[string]any
		require.NoError(t, json.Unmarshal(last.Data, &resp))
		require.Equal(t, "completed", resp["status"])
		require.EqualValues(t, 7, resp["output"], "the terminal event carries the whole response")

		page := MustDecode[listDoc[eventJSON]](t, b.do(t, "GET", "/v1/tasks/"+tk.ID+"/events?after=0&limit=1", "", nil), 200)
		require.Len(t, page.Data, 1)
		require.EqualValues(t, 1, page.Data[0].SequenceNumber)
		require.True(t, page.HasMore)
		tail := MustDecode[listDoc[eventJSON]](t, b.do(t, "GET", fmtPath("/v1/tasks/%s/events?after=%d", tk.ID, done.LastSequenceNumber), "", nil), 200)
		require.Empty(t, tail.Data)
		require.False(t, tail.HasMore)

		e := MustError(t, b.do(t, "GET", "/v1/tasks/"+tk.ID+"/events?after=x", "", nil), 400, "invalid_request")
		require.Equal(t, "after", e.param())
		MustError(t, b.do(t, "GET", "/v1/tasks/task_01JAAAAAAAAAAAAAAAAAAAAAAA/events", "", nil), 404, "not_found")
	})
}

// eventJSON is an event document as a client reads it.
type eventJSON struct {
	Object         string          `json:"object"`
	Type           string          `json:"type"`
	SequenceNumber int64           `json:"sequence_number"`
	TaskID         string          `json:"task_id"`
	CreatedAt      time.Time       `json:"created_at"`
	Data           json.RawMessage `json:"data"`
}
