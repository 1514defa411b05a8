//go:build unix

package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// startTally starts the testkit's tally with a workflow id as the client
// of token, with extra request members, and returns the status and body.
func (d *Daemon) startTally(token, workflowID string, extra map[string]any) (int, []byte) {
	d.tb.Helper()
	req := taskRequest(d.tb, "tally", `{"signals":1}`, "")
	if workflowID != "" {
		req["workflow_id"] = workflowID
	}
	for k, v := range extra {
		req[k] = v
	}
	body, err := jsonBody(req)
	require.NoError(d.tb, err)
	status, _, out := d.rawDo(token, http.MethodPost, "/v1/tasks", string(body))
	return status, out
}

// TestE2EWorkflowIDs starts workflows under caller-chosen ids over HTTP and
// the CLI: one open run per id and client, also under concurrent starts;
// each reuse policy; signals, queries, get and cancel by workflow id; the
// runs of an id listed; bad ids refused.
func TestE2EWorkflowIDs(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	wid := "orders/42 é"
	path := "/v1/workflows/" + url.PathEscape(wid)

	t.Run("ConcurrentStarts", func(t *testing.T) {
		const n = 12
		statuses := make([]int, n)
		bodies := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], bodies[i] = d.startTally(d.Token, "race", nil)
			}()
		}
		wg.Wait()
		won := 0
		for i, st := range statuses {
			switch st {
			case http.StatusAccepted:
				won++
			case http.StatusConflict:
				require.Equal(t, "workflow_id_in_use", errorCode(t, bodies[i]))
			default:
				t.Fatalf("status %d: %s", st, bodies[i])
			}
		}
		require.Equal(t, 1, won, "exactly one start takes the id")
		page, err := d.Client.TaskList(t.Context(), &client.TaskListParams{WorkflowID: "race"})
		require.NoError(t, err)
		require.Len(t, page.Data, 1)
	})

	t.Run("ByWorkflowID", func(t *testing.T) {
		id := strings.TrimSpace(d.MustCLI("run", "testkit", "tally", "--input", `{"signals":2}`, "--workflow-id", wid, "--background"))
		require.Regexp(t, taskIDPattern, id)
		d.MustWaitEvent(id, "signal.waiting", 1, 10*time.Second)
		var doc client.Task
		d.MustDo(http.MethodGet, path, nil, &doc)
		require.Equal(t, id, doc.ID)
		require.Equal(t, wid, doc.WorkflowID)
		require.Contains(t, d.MustCLI("workflows", "get", wid), "workflow   "+wid)

		status, body := d.startTally(d.Token, wid, nil)
		require.Equal(t, http.StatusConflict, status, "%s", body)
		require.Equal(t, "workflow_id_in_use", errorCode(t, body))
		require.Contains(t, string(body), id, "the error names the open run")

		require.Contains(t, d.MustCLI("workflows", "signal", wid, "add", "--input", "5"), id)
		var sig client.Signal
		d.MustDo(http.MethodPost, path+"/signals/add", []byte(`{"input":`+envelopeJSON(t, "6")+`}`), &sig)
		require.Equal(t, id, sig.TaskID)
		d.MustWaitStatus(id, 10*time.Second, "completed")
		require.JSONEq(t, `{"sum":11,"count":2}`, d.MustCLI("workflows", "query", wid, "state"), "a query reaches the latest run")
		var q client.QueryResult
		d.MustDo(http.MethodGet, path+"/queries/state", nil, &q)
		require.JSONEq(t, `{"sum":11,"count":2}`, string(q.Output))

		// A finished run: signals are refused, a new run may follow.
		st, _, out := d.rawDo(d.Token, http.MethodPost, path+"/signals/add", "")
		require.Equal(t, http.StatusConflict, st, "%s", out)
		require.Equal(t, "signal_target_finished", errorCode(t, out))
		next := strings.TrimSpace(d.MustCLI("run", "testkit", "tally", "--input", `{"signals":1}`, "--workflow-id", wid, "--background"))
		require.NotEqual(t, id, next)
		d.MustDo(http.MethodGet, path, nil, &doc)
		require.Equal(t, next, doc.ID, "the open run is the latest")
		require.Contains(t, d.MustCLI("workflows", "cancel", wid), next+" ")
		d.MustWaitStatus(next, 10*time.Second, "cancelled")
		runs := d.MustCLI("tasks", "list", "--workflow-id", wid)
		require.Contains(t, runs, id)
		require.Contains(t, runs, next)
	})

	t.Run("ReusePolicies", func(t *testing.T) {
		start := func(wid, policy string) (int, []byte) {
			extra := map[string]any{}
			if policy != "" {
				extra["workflow_id_reuse_policy"] = policy
			}
			return d.startTally(d.Token, wid, extra)
		}
		// A completed run.
		st, body := start("done", "")
		require.Equal(t, http.StatusAccepted, st, "%s", body)
		done := d.MustListTasks("")[0]
		d.MustCLI("workflows", "signal", "done", "add", "--input", "1")
		d.MustWaitStatus(done.ID, 10*time.Second, "completed")
		for _, policy := range []string{"reject_duplicate", "allow_duplicate_failed_only"} {
			st, body := start("done", policy)
			require.Equal(t, http.StatusConflict, st, "%s: %s", policy, body)
			require.Equal(t, "workflow_id_reuse_refused", errorCode(t, body), policy)
		}
		// A cancelled run may be followed unless the policy rejects all.
		st, body = start("gone", "")
		require.Equal(t, http.StatusAccepted, st, "%s", body)
		gone := d.MustListTasks("")[0]
		d.MustCLI("workflows", "cancel", "gone")
		d.MustWaitStatus(gone.ID, 10*time.Second, "cancelled") // a workflow ends its own cancel
		st, body = start("gone", "reject_duplicate")
		require.Equal(t, http.StatusConflict, st, "%s", body)
		st, body = start("gone", "allow_duplicate_failed_only")
		require.Equal(t, http.StatusAccepted, st, "%s", body)
	})

	t.Run("PerClient", func(t *testing.T) {
		_, other := d.mustPairClient("other", nil)
		st, body := d.startTally(other, wid, nil)
		require.Equal(t, http.StatusAccepted, st, "another client's id is its own: %s", body)
		st, body = d.startTally(other, wid, nil)
		require.Equal(t, http.StatusConflict, st, "%s", body)
		st, _, body = d.rawDo(other, http.MethodGet, "/v1/workflows/race", "")
		require.Equal(t, http.StatusNotFound, st, "the admin's workflow is not this client's: %s", body)
	})

	t.Run("Invalid", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			wid   string
			extra map[string]any
			param string
		}{
			{"TooLong", strings.Repeat("w", 257), nil, "workflow_id"},
			{"ControlCharacter", "a\tb", nil, "workflow_id"},
			{"UnknownPolicy", "w", map[string]any{"workflow_id_reuse_policy": "sometimes"}, "workflow_id_reuse_policy"},
			{"PolicyWithoutID", "", map[string]any{"workflow_id_reuse_policy": "reject_duplicate"}, "workflow_id_reuse_policy"},
			{"WrongType", "", map[string]any{"workflow_id": 7}, "workflow_id"},
		} {
			st, body := d.startTally(d.Token, tc.wid, tc.extra)
			require.Equal(t, http.StatusBadRequest, st, "%s: %s", tc.name, body)
			require.Equal(t, "invalid_request", errorCode(t, body), tc.name)
			require.Contains(t, string(body), `"param":"`+tc.param+`"`, tc.name)
		}
		req := taskRequest(t, "echo", `"x"`, "")
		req["workflow_id"] = "w"
		b, err := jsonBody(req)
		require.NoError(t, err)
		st, _, body := d.rawDo(d.Token, http.MethodPost, "/v1/tasks", string(b))
		require.Equal(t, http.StatusBadRequest, st, "an activity has no workflow id: %s", body)
		st, _, body = d.rawDo(d.Token, http.MethodGet, "/v1/workflows/"+url.PathEscape("nope"), "")
		require.Equal(t, http.StatusNotFound, st, "%s", body)
		st, _, body = d.rawDo(d.Token, http.MethodGet, "/v1/workflows/"+url.PathEscape("a\x01"), "")
		require.Equal(t, http.StatusBadRequest, st, "%s", body)
	})
}
