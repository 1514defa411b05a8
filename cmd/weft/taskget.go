package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Bounds of the readable task summary.
const (
	summaryEvents   = 10     // last events shown
	summaryLogLines = 10     // last log lines shown
	summaryScan     = 10_000 // events read at most to find them
	eventsPage      = 1000   // events asked for per page
	projectionWidth = 2000   // characters of an input or output shown
)

// readEvents calls fn for the events of task id after the sequence number
// after (-1: all), page by page, reading at most limit events.
func readEvents(ctx context.Context, c *apiClient, id string, after int64, limit int, fn func(client.Event)) error {
	n := 0
	for n < limit {
		page, err := c.api.EventList(ctx, id, client.EventListParams{From: after + 1, Limit: min(eventsPage, limit-n)})
		if err != nil {
			return c.explain(err)
		}
		for _, e := range page.Data {
			fn(e)
			after = e.SequenceNumber
			n++
		}
		if !page.HasMore || len(page.Data) == 0 {
			return nil
		}
	}
	return nil
}

// printTaskSummary prints the task document raw for a person: what it runs,
// its status and timings, attempts, input and output projections, the last
// events and the last log lines.
func printTaskSummary(ctx context.Context, c *apiClient, raw json.RawMessage, w io.Writer) error {
	var t client.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("decode task: %w", err)
	}
	var last, logs []client.Event
	var progress liveView
	var lastProgress *client.Event
	after := int64(-1)
	if t.LastSequenceNumber >= summaryScan {
		after = t.LastSequenceNumber - summaryScan
	}
	err := readEvents(ctx, c, t.ID, after, summaryScan, func(e client.Event) {
		last = appendBounded(last, e, summaryEvents)
		switch e.Type {
		case "task.log":
			logs = appendBounded(logs, e, summaryLogLines)
		case "task.progress":
			lastProgress = &e
		}
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "task       %s\n", t.ID)
	if t.WorkflowID != "" {
		fmt.Fprintf(w, "workflow   %s\n", t.WorkflowID)
	}
	fmt.Fprintf(w, "runs       %s.%s (%s), module %s\n", t.Module, t.Function, t.Kind, t.ModuleDigest)
	if t.ParentTaskID != "" {
		fmt.Fprintf(w, "parent     %s\n", t.ParentTaskID)
	}
	status := t.Status
	if t.Error != nil {
		status += ": " + errorText(t.Error)
	}
	fmt.Fprintf(w, "status     %s\n", status)
	fmt.Fprintf(w, "attempt    %d   on restart: %s", t.Attempt, t.OnRestart)
	if t.TimeoutMS > 0 {
		fmt.Fprintf(w, "   timeout: %s", time.Duration(t.TimeoutMS)*time.Millisecond)
	}
	if t.MemoryLimitBytes > 0 {
		fmt.Fprintf(w, "   memory limit: %d MiB", t.MemoryLimitBytes>>20)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "created    %s\n", rfc3339(t.CreatedAt))
	if t.StartedAt != nil {
		fmt.Fprintf(w, "started    %s (%s after creation)\n", rfc3339(*t.StartedAt), t.StartedAt.Sub(t.CreatedAt))
	}
	if t.FinishedAt != nil {
		began := t.CreatedAt
		if t.StartedAt != nil {
			began = *t.StartedAt
		}
		fmt.Fprintf(w, "finished   %s (%s run)\n", rfc3339(*t.FinishedAt), t.FinishedAt.Sub(began))
	}
	switch {
	case t.Progress != nil:
		p := t.Progress
		fmt.Fprintf(w, "progress   %s   (at %s)\n", progress.bar(eventData{Done: &p.Done, Total: p.Total, Message: p.Message}, p.UpdatedAt), clockOf(p.UpdatedAt))
	case lastProgress != nil:
		fmt.Fprintf(w, "progress   %s\n", progress.describe(*lastProgress))
	}
	fmt.Fprintf(w, "input      %s\n", clip(t.Input))
	if t.Status == "completed" {
		fmt.Fprintf(w, "output     %s\n", clip(t.Output))
	}
	fmt.Fprintf(w, "events     %d", t.LastSequenceNumber+1)
	if len(last) > 0 {
		fmt.Fprintf(w, ", the last %d:", len(last))
	}
	fmt.Fprintln(w)
	var p liveView
	for _, e := range last {
		fmt.Fprint(w, "  ")
		writeLiveLine(w, &p, e)
	}
	if len(logs) > 0 {
		fmt.Fprintf(w, "log        the last %d lines (weft tasks logs %s for all):\n", len(logs), t.ID)
		for _, e := range logs {
			fmt.Fprint(w, "  ")
			writeLogLine(w, e)
		}
	}
	return nil
}

// appendBounded appends e to s and keeps the last n elements.
func appendBounded(s []client.Event, e client.Event, n int) []client.Event {
	s = append(s, e)
	if len(s) > n {
		s = append(s[:0], s[len(s)-n:]...)
	}
	return s
}

// eventJSON is an event document as the daemon writes it.
func eventJSON(e client.Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e) // an event decoded from JSON encodes again
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// clip is a JSON projection on one line, cut to projectionWidth characters.
func clip(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	s := string(raw)
	if len(s) > projectionWidth {
		s = s[:projectionWidth] + fmt.Sprintf("… (%d bytes; --json for all)", len(raw))
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// writeLogLine prints one task.log event: time, level and message.
func writeLogLine(w io.Writer, e client.Event) {
	var d eventData
	_ = json.Unmarshal(e.Data, &d)
	if d.Dropped > 0 {
		fmt.Fprintf(w, "%s  (%d more lines dropped)\n", clockOf(e.CreatedAt), d.Dropped)
		return
	}
	fmt.Fprintf(w, "%s  %-5s %s\n", clockOf(e.CreatedAt), d.Level, d.Message)
}

func newTaskLogsCmd(o *clientOptions) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:               "logs TASK_ID",
		ValidArgsFunction: completeTaskIDs(o),
		Short:             "print a task's log lines (its task.log events); --follow until it ends",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			print := func(e client.Event, data []byte) {
				if e.Type != "task.log" {
					return
				}
				if o.json {
					fmt.Fprintln(w, string(data))
					return
				}
				writeLogLine(w, e)
			}
			if follow {
				_, err := followEvents(cmd.Context(), c, args[0], -1, cmd.ErrOrStderr(), func(ev *client.StreamEvent, e client.Event) {
					print(e, ev.Data)
				})
				return err
			}
			return readEvents(cmd.Context(), c, args[0], -1, math.MaxInt, func(e client.Event) {
				print(e, eventJSON(e))
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the task ends")
	return cmd
}
