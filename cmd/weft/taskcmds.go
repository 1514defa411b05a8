package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// The commands that act on one task: weft tasks names it by its task id
// (taskPath), weft workflows by its workflow id (workflowPath), through
// the routes of each (docs/http-api.md).

// taskPath is the API path of task id.
func taskPath(id string) string { return "/v1/tasks/" + url.PathEscape(id) }

// workflowPath is the API path of the latest run of workflow id.
func workflowPath(id string) string { return "/v1/workflows/" + url.PathEscape(id) }

// taskGetCmd shows the task path(arg).
func taskGetCmd(o *clientOptions, use, short string, path func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodGet, Path: path(args[0])}, &raw); err != nil {
				return err
			}
			if o.json {
				return printDoc(cmd.OutOrStdout(), raw, true)
			}
			return printTaskSummary(cmd.Context(), c, raw, cmd.OutOrStdout())
		},
	}
	completeTasks(cmd, o, path)
	return cmd
}

// taskCancelCmd cancels (action "cancel") or terminates ("terminate") the
// task path(arg).
func taskCancelCmd(o *clientOptions, action, use, short string, path func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: path(args[0]) + "/" + action}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var t client.Task
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode task: %w", err)
			}
			note := ""
			if t.CancelRequestedAt != nil && t.FinishedAt == nil {
				note = " (cancel requested)"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s%s\n", t.ID, t.Status, note)
			return err
		},
	}
	completeTasks(cmd, o, path)
	return cmd
}

// taskSignalCmd signals the task path(arg).
func taskSignalCmd(o *clientOptions, use, short string, path func(string) string) *cobra.Command {
	var input, inputFile string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			env, err := inputEnvelope(cmd.InOrStdin(), input, inputFile, "null")
			if err != nil {
				return err
			}
			body, err := jsonBody(map[string]any{"input": env})
			if err != nil {
				return err
			}
			var raw json.RawMessage
			p := path(args[0]) + "/signals/" + url.PathEscape(args[1])
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: p, Body: body}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var s client.Signal
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("decode signal: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "signal %s sent to %s\n", args[1], s.TaskID)
			return err
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "signal input as JSON (typed projection)")
	cmd.Flags().StringVar(&inputFile, "input-file", "", "read the signal input JSON from this file (- for stdin)")
	completeTasks(cmd, o, path)
	return cmd
}

// taskQueryCmd queries the task path(arg).
func taskQueryCmd(o *clientOptions, use, short string, path func(string) string) *cobra.Command {
	var input, inputFile string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: "query replays the workflow's journal and prints what its query handler NAME\n" +
			"answers, as JSON (the typed projection; with --json, the whole result). The\n" +
			"workflow does not change.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			env, err := inputEnvelope(cmd.InOrStdin(), input, inputFile, "null")
			if err != nil {
				return err
			}
			body, err := jsonBody(map[string]any{"input": env})
			if err != nil {
				return err
			}
			var raw json.RawMessage
			p := path(args[0]) + "/queries/" + url.PathEscape(args[1])
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: p, Body: body}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var q client.QueryResult
			if err := json.Unmarshal(raw, &q); err != nil {
				return fmt.Errorf("decode query result: %w", err)
			}
			out := q.Output
			if q.OutputProjectionOmitted && q.OutputEnvelope != nil {
				v, err := codec.DecodeEnvelope(*q.OutputEnvelope)
				if err != nil {
					return fmt.Errorf("decode query answer: %w", err)
				}
				if out, err = codec.MarshalProjection(v); err != nil {
					return fmt.Errorf("project query answer: %w", err)
				}
			}
			if len(out) == 0 {
				out = json.RawMessage("null")
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "query input as JSON (typed projection)")
	cmd.Flags().StringVar(&inputFile, "input-file", "", "read the query input JSON from this file (- for stdin)")
	completeTasks(cmd, o, path)
	return cmd
}

// completeTasks completes the first argument with task ids for the task
// commands; workflow ids are the caller's own names, with no completion.
func completeTasks(cmd *cobra.Command, o *clientOptions, path func(string) string) {
	if strings.HasPrefix(path("x"), "/v1/tasks/") {
		cmd.ValidArgsFunction = completeTaskIDs(o)
	}
}

func newWorkflowsCmd() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "inspect, signal, query, cancel and terminate workflows by the workflow id they were started with",
		Long: "workflows acts on the latest run of a workflow id (weft run --workflow-id): the\n" +
			"open one while there is one, else the one that ended last. weft tasks list\n" +
			"--workflow-id ID lists every run of the id.",
	}
	addClientFlags(cmd, &o)
	cmd.AddCommand(
		taskGetCmd(&o, "get WORKFLOW_ID", "show the latest run of a workflow id", workflowPath),
		taskCancelCmd(&o, "cancel", "cancel WORKFLOW_ID", "ask the open run of a workflow id to cancel: it sees the request, may compensate, and ends", workflowPath),
		taskCancelCmd(&o, "terminate", "terminate WORKFLOW_ID", "end the open run of a workflow id at once, without its say", workflowPath),
		taskSignalCmd(&o, "signal WORKFLOW_ID NAME", "send a named signal with an optional JSON input to the open run of a workflow id", workflowPath),
		taskQueryCmd(&o, "query WORKFLOW_ID NAME", "ask the query handler of the latest run of a workflow id and print its answer", workflowPath),
	)
	return cmd
}
