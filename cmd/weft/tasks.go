package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

func newTasksCmd() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{Use: "tasks", Short: "list, inspect, cancel, terminate, signal, query and watch tasks"}
	addClientFlags(cmd, &o)

	var status, cursor, module, function, parent, workflowID string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "list tasks, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := (&client.TaskListParams{
				Status: status, Module: module, Function: function, ParentTaskID: parent, WorkflowID: workflowID, Cursor: cursor, Limit: limit,
				Payloads: o.json, // the whole documents; the table needs none
			}).Query()
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodGet, Path: "/v1/tasks?" + q.Encode()}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var page struct {
				Data       []client.Task `json:"data"`
				NextCursor string        `json:"next_cursor"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("decode task list: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tMODULE\tFUNCTION\tCREATED")
			for _, t := range page.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, t.Module, t.Function, rfc3339(t.CreatedAt))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "more: weft tasks list --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	list.Flags().StringVar(&status, "status", "", "only tasks in this status")
	list.Flags().StringVar(&module, "module", "", "only tasks of this module")
	list.Flags().StringVar(&function, "function", "", "only tasks of this function")
	list.Flags().StringVar(&parent, "parent", "", "only the activities this workflow task scheduled")
	list.Flags().StringVar(&workflowID, "workflow-id", "", "only the runs of this workflow id")
	list.Flags().StringVar(&cursor, "cursor", "", "continue a listing from this cursor")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many tasks")

	get := taskGetCmd(&o, "get TASK_ID", "show one task: status, timings, attempts, input and output, last events and log lines", taskPath)
	cancel := taskCancelCmd(&o, "cancel", "cancel TASK_ID", "cancel a task: an activity stops, a workflow is asked to cancel and may compensate first (a finished task stays as it is)", taskPath)
	terminate := taskCancelCmd(&o, "terminate", "terminate TASK_ID", "end a task at once, a workflow without its say", taskPath)
	signal := taskSignalCmd(&o, "signal TASK_ID NAME", "send a named signal with an optional JSON input to a workflow", taskPath)
	query := taskQueryCmd(&o, "query TASK_ID NAME", "ask a workflow's query handler, with an optional JSON input, and print its answer", taskPath)

	var after int64
	watch := &cobra.Command{
		Use:               "watch TASK_ID",
		ValidArgsFunction: completeTaskIDs(&o),
		Short:             "stream a task's events live until it ends",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			status, err := watchTask(cmd.Context(), c, args[0], after, cmd.OutOrStdout(), cmd.ErrOrStderr(), o.json)
			if err != nil {
				return err
			}
			if status != "completed" {
				return exitError{code: 1}
			}
			return nil
		},
	}
	watch.Flags().Int64Var(&after, "after", -1, "start after this sequence number")

	cmd.AddCommand(list, get, cancel, terminate, signal, query, watch, newTaskLogsCmd(&o))
	return cmd
}

// watchReconnectFor is how long watch keeps trying to reach the daemon
// again after its event stream broke (a restart, say) before it gives up.
const watchReconnectFor = time.Minute

// watchTask streams the events of task id to w, one readable line each (or
// one JSON document each with asJSON), ending with a status line; it
// returns the terminal status.
func watchTask(ctx context.Context, c *apiClient, id string, after int64, w, errw io.Writer, asJSON bool) (string, error) {
	var progress liveView
	return followEvents(ctx, c, id, after, errw, func(ev *client.StreamEvent, e client.Event) {
		if asJSON {
			fmt.Fprintln(w, string(ev.Data))
			return
		}
		writeLiveLine(w, &progress, e)
		if client.IsTerminalEvent(ev.Type) {
			printTerminal(w, id, ev.Data)
		}
	})
}

// followEvents calls fn for each event of task id after the sequence
// number after (-1: from the first) until the terminal event, whose status
// it returns. When the stream breaks before the task ended (the daemon
// restarts, say) it says so on errw and resumes after the last event it
// passed on (Last-Event-ID), for up to watchReconnectFor.
func followEvents(ctx context.Context, c *apiClient, id string, after int64, errw io.Writer, fn func(*client.StreamEvent, client.Event)) (string, error) {
	last := after
	final := ""
	var lostAt time.Time
	wait := 100 * time.Millisecond
	for {
		lastID := ""
		if last >= 0 {
			lastID = strconv.FormatInt(last, 10)
		}
		err := c.stream(ctx, id, lastID, func(ev *client.StreamEvent) (bool, error) {
			e, err := ev.Event()
			if err != nil {
				return false, err
			}
			if !lostAt.IsZero() {
				fmt.Fprintf(errw, "weft: reconnected to the event stream of %s\n", id)
				lostAt, wait = time.Time{}, 100*time.Millisecond
			}
			last = e.SequenceNumber
			fn(ev, *e)
			if client.IsTerminalEvent(ev.Type) {
				final = strings.TrimPrefix(ev.Type, "response.")
				return true, nil
			}
			return false, nil
		})
		switch {
		case final != "":
			return final, nil
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		var ae *client.Error
		if errors.As(err, &ae) {
			return "", err
		}
		why := "it ended before the task finished"
		if err != nil {
			why = err.Error()
		}
		if lostAt.IsZero() {
			lostAt = time.Now()
			fmt.Fprintf(errw, "weft: lost the event stream of %s (%s); reconnecting\n", id, why)
		} else if time.Since(lostAt) > watchReconnectFor {
			return "", fmt.Errorf("event stream of %s: the daemon did not answer again within %s (%s)", id, watchReconnectFor, why)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// printTerminal prints the status line of a terminal event.
func printTerminal(w io.Writer, id string, data []byte) {
	var e struct {
		Response client.Response `json:"data"`
	}
	_ = json.Unmarshal(data, &e)
	fmt.Fprintf(w, "task %s %s\n", id, taskErrorText(e.Response.Status, e.Response.Error))
}

// printDoc prints a JSON document from the daemon: as it came with compact,
// indented otherwise.
func printDoc(w io.Writer, raw []byte, compact bool) error {
	if compact {
		_, err := fmt.Fprintln(w, string(raw))
		return err
	}
	return printJSON(w, json.RawMessage(raw))
}

// inputEnvelope builds the {codec, blob} envelope of a JSON input given
// inline, in a file ("-" for r), or def when neither is set.
func inputEnvelope(r io.Reader, inline, file, def string) (codec.Envelope, error) {
	if inline != "" && file != "" {
		return codec.Envelope{}, usageError{fmt.Errorf("--input and --input-file are exclusive")}
	}
	data := []byte(def)
	switch {
	case inline != "":
		data = []byte(inline)
	case file == "-":
		b, err := io.ReadAll(r)
		if err != nil {
			return codec.Envelope{}, fmt.Errorf("read input: %w", err)
		}
		data = b
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return codec.Envelope{}, fmt.Errorf("read input: %w", err)
		}
		data = b
	}
	v, err := codec.ParseProjection(data)
	if err != nil {
		return codec.Envelope{}, err
	}
	return codec.EncodeEnvelope(v)
}
