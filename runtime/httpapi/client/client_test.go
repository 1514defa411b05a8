package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/store/blob"
	"github.com/weft-run/weft/store/sqlite"
)

// The tests run the client against the real server over a real engine and
// SQLite store; plugins are played by Go functions (fakeExecutor).

const wasmMagic = "\x00asm\x01\x00\x00\x00"

// testModule is module bytes the fake executor accepts: echo and fail are
// activities, wait is a workflow that ends when it gets a signal.
var testModule = []byte(wasmMagic + "echo:activity,fail:activity,wait:workflow")

type fakeExecutor struct{}

func (x *fakeExecutor) Compile(_ context.Context, wasm []byte) (*runtime.ModuleInfo, error) {
	manifest, ok := bytes.CutPrefix(wasm, []byte(wasmMagic))
	if !ok {
		return nil, fault.Errorf(fault.ModuleInvalid, "not a WebAssembly module")
	}
	info := &runtime.ModuleInfo{}
	for entry := range strings.SplitSeq(string(manifest), ",") {
		name, kind, _ := strings.Cut(entry, ":")
		info.Functions = append(info.Functions, runtime.Function{Name: name, Kind: kind})
	}
	return info, nil
}

func (x *fakeExecutor) Call(ctx context.Context, c *runtime.Call) (*runtime.CallResult, error) {
	switch c.Function {
	case "echo":
		return &runtime.CallResult{Output: bytes.Clone(c.Input)}, nil
	case "fail":
		return &runtime.CallResult{Error: &runtime.PluginError{Type: "bad_input", Message: "the input was rejected", NonRetryable: true}}, nil
	case "wait":
		select {
		case <-ctx.Done():
			return nil, &fault.Error{Code: fault.Cancelled, Message: "call stopped", Err: context.Cause(ctx)}
		case <-time.After(20 * time.Second):
			return &runtime.CallResult{Output: bytes.Clone(c.Input)}, nil
		}
	}
	return nil, fault.Errorf(fault.FunctionNotFound, "no function %q", c.Function)
}

