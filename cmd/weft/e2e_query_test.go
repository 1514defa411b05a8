//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// queryTally starts the testkit's tally workflow (deployed under module),
// waiting for signals "add" signals, and waits until it waits.
func (d *Daemon) queryTally(module string, signals int) string {
	d.tb.Helper()
	id := strings.TrimSpace(d.MustCLI("run", module, "tally", "--input", `{"signals":`+itoa(signals)+`}`, "--background"))
	require.Regexp(d.tb, taskIDPattern, id)
	d.MustWaitEvent(id, "signal.waiting", 1, 10*time.Second)
	return id
}

func itoa(n int) string { return strconv.Itoa(n) }

// queryPath is the path of query name of task id.
func queryPath(id, name string) string {
	return "/v1/tasks/" + url.PathEscape(id) + "/queries/" + url.PathEscape(name)
}

// errorCode returns the code of an error body.
func errorCode(tb testing.TB, body []byte) string {
	tb.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(tb, json.Unmarshal(body, &e), "error body %s", body)
	return e.Error.Code
}

// rawDo sends a request with token and returns the status, headers and body.
func (d *Daemon) rawDo(token, method, path, body string) (int, http.Header, []byte) {
	d.tb.Helper()
	req, err := http.NewRequestWithContext(d.tb.Context(), method, d.URL(path), strings.NewReader(body))
	require.NoError(d.tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.http.Do(req)
	require.NoError(d.tb, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(d.tb, err)
	return resp.StatusCode, resp.Header, b
}

// envelopeJSON is the JSON of the envelope of the projection js.
func envelopeJSON(tb testing.TB, js string) string {
	tb.Helper()
	v, err := codec.ParseProjection([]byte(js))
	require.NoError(tb, err)
	env, err := codec.EncodeEnvelope(v)
	require.NoError(tb, err)
	b, err := json.Marshal(env)
	require.NoError(tb, err)
	return string(b)
}

// TestE2EQueryWaitingWorkflow queries the testkit's tally workflow, in Go
// and in C, while it waits on a signal: the answer follows the signals, the
// CLI and both HTTP forms work, every bad query gets its code, and no query
// changes the task or its log.
func TestE2EQueryWaitingWorkflow(t *testing.T) {
	t.Parallel()
	d := mustRunKits(t)
	for _, module := range kitModules {
		t.Run(module, func(t *testing.T) {
			id := d.queryTally(module, 3)
			require.JSONEq(t, `{"sum":0,"count":0}`, d.MustCLI("tasks", "query", id, "state"))
			d.MustCLI("tasks", "signal", id, "add", "--input", "5")
			d.MustCLI("tasks", "signal", id, "add", "--input", "7")
			d.MustWaitEvent(id, "signal.waiting", 3, 10*time.Second)
			require.JSONEq(t, `{"sum":12,"count":2}`, d.MustCLI("tasks", "query", id, "state"))

			before := d.MustTask(id)
			events := d.MustEvents(id)

			// GET with the input envelope in the query string, and POST.
			var q client.QueryResult
			in := envelopeJSON(t, `{"a":[1,"x"]}`)
			d.MustDo(http.MethodGet, queryPath(id, "echo")+"?input="+url.QueryEscape(in), nil, &q)
			require.Equal(t, "query_result", q.Object)
			require.Equal(t, id, q.TaskID)
			require.Equal(t, "echo", q.Name)
			require.Equal(t, "running", q.Status)
			require.JSONEq(t, `{"a":[1,"x"]}`, string(q.Output))
			require.NotNil(t, q.OutputEnvelope)
			q = client.QueryResult{}
			d.MustDo(http.MethodPost, queryPath(id, "echo"), []byte(`{"input":`+in+`}`), &q)
			require.JSONEq(t, `{"a":[1,"x"]}`, string(q.Output))
			d.MustDo(http.MethodPost, queryPath(id, "echo"), []byte(``), &q)
			require.JSONEq(t, `null`, string(q.Output), "an empty body queries with null")
			require.JSONEq(t, `{"b":true}`, d.MustCLI("tasks", "query", id, "echo", "--input", `{"b":true}`))

			bad := []struct {
				name, method, path, body string
				status                   int
				code                     string
			}{
				{"UnknownQuery", "GET", queryPath(id, "nope"), "", 404, "query_not_found"},
				{"HandlerError", "GET", queryPath(id, "fail"), "", 422, "query_failed"},
				{"HandlerSchedulesAnActivity", "GET", queryPath(id, "schedule"), "", 409, "query_command"},
				{"HandlerStartsATimer", "GET", queryPath(id, "wait"), "", 409, "query_command"},
				{"UnknownTask", "GET", queryPath("task_01M90QC5Q43QB7SFPFM5ENJ909", "state"), "", 404, "not_found"},
				{"MalformedTaskID", "GET", queryPath("nope", "state"), "", 404, "not_found"},
				{"MalformedJSON", "POST", queryPath(id, "echo"), `{"input":`, 400, "invalid_request"},
				{"UnknownMember", "POST", queryPath(id, "echo"), `{"inputs":null}`, 400, "invalid_request"},
				{"InputNotAnEnvelope", "GET", queryPath(id, "echo") + "?input=" + url.QueryEscape(`[1]`), "", 400, "invalid_payload_envelope"},
				{"InputBadBlob", "POST", queryPath(id, "echo"), `{"input":{"codec":"avro","blob":"AAAA"}}`, 422, "invalid_payload_framing"},
				{"TooLongName", "GET", queryPath(id, strings.Repeat("q", 257)), "", 400, "invalid_request"},
				{"BodyTooLarge", "POST", queryPath(id, "echo"), `{"input":"` + strings.Repeat("x", 5<<20) + `"}`, 413, "payload_too_large"},
				{"WrongMethod", "PUT", queryPath(id, "echo"), "", 405, "method_not_allowed"},
			}
			for _, tc := range bad {
				status, _, body := d.rawDo(d.Token, tc.method, tc.path, tc.body)
				require.Equal(t, tc.status, status, "%s: %s", tc.name, body)
				require.Equal(t, tc.code, errorCode(t, body), "%s: %s", tc.name, body)
			}
			r := d.CLI("tasks", "query", id, "nope")
			require.NotZero(t, r.Code)
			require.Contains(t, r.Stderr, "query_not_found")

			after := d.MustTask(id)
			require.Equal(t, before.Status, after.Status)
			require.Equal(t, before.LastSequenceNumber, after.LastSequenceNumber, "no query adds an event")
			require.Equal(t, events, d.MustEvents(id))

			d.MustCLI("tasks", "signal", id, "add", "--input", "30")
			d.MustWaitStatus(id, 10*time.Second, "completed")
			require.JSONEq(t, `{"sum":42,"count":3}`, d.MustCLI("tasks", "query", id, "state"), "a completed workflow answers too")
		})
	}

	t.Run("NotSupported", func(t *testing.T) {
		// An activity, and a workflow whose module registers no handler.
		d.MustDeployTestkit()
		task := d.MustSubmit("echo", `"x"`, "")
		status, _, body := d.rawDo(d.Token, "GET", queryPath(task.ID, "state"), "")
		require.Equal(t, 409, status, "%s", body)
		require.Equal(t, "query_not_supported", errorCode(t, body))
		for _, m := range pipelineModules {
			name := "pipe" + strings.ToLower(m.lang)
			d.MustDeployPipeline(name, m.path)
			id := d.MustStartPipeline(name, `{"service":"web","version":"1.2.3"}`)
			d.MustWaitEvent(id, "signal.waiting", 1, 20*time.Second)
			status, _, body := d.rawDo(d.Token, "GET", queryPath(id, "state"), "")
			require.Equal(t, 409, status, "%s: %s", m.lang, body)
			require.Equal(t, "query_not_supported", errorCode(t, body), m.lang)
		}
	})
}

// TestE2EQueryAccess: a query needs tasks:read and sees only the caller's
// own tasks.
func TestE2EQueryAccess(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	id := d.queryTally("testkit", 1)
	path := queryPath(id, "state")

	status, _, body := d.rawDo(d.Token, "GET", path, "")
	require.Equal(t, 200, status, "%s", body)
	_, other := d.mustPairClient("other", nil)
	status, _, body = d.rawDo(other, "GET", path, "")
	require.Equal(t, 404, status, "another client's task: %s", body)
	require.Equal(t, "not_found", errorCode(t, body))
	_, writer := d.mustPairClient("writer", map[string]any{"scopes": []string{"tasks:write"}})
	status, _, body = d.rawDo(writer, "GET", path, "")
	require.Equal(t, 403, status, "%s", body)
	require.Equal(t, "insufficient_scope", errorCode(t, body))
	status, _, body = d.rawDo("", "GET", path, "")
	require.Equal(t, 401, status, "%s", body)
	status, _, body = d.rawDo("weft_bogus", "POST", path, "")
	require.Equal(t, 401, status, "%s", body)
}

// TestE2EQueryLimits: a handler that never returns is stopped at
// --query-timeout (504), and a query beyond --max-queries is refused with
// 429 and Retry-After.
func TestE2EQueryLimits(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--max-queries", "1", "--query-timeout", "3s")
	d.MustDeployTestkit()
	id := d.queryTally("testkit", 1)

	var wg sync.WaitGroup
	wg.Add(1)
	var spinStatus int
	var spinBody []byte
	start := time.Now()
	go func() {
		defer wg.Done()
		spinStatus, _, spinBody = d.rawDo(d.Token, "GET", queryPath(id, "spin"), "")
	}()
	// While the spin holds the only slot, another query is refused.
	deadline := time.Now().Add(2 * time.Second)
	var status int
	var hdr http.Header
	var body []byte
	for time.Now().Before(deadline) {
		status, hdr, body = d.rawDo(d.Token, "GET", queryPath(id, "state"), "")
		if status == 429 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 429, status, "%s", body)
	require.Equal(t, "query_limit_exceeded", errorCode(t, body))
	require.Equal(t, "1", hdr.Get("Retry-After"))
	wg.Wait()
	require.Equal(t, 504, spinStatus, "%s", spinBody)
	require.Equal(t, "timeout", errorCode(t, spinBody))
	require.GreaterOrEqual(t, time.Since(start), 3*time.Second)

	// The slot is free again, and the workflow still answers and runs.
	status, _, body = d.rawDo(d.Token, "GET", queryPath(id, "state"), "")
	require.Equal(t, 200, status, "%s", body)
	d.MustCLI("tasks", "signal", id, "add", "--input", "1")
	d.MustWaitStatus(id, 10*time.Second, "completed")
}
