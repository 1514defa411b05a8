package loadbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// The workflows workload: one-activity workflows from concurrent clients,
// each started with POST /v1/responses, which answers once the workflow
// finished, then workflows of ten sequential activities one at a time.
// It is the work perf-anchors.md measured Temporal's dev server on.
const (
	// WorkloadTasks is the default workload: background echo tasks.
	WorkloadTasks = "tasks"
	// WorkloadWorkflows is the workflows workload.
	WorkloadWorkflows = "workflows"
	// DefaultWorkflows is how many one-activity workflows it runs.
	DefaultWorkflows = 1000
	// DefaultWorkflowWasm is the workflow module it deploys (relative to
	// the repository root): an echo activity and a workflow running it n
	// times in sequence.
	DefaultWorkflowWasm = "cmd/weft/testdata/wfbench.wasm"
	workflowModule      = "wfbench"
	// sequentialRuns is how many ten-activity workflows give the latency
	// percentiles.
	sequentialRuns = 50
	warmRuns       = 20
)

// WorkflowReport is the workflows workload's part of a Report.
type WorkflowReport struct {
	// Workflows is how many one-activity workflows ran, and PerSecond
	// their rate from the first start to the last answer.
	Workflows int     `json:"workflows"`
	PerSecond float64 `json:"per_second"`
	// LatencyMS is the one-activity workflows' start-to-answer latency.
	LatencyMS LatencySummary `json:"latency_ms"`
	// TenActivitiesMS is the latency of a workflow of ten sequential
	// activities, run one at a time.
	TenActivitiesMS LatencySummary `json:"ten_activities_ms"`
	Failed          int            `json:"failed"`
}

// workflowBody is the body that starts the workflow running n activities.
func workflowBody(n int64) ([]byte, error) {
	env, err := codec.EncodeEnvelope(codec.Long(n))
	if err != nil {
		return nil, err
	}
	return json.Marshal(&client.TaskRequest{Module: workflowModule, Function: "sequential", Input: client.InputOf(env)})
}

// runWorkflow starts one workflow and waits for its answer.
func runWorkflow(ctx context.Context, c *client.Client, body []byte) error {
	var r client.Response
	if err := c.Do(ctx, &client.Request{Method: http.MethodPost, Path: "/v1/responses", Body: body}, &r); err != nil {
		return err
	}
	if r.Status != "completed" {
		return fmt.Errorf("workflow %s: %s", r.TaskID, r.Status)
	}
	return nil
}

// runWorkflows is the workflows workload against hosts, started in turn.
func runWorkflows(ctx context.Context, cfg Config, hosts []*client.Client, logw io.Writer) (*WorkflowReport, error) {
	if err := deployAs(ctx, hosts[0], workflowModule, cfg.Wasm); err != nil {
		return nil, err
	}
	one, err := workflowBody(1)
	if err != nil {
		return nil, err
	}
	ten, err := workflowBody(10)
	if err != nil {
		return nil, err
	}
	for i := range warmRuns {
		if err := runWorkflow(ctx, hosts[i%len(hosts)], one); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	rep := &WorkflowReport{}
	lat, failed, elapsed, firstErr := fanOut(ctx, cfg.Tasks, cfg.Clients, func(i int) error {
		return runWorkflow(ctx, hosts[i%len(hosts)], one)
	})
	if firstErr != nil {
		fmt.Fprintf(logw, "bench load: %d workflows failed, first: %v\n", failed, firstErr)
	}
	rep.Failed = failed
	rep.Workflows = cfg.Tasks - rep.Failed
	rep.PerSecond = math.Round(float64(rep.Workflows)/elapsed.Seconds()*10) / 10
	rep.LatencyMS = Summarize(lat)

	seq := make([]time.Duration, sequentialRuns)
	for i := range seq {
		t0 := time.Now()
		if err := runWorkflow(ctx, hosts[i%len(hosts)], ten); err != nil {
			return nil, fmt.Errorf("ten activities: %w", err)
		}
		seq[i] = time.Since(t0)
	}
	rep.TenActivitiesMS = Summarize(seq)
	return rep, nil
}