// serve starts the API and returns its URL and the admin token.
func serve(t *testing.T) (url, admin string) {
	t.Helper()
	dir := t.TempDir()
	logger := hclog.NewNullLogger()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "weft.db"), Logger: logger, SkipQuickCheck: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close(context.Background())) })
	var ts *httptest.Server
	t.Cleanup(func() {
		if ts != nil {
			ts.Close()
		}
	})
	files, err := blob.New(blob.Config{Dir: dir})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	mx, err := metrics.New(reg)
	require.NoError(t, err)
	eng, err := runtime.New(runtime.Config{Store: db, Executor: &fakeExecutor{}, Modules: files, Logger: logger, Metrics: mx, Workers: 4, CancelGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	acc, err := access.New(access.Config{Store: db, Logger: logger})
	require.NoError(t, err)
	tok, _, err := acc.Bootstrap(t.Context(), dir)
	require.NoError(t, err)
	require.NoError(t, eng.Open(t.Context()))
	t.Cleanup(func() { require.NoError(t, eng.Close(context.Background())) })
	s, err := httpapi.New(httpapi.Config{Engine: eng, Modules: eng.Modules(), Access: acc, Logger: logger, Metrics: reg})
	require.NoError(t, err)
	ts = httptest.NewServer(s.Handler())
	return ts.URL, tok
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	require.NoError(t, err)
	return c
}

func input(t *testing.T, v codec.Value) []byte {
	t.Helper()
	e, err := codec.EncodeEnvelope(v)
	require.NoError(t, err)
	return client.InputOf(e)
}

func TestClient(t *testing.T) {
	url, admin := serve(t)
	c := newClient(t, client.Config{BaseURL: strings.TrimPrefix(url, "http://"), Token: admin})
	ctx := t.Context()

	require.NoError(t, c.Health(ctx))
	require.NoError(t, c.Ready(ctx))

	m, err := c.ModuleDeploy(ctx, "m", testModule, nil)
	require.NoError(t, err)
	require.Equal(t, "m", m.Name)
	require.True(t, strings.HasPrefix(m.Digest, "sha256:"), m.Digest)
	require.Len(t, m.Functions, 3)
	again, err := c.ModuleDeploy(ctx, "m", testModule, &client.ModuleDeployParams{CheckReplay: true})
	require.NoError(t, err)
	require.True(t, again.Unchanged, "the same bytes deploy nothing new")
	mods, err := c.ModuleList(ctx, "")
	require.NoError(t, err)
	require.Len(t, mods.Data, 1)
	got, err := c.ModuleGet(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, m.Digest, got.Digest)

	t.Run("TaskToItsEnd", func(t *testing.T) {
		task, err := c.TaskCreate(ctx, &client.TaskRequest{Module: "m", Function: "echo", Input: input(t, codec.String("hi"))})
		require.NoError(t, err)
		require.Equal(t, "task", task.Object)
		require.NotNil(t, task.InputEnvelope)
		require.JSONEq(t, `"hi"`, string(task.Input))

		var types []string
		var last *client.StreamEvent
		err = c.EventStream(ctx, task.ID, client.EventStreamParams{}, func(ev *client.StreamEvent) (bool, error) {
			types = append(types, ev.Type)
			last = ev
			return client.IsTerminalEvent(ev.Type), nil
		})
		require.NoError(t, err)
		require.Equal(t, "response.created", types[0])
		require.Equal(t, client.EventCompleted, types[len(types)-1])
		e, err := last.Event()
		require.NoError(t, err)
		resp, err := e.Response()
		require.NoError(t, err)
		require.Equal(t, "completed", resp.Status)
		require.JSONEq(t, `"hi"`, string(resp.Output))

		done, err := c.TaskGet(ctx, task.ID)
		require.NoError(t, err)
		require.Equal(t, "completed", done.Status)
		require.NotNil(t, done.FinishedAt)
		require.Equal(t, int64(len(types)-1), done.LastSequenceNumber)
		stored, err := c.ResponseGet(ctx, done.ResponseID)
		require.NoError(t, err)
		require.Equal(t, task.ID, stored.TaskID)

		// Pages and resumption agree with the stream.
		page, err := c.EventList(ctx, task.ID, client.EventListParams{Limit: 1})
		require.NoError(t, err)
		require.True(t, page.HasMore)
		require.Equal(t, int64(0), page.Data[0].SequenceNumber)
		rest, err := c.EventList(ctx, task.ID, client.EventListParams{From: 1})
		require.NoError(t, err)
		require.Len(t, rest.Data, len(types)-1)
		require.Equal(t, int64(1), rest.Data[0].SequenceNumber)
		var resumed []string
		err = c.EventStream(ctx, task.ID, client.EventStreamParams{LastEventID: client.ResumeAfter(int64(len(types) - 2))}, func(ev *client.StreamEvent) (bool, error) {
			resumed = append(resumed, ev.ID)
			return false, nil
		})
		require.NoError(t, err, "the daemon ends the stream after the terminal event")
		require.Equal(t, []string{client.ResumeAfter(int64(len(types) - 1))}, resumed)

		list, err := c.TaskList(ctx, &client.TaskListParams{Status: "completed", Function: "echo", Payloads: true})
		require.NoError(t, err)
		require.NotEmpty(t, list.Data)
		require.JSONEq(t, `"hi"`, string(list.Data[0].Output))
	})

	t.Run("Run", func(t *testing.T) {
		resp, err := c.TaskRun(ctx, &client.TaskRequest{Module: "m", Function: "fail"})
		require.NoError(t, err, "a failed task is a response, not an error")
		require.Equal(t, "failed", resp.Status)
		require.Equal(t, "bad_input", resp.Error.Type)
	})

	t.Run("SignalAndCancel", func(t *testing.T) {
		task, err := c.TaskCreate(ctx, &client.TaskRequest{Module: "m", Function: "wait"})
		require.NoError(t, err)
		sig, err := c.TaskSignal(ctx, task.ID, "go", &client.SignalRequest{Input: input(t, codec.Long(1))})
		require.NoError(t, err)
		require.Equal(t, client.Signal{Object: "signal", TaskID: task.ID, Name: "go"}, *sig)
		asked, err := c.TaskCancel(ctx, task.ID)
		require.NoError(t, err)
		if asked.Status != "cancelled" && asked.Status != "cancelling" {
			require.NotNil(t, asked.CancelRequestedAt, "a workflow that may watch its cancel is asked: %+v", asked)
		}
		require.Eventually(t, func() bool {
			cur, err := c.TaskGet(ctx, task.ID)
			require.NoError(t, err)
			return cur.Status == "cancelled"
		}, 10*time.Second, 10*time.Millisecond, "the request ends a workflow that does not watch it")

		other, err := c.TaskCreate(ctx, &client.TaskRequest{Module: "m", Function: "wait"})
		require.NoError(t, err)
		ended, err := c.TaskTerminate(ctx, other.ID)
		require.NoError(t, err)
		require.Contains(t, []string{"cancelling", "cancelled"}, ended.Status, "terminate ends it without its say")
		require.Nil(t, ended.CancelRequestedAt)
	})

	t.Run("Idempotency", func(t *testing.T) {
		kctx := client.WithIdempotencyKey(ctx, "k-1")
		first, err := c.TaskCreate(kctx, &client.TaskRequest{Module: "m", Function: "echo"})
		require.NoError(t, err)
		second, err := c.TaskCreate(kctx, &client.TaskRequest{Module: "m", Function: "echo"})
		require.NoError(t, err)
		require.Equal(t, first.ID, second.ID, "a retry with the key gets the first answer")
		_, err = c.TaskCreate(kctx, &client.TaskRequest{Module: "m", Function: "fail"})
		requireAPIError(t, err, http.StatusUnprocessableEntity, "idempotency_key_reused", "")
	})

	t.Run("Pairing", func(t *testing.T) {
		p, err := c.PairingCreate(ctx, &client.PairingRequest{Scopes: []string{"tasks:read"}})
		require.NoError(t, err)
		anon := newClient(t, client.Config{BaseURL: url})
		paired, err := anon.Pair(ctx, &client.PairRequest{Code: p.Code, Name: "reader"})
		require.NoError(t, err)
		require.Equal(t, []string{"tasks:read"}, paired.Scopes)
		_, err = anon.Pair(ctx, &client.PairRequest{Code: p.Code, Name: "again"})
		require.Error(t, err, "a code is single-use")

		reader := newClient(t, client.Config{BaseURL: url, Token: paired.Token})
		_, err = reader.ModuleDeploy(ctx, "n", testModule, nil)
		requireAPIError(t, err, http.StatusForbidden, "insufficient_scope", "")

		clients, err := c.ClientList(ctx, "")
		require.NoError(t, err)
		require.NotEmpty(t, clients.Data)
		one, err := c.ClientGet(ctx, paired.ClientID)
		require.NoError(t, err)
		require.Equal(t, "reader", one.Name)
		limit := int64(32 << 20)
		updated, err := c.ClientUpdate(ctx, paired.ClientID, &client.ClientUpdateRequest{MaxMemoryLimitBytes: &limit})
		require.NoError(t, err)
		require.Equal(t, limit, updated.MaxMemoryLimitBytes)
		revoked, err := c.ClientRevoke(ctx, paired.ClientID)
		require.NoError(t, err)
		require.NotNil(t, revoked.RevokedAt)
		_, err = reader.TaskList(ctx, nil)
		requireAPIError(t, err, http.StatusUnauthorized, "invalid_credential", "")
	})

	t.Run("Errors", func(t *testing.T) {
		_, err := newClient(t, client.Config{BaseURL: url}).TaskList(ctx, nil)
		requireAPIError(t, err, http.StatusUnauthorized, "missing_credential", "")
		_, err = newClient(t, client.Config{BaseURL: url, Token: "nope"}).TaskList(ctx, nil)
		requireAPIError(t, err, http.StatusUnauthorized, "invalid_credential", "")
		_, err = c.TaskGet(ctx, "no-such-task")
		requireAPIError(t, err, http.StatusNotFound, "not_found", "")
		_, err = c.TaskCreate(ctx, &client.TaskRequest{Function: "echo"})
		requireAPIError(t, err, http.StatusBadRequest, "invalid_request", "module")
		_, err = c.TaskCreate(ctx, &client.TaskRequest{Module: "m", Function: "echo", Input: []byte(`{"codec":"json","blob":""}`)})
		requireAPIError(t, err, http.StatusUnprocessableEntity, "unsupported_payload_codec", "input")
		_, err = c.ModuleDeploy(ctx, "bad", []byte("not wasm"), nil)
		requireAPIError(t, err, http.StatusUnprocessableEntity, "module_invalid", "")
		err = c.EventStream(ctx, "no-such-task", client.EventStreamParams{}, func(*client.StreamEvent) (bool, error) { return true, nil })
		requireAPIError(t, err, http.StatusNotFound, "not_found", "")
		_, err = c.EventList(ctx, "no-such-task", client.EventListParams{})
		require.True(t, client.IsCode(err, "not_found"), "%v", err)
	})

	t.Run("Metrics", func(t *testing.T) {
		text, err := c.Metrics(ctx)
		require.NoError(t, err)
		require.Contains(t, string(text), "weft_tasks_finished_total")
	})

	t.Run("ResponseTooLarge", func(t *testing.T) {
		small := newClient(t, client.Config{BaseURL: url, Token: admin, MaxResponseBytes: 64})
		_, err := small.ModuleList(ctx, "")
		require.ErrorIs(t, err, client.ErrResponseTooLarge)
		list, err := c.TaskList(ctx, &client.TaskListParams{Function: "echo", Status: "completed", Limit: 1})
		require.NoError(t, err)
		err = small.EventStream(ctx, list.Data[0].ID, client.EventStreamParams{}, func(*client.StreamEvent) (bool, error) { return false, nil })
		require.ErrorIs(t, err, client.ErrResponseTooLarge, "an event larger than the bound")
	})
}

func requireAPIError(t *testing.T, err error, status int, code, param string) {
	t.Helper()
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, status, ae.Status, "%v", err)
	require.Equal(t, code, ae.Code, "%v", err)
	require.NotEmpty(t, ae.Type)
	require.NotEmpty(t, ae.Message)
	if param != "" {
		require.Equal(t, param, ae.Param)
	}
}

