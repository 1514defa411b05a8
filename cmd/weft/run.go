package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

func newRunCmd() *cobra.Command {
	var o clientOptions
	var input, inputFile, onRestart, timeout, idemKey, workflowID, reusePolicy string
	var background bool
	var retry retryFlags
	var memoryLimit string
	var timeouts timeoutFlags
	cmd := &cobra.Command{
		Use:               "run MODULE FUNCTION",
		ValidArgsFunction: completeModuleNames(&o, true),
		Short:             "start a task and print its output (or only its id with --background)",
		Long: "run starts FUNCTION of MODULE with a JSON input (the typed projection of a Value).\n" +
			"Without --background it follows the task's events and prints the output\n" +
			"projection (with --json, the whole response); a failed or cancelled task\n" +
			"exits with status 1, also with --json. The task id goes to stderr at once;\n" +
			"Ctrl-C detaches (the task goes on) and says how to watch or cancel it.\n\n" +
			"Durable by default: without --on-restart a workflow resumes from its journal\n" +
			"after a daemon restart and an activity starts again; without --retry-* flags\n" +
			"an activity runs under the daemon's default retry policy (3 attempts, waits\n" +
			"from 1s doubling) and a workflow runs once.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch onRestart {
			case "", "fail", "retry", "resume":
			default:
				return usageError{fmt.Errorf("--on-restart must be fail, retry or resume, not %q", onRestart)}
			}
			d, err := parseDuration(timeout)
			if err != nil {
				return err
			}
			env, err := inputEnvelope(cmd.InOrStdin(), input, inputFile, "null")
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			req := map[string]any{"module": args[0], "function": args[1], "input": env}
			if onRestart != "" {
				req["on_restart"] = onRestart
			}
			if d > 0 {
				req["timeout_ms"] = d.Milliseconds()
			}
			if workflowID != "" {
				req["workflow_id"] = workflowID
			}
			if reusePolicy != "" {
				req["workflow_id_reuse_policy"] = reusePolicy
			}
			if err := timeouts.add(req); err != nil {
				return err
			}
			policy, err := retry.policy(cmd)
			if err != nil {
				return err
			}
			if policy != nil {
				req["retry"] = policy
			}
			if memoryLimit != "" {
				n, err := daemon.ParseSize(memoryLimit)
				if err != nil {
					return usageError{fmt.Errorf("--memory-limit: %w", err)}
				}
				req["memory_limit_bytes"] = n
			}
			body, err := jsonBody(req)
			if err != nil {
				return err
			}
			h := http.Header{}
			if idemKey != "" {
				h.Set("Idempotency-Key", idemKey)
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: "/v1/tasks", Body: body, Header: h}, &raw); err != nil {
				return err
			}
			var t client.Task
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode task: %w", err)
			}
			out := cmd.OutOrStdout()
			if background {
				if o.json {
					_, err := fmt.Fprintln(out, string(raw))
					return err
				}
				_, err := fmt.Fprintln(out, t.ID)
				return err
			}
			// Follow the task to its end, then print its response. The id
			// goes to stderr at once, so that an interrupted run can be
			// found again.
			fmt.Fprintf(cmd.ErrOrStderr(), "task %s %s\n", t.ID, t.Status)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// A workflow that continues as new is followed to its last run.
			var final []byte
			for id := t.ID; id != ""; {
				next := ""
				err = c.stream(ctx, id, "", func(ev *client.StreamEvent) (bool, error) {
					switch {
					case ev.Type == continuedAsNew:
						var e struct {
							Data struct {
								NextTaskID string `json:"next_task_id"`
							} `json:"data"`
						}
						if json.Unmarshal(ev.Data, &e) == nil {
							next = e.Data.NextTaskID
						}
					case client.IsTerminalEvent(ev.Type):
						final = ev.Data
						return true, nil
					}
					return false, nil
				})
				if err != nil || next == "" {
					break
				}
				id = next
			}
			if ctx.Err() != nil && cmd.Context().Err() == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "detached from task %s; it goes on in the daemon.\n"+
					"  follow it: weft tasks watch %s\n  cancel it: weft tasks cancel %s\n", t.ID, t.ID, t.ID)
				return exitError{code: 130}
			}
			if err != nil {
				return err
			}
			var e client.Event
			if err := json.Unmarshal(final, &e); err != nil || e.Data == nil {
				return fmt.Errorf("task %s: event stream ended before the task finished", t.ID)
			}
			resp, err := e.Response()
			if err != nil {
				return err
			}
			if o.json {
				if _, err := fmt.Fprintln(out, string(e.Data)); err != nil {
					return err
				}
				if resp.Status != "completed" {
					return exitError{code: 1}
				}
				return nil
			}
			if resp.Status != "completed" {
				return fmt.Errorf("task %s %s", t.ID, taskErrorText(resp.Status, resp.Error))
			}
			if len(resp.Output) == 0 {
				resp.Output = json.RawMessage("null")
			}
			_, err = fmt.Fprintln(out, string(resp.Output))
			return err
		},
	}
	addClientFlags(cmd, &o)
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "input as JSON (typed projection); default null")
	f.StringVar(&inputFile, "input-file", "", "read the input JSON from this file (- for stdin)")
	f.BoolVar(&background, "background", false, "print the task id and return at once")
	f.StringVar(&onRestart, "on-restart", "", "what a daemon restart does to the task: fail, retry or resume (default: resume for a workflow, retry for an activity)")
	f.StringVar(&timeout, "timeout", "", "wall-clock limit of one attempt, e.g. 30s")
	f.StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key header for a safe retry")
	f.StringVar(&workflowID, "workflow-id", "", "a workflow's own name for this client: no two open runs share one (see weft workflows)")
	f.StringVar(&reusePolicy, "workflow-id-reuse-policy", "", "may the run follow an ended run of its workflow id: allow_duplicate (default), allow_duplicate_failed_only or reject_duplicate")
	f.StringVar(&memoryLimit, "memory-limit", "", "memory limit of each plugin call, e.g. 128MiB (default: the daemon's, 64MiB)")
	retry.register(f)
	timeouts.register(f)
	return cmd
}

