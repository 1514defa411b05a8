package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Defaults of Config.
const (
	// DefaultMaxResponseBytes bounds an answer: a task document carries
	// its payloads twice (envelope and projection).
	DefaultMaxResponseBytes = 256 << 20
)

// Config configures a Client. The zero value of every field but BaseURL
// means its default.
type Config struct {
	// BaseURL is the daemon: "http://HOST:PORT", or HOST:PORT alone
	// (http is assumed).
	BaseURL string
	// Token is the bearer token; "" sends none.
	Token string
	// HTTPClient sends the requests. Defaults to a new http.Client with
	// no timeout (event streams last as long as their task; bound a call
	// with its context).
	HTTPClient *http.Client
	// MaxResponseBytes bounds the body of an answer, and each event of a
	// stream; past it the call returns ErrResponseTooLarge. Defaults to
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Client calls the weft HTTP API of one daemon. It is safe for concurrent
// use.
type Client struct {
	base  string
	token string
	http  *http.Client
	max   int64
}

// New returns a client of the daemon at cfg.BaseURL.
func New(cfg Config) (*Client, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		return nil, errors.New("client: BaseURL is required")
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("client: BaseURL: %w", err)
	}
	c := &Client{base: base, token: cfg.Token, http: cfg.HTTPClient, max: cfg.MaxResponseBytes}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.max <= 0 {
		c.max = DefaultMaxResponseBytes
	}
	return c, nil
}

// BaseURL returns the daemon's URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// Request is one call for Do.
type Request struct {
	// Method and Path (with its query) name the call, e.g. GET
	// /v1/tasks?status=running.
	Method string
	Path   string
	// Body is sent as is; JSON, unless ContentType says otherwise.
	Body []byte
	// ContentType defaults to application/json when Body is set.
	ContentType string
	// Header holds extra headers.
	Header http.Header
}

type idempotencyKey struct{}

// WithIdempotencyKey returns a context whose creating calls (TaskCreate,
// TaskRun, TaskSignal, ModuleDeploy, PairingCreate) send key as their
// Idempotency-Key: the daemon answers a retry with the same key and request
// with the first answer.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// Do sends r and decodes its JSON answer into out: nil discards it, a
// *json.RawMessage keeps its bytes. A non-2xx answer is an *Error. It is the
// building block of the typed calls, for the calls they do not cover.
func (c *Client) Do(ctx context.Context, r *Request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := c.read(resp.Body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], body...)
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &DecodeError{What: "answer to " + r.Method + " " + pathOnly(r.Path), Err: err}
	}
	return nil
}

// send sends r and returns a 2xx answer; any other answer is read (within
// maxErrorBody) and returned as an *Error.
func (c *Client) send(ctx context.Context, r *Request) (*http.Response, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.base+r.Path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	switch {
	case r.ContentType != "":
		req.Header.Set("Content-Type", r.ContentType)
	case r.Body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if key, _ := ctx.Value(idempotencyKey{}).(string); key != "" && req.Header.Get("Idempotency-Key") == "" && r.Method != http.MethodGet {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("connect to weft at %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err != nil {
			return nil, fmt.Errorf("read answer of %s %s: %w", r.Method, pathOnly(r.Path), err)
		}
		return nil, errorOf(resp.StatusCode, b)
	}
	return resp, nil
}

// read reads a whole answer body within the size bound.
func (c *Client) read(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, c.max+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if int64(len(b)) > c.max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, c.max)
	}
	return b, nil
}

func pathOnly(p string) string {
	path, _, _ := strings.Cut(p, "?")
	return path
}

// jsonCall sends in (nil: no body) as JSON and decodes the answer into out.
func (c *Client) jsonCall(ctx context.Context, method, path string, in, out any) error {
	r := &Request{Method: method, Path: path}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		r.Body = b
	}
	return c.Do(ctx, r, out)
}

func esc(s string) string { return url.PathEscape(s) }

