//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// TestE2EContinueAsNew runs the testkit's chain workflow, in Go and in C,
// through 100 runs that each continue as new: the CLI follows the chain to
// its last run's result; every run is a task of the same workflow id
// (the first run's task id), completed, whose log names the next run and
// whose successor names it back; each journal starts over; the workflow id
// reaches the last run.
func TestE2EContinueAsNew(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustCLI("deploy", testkitWasm, "--name", "kitgo")
	d.MustCLI("deploy", testkitCWasm, "--name", "kitc")
	const runs = 100
	for _, module := range []string{"kitgo", "kitc"} {
		t.Run(module, func(t *testing.T) {
			out := d.CLI("run", module, "chain", "--input", `{"runs":100,"done":0}`)
			require.Zero(t, out.Code, "%s", out.Stderr)
			require.JSONEq(t, `{"runs":100,"history_length":2}`, strings.TrimSpace(out.Stdout), "the last run's result; its journal held its own steps only")
			first := strings.Fields(out.Stderr)[1]
			require.Regexp(t, taskIDPattern, first)

			var chain []client.Task
			cursor := ""
			for {
				page, err := d.Client.TaskList(t.Context(), &client.TaskListParams{WorkflowID: first, Cursor: cursor, Limit: 1000, Payloads: true})
				require.NoError(t, err)
				chain = append(chain, page.Data...)
				if !page.HasMore {
					break
				}
				cursor = page.NextCursor
			}
			require.Len(t, chain, runs, "one task per run, under the first run's id")
			// Newest first: chain[0] is the last run.
			for i, run := range chain {
				require.Equal(t, "completed", run.Status, run.ID)
				require.Equal(t, first, run.WorkflowID)
				var in struct{ Done int64 }
				require.NoError(t, json.Unmarshal(run.Input, &in))
				require.Equal(t, int64(runs-1-i), in.Done, "run %d got its predecessor's input", i)
				if i == len(chain)-1 {
					require.Equal(t, first, run.ID)
					require.Empty(t, run.ContinuedFromTaskID)
					continue
				}
				require.Equal(t, chain[i+1].ID, run.ContinuedFromTaskID)
			}
			// Each ended run's log names its successor, once, before its end.
			for i := 1; i < len(chain); i += 33 {
				events := d.MustEvents(chain[i].ID)
				var next []string
				for _, ev := range events {
					if ev.Type == "workflow.continued_as_new" {
						var p struct {
							NextTaskID string `json:"next_task_id"`
						}
						require.NoError(t, json.Unmarshal(ev.Data, &p))
						next = append(next, p.NextTaskID)
					}
				}
				require.Equal(t, []string{chain[i-1].ID}, next)
				require.Equal(t, "response.completed", events[len(events)-1].Type)
			}
			var last client.Task
			d.MustDo(http.MethodGet, "/v1/workflows/"+first, nil, &last)
			require.Equal(t, chain[0].ID, last.ID, "the workflow id reaches the last run")
			require.Equal(t, "99", strings.TrimSpace(d.MustCLI("workflows", "query", first, "done")))
		})
	}
}

// TestE2EHistoryLimit: a workflow whose log would pass --max-history-events
// fails with history_limit_exceeded instead of growing.
func TestE2EHistoryLimit(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--max-history-events", "40")
	d.MustDeployTestkit()
	id := d.queryTally("testkit", 1000)
	for i := 0; ; i++ {
		st, _, body := d.rawDo(d.Token, http.MethodPost, "/v1/tasks/"+id+"/signals/add", `{"input":`+envelopeJSON(t, "1")+`}`)
		if st == http.StatusConflict {
			require.Equal(t, "signal_target_finished", errorCode(t, body))
			break
		}
		require.Equal(t, http.StatusAccepted, st, "%s", body)
		require.Less(t, i, 40, "the limit stopped the workflow")
		time.Sleep(20 * time.Millisecond)
	}
	task := d.MustWaitStatus(id, 10*time.Second, "failed")
	require.Equal(t, "history_limit_exceeded", task.Error.Code)
	require.Contains(t, task.Error.Message, "continue as new")
	require.LessOrEqual(t, task.LastSequenceNumber, int64(41), "no run committed past the limit; the failure is the one event more")
}