// TestClientMalformed covers answers that are not what the API sends: the
// client names them instead of returning zero documents.
func TestClientMalformed(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/tasks/garbage":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id": 7`))
		case "/v1/tasks/proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>\n"))
		case "/v1/tasks/errdoc":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"conflict","message":"busy","param":null}}`))
		case "/v1/tasks/plain/events":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[],"has_more":false}`))
		case "/v1/tasks/huge":
			_, _ = w.Write(bytes.Repeat([]byte(" "), 2048))
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	c := newClient(t, client.Config{BaseURL: ts.URL, MaxResponseBytes: 1024})
	ctx := t.Context()

	_, err := c.TaskGet(ctx, "garbage")
	var de *client.DecodeError
	require.ErrorAs(t, err, &de)

	_, err = c.TaskGet(ctx, "proxy")
	requireAPIErrorLoose(t, err, http.StatusBadGateway, "http_502", "<html>bad gateway</html>")

	_, err = c.TaskGet(ctx, "errdoc")
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, client.Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict", Message: "busy"}, *ae)
	require.Equal(t, "conflict: busy", ae.Error())

	err = c.EventStream(ctx, "plain", client.EventStreamParams{}, func(*client.StreamEvent) (bool, error) { return true, nil })
	require.ErrorAs(t, err, &de, "a JSON answer is not an event stream")

	_, err = c.TaskGet(ctx, "huge")
	require.ErrorIs(t, err, client.ErrResponseTooLarge)

	_, err = client.New(client.Config{})
	require.Error(t, err, "BaseURL is required")

	dead := newClient(t, client.Config{BaseURL: "127.0.0.1:1"})
	err = dead.Health(ctx)
	require.Error(t, err)
	require.False(t, errors.As(err, &ae), "a refused connection is no API error")
}

func requireAPIErrorLoose(t *testing.T, err error, status int, code, msg string) {
	t.Helper()
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, status, ae.Status)
	require.Equal(t, code, ae.Code)
	require.Equal(t, msg, ae.Message)
}