// TaskCreate starts a task: POST /v1/tasks answers 202 with the task once
// it is persisted.
func (c *Client) TaskCreate(ctx context.Context, req *TaskRequest) (*Task, error) {
	var t Task
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/tasks", req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TaskRun runs a task to its end: POST /v1/responses answers with the
// finished response (a failed task is a Response whose Status is failed,
// not an error).
func (c *Client) TaskRun(ctx context.Context, req *TaskRequest) (*Response, error) {
	var r Response
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/responses", req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// TaskGet returns one task, payloads included.
func (c *Client) TaskGet(ctx context.Context, id string) (*Task, error) {
	var t Task
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/tasks/"+esc(id), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TaskListParams filters and pages GET /v1/tasks. The zero value lists the
// newest tasks the token sees, without payloads.
type TaskListParams struct {
	Status       string
	Module       string
	Function     string
	ParentTaskID string
	// WorkflowID lists the runs of one workflow id.
	WorkflowID string
	// Cursor continues a listing (List.NextCursor).
	Cursor string
	// Limit is the page size; 0 is the daemon's default.
	Limit int
	// Payloads includes each task's input, output and error details.
	Payloads bool
}

// Query returns p as the query of GET /v1/tasks.
func (p *TaskListParams) Query() url.Values {
	q := url.Values{}
	if p == nil {
		return q
	}
	for k, v := range map[string]string{"status": p.Status, "module": p.Module, "function": p.Function, "parent_task_id": p.ParentTaskID, "workflow_id": p.WorkflowID, "cursor": p.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Payloads {
		q.Set("include", "payloads")
	}
	return q
}

// TaskList returns one page of tasks, newest first.
func (c *Client) TaskList(ctx context.Context, p *TaskListParams) (*List[Task], error) {
	path := "/v1/tasks"
	if q := p.Query(); len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l List[Task]
	if err := c.jsonCall(ctx, http.MethodGet, path, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// TaskCancel cancels a task and returns it: a queued activity is
// cancelled at once, a running one moves to cancelling, a workflow is asked
// to cancel (CancelRequestedAt) and ends itself, a finished task stays as
// it is.
func (c *Client) TaskCancel(ctx context.Context, id string) (*Task, error) {
	return c.taskPost(ctx, "/v1/tasks/"+esc(id)+"/cancel")
}

// TaskTerminate ends a task at once, a workflow without its say, and
// returns it: POST /v1/tasks/{id}/terminate.
func (c *Client) TaskTerminate(ctx context.Context, id string) (*Task, error) {
	return c.taskPost(ctx, "/v1/tasks/"+esc(id)+"/terminate")
}

// taskPost posts no body to path and returns the task it answers.
func (c *Client) taskPost(ctx context.Context, path string) (*Task, error) {
	var t Task
	if err := c.jsonCall(ctx, http.MethodPost, path, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TaskSignal delivers the signal name to task id (a nil req sends the null
// value); it returns once the daemon recorded it.
func (c *Client) TaskSignal(ctx context.Context, id, name string, req *SignalRequest) (*Signal, error) {
	if req == nil {
		req = &SignalRequest{}
	}
	var s Signal
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/tasks/"+esc(id)+"/signals/"+esc(name), req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// TaskQuery asks a workflow's query handler name:
// POST /v1/tasks/{id}/queries/{name}. The workflow's state does not
// change. A nil req sends the null value.
func (c *Client) TaskQuery(ctx context.Context, id, name string, req *QueryRequest) (*QueryResult, error) {
	if req == nil {
		req = &QueryRequest{}
	}
	var q QueryResult
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/tasks/"+esc(id)+"/queries/"+esc(name), req, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// WorkflowGet returns the latest run of the caller's workflow id (the open
// one while there is one): GET /v1/workflows/{workflow_id}.
func (c *Client) WorkflowGet(ctx context.Context, workflowID string) (*Task, error) {
	var t Task
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/workflows/"+esc(workflowID), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// WorkflowSignal signals the latest run of a workflow id:
// POST /v1/workflows/{workflow_id}/signals/{name}.
func (c *Client) WorkflowSignal(ctx context.Context, workflowID, name string, req *SignalRequest) (*Signal, error) {
	if req == nil {
		req = &SignalRequest{}
	}
	var s Signal
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/workflows/"+esc(workflowID)+"/signals/"+esc(name), req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// WorkflowQuery queries the latest run of a workflow id:
// POST /v1/workflows/{workflow_id}/queries/{name}.
func (c *Client) WorkflowQuery(ctx context.Context, workflowID, name string, req *QueryRequest) (*QueryResult, error) {
	if req == nil {
		req = &QueryRequest{}
	}
	var q QueryResult
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/workflows/"+esc(workflowID)+"/queries/"+esc(name), req, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// WorkflowCancel cancels the latest run of a workflow id:
// POST /v1/workflows/{workflow_id}/cancel.
func (c *Client) WorkflowCancel(ctx context.Context, workflowID string) (*Task, error) {
	return c.taskPost(ctx, "/v1/workflows/"+esc(workflowID)+"/cancel")
}

// WorkflowTerminate ends the latest run of a workflow id at once:
// POST /v1/workflows/{workflow_id}/terminate.
func (c *Client) WorkflowTerminate(ctx context.Context, workflowID string) (*Task, error) {
	return c.taskPost(ctx, "/v1/workflows/"+esc(workflowID)+"/terminate")
}

// ResponseGet returns the stored response of a finished task:
// GET /v1/responses/{id} (Task.ResponseID). A task still running is an
// *Error with code task_not_finished.
func (c *Client) ResponseGet(ctx context.Context, id string) (*Response, error) {
	var r Response
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/responses/"+esc(id), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// EventListParams pages GET /v1/tasks/{id}/events. The zero value lists
// from the first event.
type EventListParams struct {
	// From is the first sequence number wanted; 0 is the first event.
	From int64
	// Limit is the page size; 0 is the daemon's default.
	Limit int
}

// EventList returns one page of a task's events, in sequence order. The
// next page starts From the last SequenceNumber plus one.
func (c *Client) EventList(ctx context.Context, taskID string, p EventListParams) (*List[Event], error) {
	q := url.Values{}
	if p.From > 0 {
		q.Set("after", strconv.FormatInt(p.From-1, 10))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	path := "/v1/tasks/" + esc(taskID) + "/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l List[Event]
	if err := c.jsonCall(ctx, http.MethodGet, path, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ModuleDeployParams are the options of ModuleDeploy.
type ModuleDeployParams struct {
	// CheckReplay refuses the deploy (409 replay_divergence) when the new
	// version would not replay the journals of the module's running
	// workflows.
	CheckReplay bool
}

// ModuleDeploy uploads wasm as the module name (PUT /v1/modules/{name}).
// The bytes the latest version has already deploy nothing new: the answer
// then has Unchanged set.
func (c *Client) ModuleDeploy(ctx context.Context, name string, wasm []byte, p *ModuleDeployParams) (*Module, error) {
	path := "/v1/modules/" + esc(name)
	if p != nil && p.CheckReplay {
		path += "?check_replay=true"
	}
	if wasm == nil {
		wasm = []byte{}
	}
	var m Module
	if err := c.Do(ctx, &Request{Method: http.MethodPut, Path: path, Body: wasm, ContentType: "application/wasm"}, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ModuleList returns one page of the deployed modules, by name, after
// cursor ("" from the first).
func (c *Client) ModuleList(ctx context.Context, cursor string) (*List[Module], error) {
	path := "/v1/modules"
	if cursor != "" {
		path += "?cursor=" + url.QueryEscape(cursor)
	}
	var l List[Module]
	if err := c.jsonCall(ctx, http.MethodGet, path, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ModuleGet returns the latest version of module name.
func (c *Client) ModuleGet(ctx context.Context, name string) (*Module, error) {
	var m Module
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/modules/"+esc(name), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ModuleDelete removes module name.
func (c *Client) ModuleDelete(ctx context.Context, name string) error {
	return c.jsonCall(ctx, http.MethodDelete, "/v1/modules/"+esc(name), nil, nil)
}

// PairingCreate issues a one-time pairing code (admin).
func (c *Client) PairingCreate(ctx context.Context, req *PairingRequest) (*Pairing, error) {
	if req == nil {
		req = &PairingRequest{}
	}
	var p Pairing
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/pairings", req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Pair exchanges a pairing code for a client token; it needs no token.
func (c *Client) Pair(ctx context.Context, req *PairRequest) (*PairResult, error) {
	var p PairResult
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/pair", req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ClientList returns one page of the paired clients (admin), after cursor
// ("" from the first).
func (c *Client) ClientList(ctx context.Context, cursor string) (*List[PairedClient], error) {
	path := "/v1/clients"
	if cursor != "" {
		path += "?cursor=" + url.QueryEscape(cursor)
	}
	var l List[PairedClient]
	if err := c.jsonCall(ctx, http.MethodGet, path, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ClientGet returns one paired client (admin).
func (c *Client) ClientGet(ctx context.Context, id string) (*PairedClient, error) {
	var p PairedClient
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/clients/"+esc(id), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ClientRevoke revokes a client (admin); its token fails from the next
// request on.
func (c *Client) ClientRevoke(ctx context.Context, id string) (*PairedClient, error) {
	var p PairedClient
	if err := c.jsonCall(ctx, http.MethodDelete, "/v1/clients/"+esc(id), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ClientUpdate changes a client's settings (admin).
func (c *Client) ClientUpdate(ctx context.Context, id string, req *ClientUpdateRequest) (*PairedClient, error) {
	var p PairedClient
	if err := c.jsonCall(ctx, http.MethodPatch, "/v1/clients/"+esc(id), req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Health reports whether the daemon answers GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.Do(ctx, &Request{Method: http.MethodGet, Path: "/healthz"}, nil)
}

// Ready reports whether the daemon accepts work: GET /readyz; a daemon
// still starting or draining is an *Error with status 503.
func (c *Client) Ready(ctx context.Context) error {
	return c.Do(ctx, &Request{Method: http.MethodGet, Path: "/readyz"}, nil)
}

// Metrics returns the Prometheus text exposition of GET /metrics.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	var raw json.RawMessage // bytes, kept as they came
	if err := c.Do(ctx, &Request{Method: http.MethodGet, Path: "/metrics"}, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