// continuedAsNew is the event of a workflow run that continued as new,
// whose data names the next run.
const continuedAsNew = "workflow.continued_as_new"

// timeoutFlags are weft run's flags for the timeouts beside --timeout
// (docs/workflows.md, "Timeouts").
type timeoutFlags struct {
	execution, run, scheduleToStart, heartbeat string
}

func (t *timeoutFlags) register(f *pflag.FlagSet) {
	f.StringVar(&t.execution, "execution-timeout", "", "a workflow's limit across all its attempts and waits, e.g. 1h")
	f.StringVar(&t.run, "run-timeout", "", "a workflow's limit on each attempt, waits included, e.g. 10m (retried per --retry-*)")
	f.StringVar(&t.scheduleToStart, "schedule-to-start-timeout", "", "an activity's limit on the time it stays queued, e.g. 30s (never retried)")
	f.StringVar(&t.heartbeat, "heartbeat-timeout", "", "an activity's limit on the time between heartbeats, e.g. 10s (retried per --retry-*)")
}

// add puts the timeouts that were set into the request.
func (t *timeoutFlags) add(req map[string]any) error {
	for _, x := range []struct{ flag, key, value string }{
		{"execution-timeout", "execution_timeout_ms", t.execution},
		{"run-timeout", "run_timeout_ms", t.run},
		{"schedule-to-start-timeout", "schedule_to_start_timeout_ms", t.scheduleToStart},
		{"heartbeat-timeout", "heartbeat_timeout_ms", t.heartbeat},
	} {
		if x.value == "" {
			continue
		}
		d, err := parseDuration(x.value)
		if err != nil {
			return usageError{fmt.Errorf("--%s: %w", x.flag, err)}
		}
		if d > 0 {
			req[x.key] = d.Milliseconds()
		}
	}
	return nil
}

// retryFlags are weft run's flags for the task's retry policy.
type retryFlags struct {
	attempts     int
	initial      string
	backoff      float64
	maxInterval  string
	nonRetryable []string
}

func (r *retryFlags) register(f *pflag.FlagSet) {
	f.IntVar(&r.attempts, "retry-attempts", 0, "most attempts of the task, the first included (1: no retry)")
	f.StringVar(&r.initial, "retry-initial-interval", "", "wait before the first retry, e.g. 1s")
	f.Float64Var(&r.backoff, "retry-backoff", 0, "factor by which each wait grows (at least 1; default 2)")
	f.StringVar(&r.maxInterval, "retry-max-interval", "", "longest wait between attempts, e.g. 1m (default 100 × the initial interval)")
	f.StringSliceVar(&r.nonRetryable, "retry-non-retryable", nil, "error types never retried (repeat or comma-separate)")
}

// policy is the retry document of the request, or nil when no retry flag
// was set (the daemon's default policy applies).
func (r *retryFlags) policy(cmd *cobra.Command) (map[string]any, error) {
	p := map[string]any{}
	f := cmd.Flags()
	if f.Changed("retry-attempts") {
		if r.attempts < 1 {
			return nil, usageError{fmt.Errorf("--retry-attempts must be at least 1, not %d", r.attempts)}
		}
		p["maximum_attempts"] = r.attempts
	}
	for _, d := range []struct {
		flag, key, value string
	}{{"retry-initial-interval", "initial_interval_ms", r.initial}, {"retry-max-interval", "maximum_interval_ms", r.maxInterval}} {
		if !f.Changed(d.flag) {
			continue
		}
		v, err := parseDuration(d.value)
		if err != nil {
			return nil, usageError{fmt.Errorf("--%s: %w", d.flag, err)}
		}
		p[d.key] = v.Milliseconds()
	}
	if f.Changed("retry-backoff") {
		if r.backoff < 1 {
			return nil, usageError{fmt.Errorf("--retry-backoff must be at least 1, not %g", r.backoff)}
		}
		p["backoff_coefficient"] = r.backoff
	}
	if f.Changed("retry-non-retryable") {
		p["non_retryable_error_types"] = r.nonRetryable
	}
	if len(p) == 0 {
		return nil, nil
	}
	return p, nil
}

// taskErrorText is how a finished task's status and error read to a
// person: the plugin's error type when it gave one (invalid_name: name is
// empty), else the error code.
func taskErrorText(status string, e *client.TaskError) string {
	if e == nil {
		return status
	}
	return status + ": " + errorText(e)
}
