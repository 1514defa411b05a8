package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Bounds of the readable task summary.
const (
	summaryEvents   = 10     // last events shown
	summaryLogLines = 10     // last log lines shown
	summaryScan     = 10_000 // events read at most to find them
	eventsPage      = 1000   // events asked for per page
	projectionWidth = 2000   // characters of an input or output shown
)

// taskSummary is the part of a task document weft tasks get shows.
type taskSummary struct {
	ID                 string          `json:"id"`
	Module             string          `json:"module"`
	ModuleDigest       string          `json:"module_digest"`
	Function           string          `json:"function"`
	Kind               string          `json:"kind"`
	Status             string          `json:"status"`
	OnRestart          string          `json:"on_restart"`
	TimeoutMS          int64           `json:"timeout_ms"`
	MemoryLimitBytes   int64           `json:"memory_limit_bytes"`
	Attempt            int             `json:"attempt"`
	Input              json.RawMessage `json:"input"`
	Output             json.RawMessage `json:"output"`
	Error              *apiError       `json:"error"`
	ParentTaskID       string          `json:"parent_task_id"`
	LastSequenceNumber int64           `json:"last_sequence_number"`
	CreatedAt          string          `json:"created_at"`
	StartedAt          string          `json:"started_at"`
	FinishedAt         string          `json:"finished_at"`
	Progress           *taskProgress   `json:"progress"`
}

// taskProgress is the progress field of a task document: its latest
// progress report.
type taskProgress struct {
	Done      int64  `json:"done"`
	Total     int64  `json:"total"`
	Message   string `json:"message"`
	UpdatedAt string `json:"updated_at"`
}

// eventsPageDoc is a page of GET /v1/tasks/{id}/events.
type eventsPageDoc struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// readEvents calls fn for the events of task id after the sequence number
// after (-1: all), page by page, reading at most limit events; fn gets each
// event decoded and as it came.
func readEvents(ctx context.Context, c *apiClient, id string, after int64, limit int, fn func(liveEvent, json.RawMessage)) error {
	n := 0
	for n < limit {
		q := url.Values{"limit": {strconv.Itoa(min(eventsPage, limit-n))}}
		if after >= 0 {
			q.Set("after", strconv.FormatInt(after, 10))
		}
		var page eventsPageDoc
		if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/tasks/" + url.PathEscape(id) + "/events?" + q.Encode()}, &page); err != nil {
			return err
		}
		for _, raw := range page.Data {
			var e liveEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			fn(e, raw)
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
	var t taskSummary
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("decode task: %w", err)
	}
	var last, logs []liveEvent
	var progress liveView
	var lastProgress *liveEvent
	after := int64(-1)
	if t.LastSequenceNumber >= summaryScan {
		after = t.LastSequenceNumber - summaryScan
	}
	err := readEvents(ctx, c, t.ID, after, summaryScan, func(e liveEvent, _ json.RawMessage) {
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
	fmt.Fprintf(w, "created    %s\n", t.CreatedAt)
	if t.StartedAt != "" {
		fmt.Fprintf(w, "started    %s%s\n", t.StartedAt, since(t.CreatedAt, t.StartedAt, "after creation"))
	}
	if t.FinishedAt != "" {
		fmt.Fprintf(w, "finished   %s%s\n", t.FinishedAt, since(firstNonEmpty(t.StartedAt, t.CreatedAt), t.FinishedAt, "run"))
	}
	switch {
	case t.Progress != nil:
		p := t.Progress
		fmt.Fprintf(w, "progress   %s   (at %s)\n", progress.bar(eventData{Done: &p.Done, Total: p.Total, Message: p.Message}, p.UpdatedAt), clock(p.UpdatedAt))
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
func appendBounded(s []liveEvent, e liveEvent, n int) []liveEvent {
	s = append(s, e)
	if len(s) > n {
		s = append(s[:0], s[len(s)-n:]...)
	}
	return s
}

// since is ", <d> <what>" for the time from a to b, or "".
func since(a, b, what string) string {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	if err1 != nil || err2 != nil {
		return ""
	}
	return fmt.Sprintf(" (%s %s)", tb.Sub(ta), what)
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
func writeLogLine(w io.Writer, e liveEvent) {
	var d eventData
	_ = json.Unmarshal(e.Data, &d)
	if d.Dropped > 0 {
		fmt.Fprintf(w, "%s  (%d more lines dropped)\n", clock(e.CreatedAt), d.Dropped)
		return
	}
	fmt.Fprintf(w, "%s  %-5s %s\n", clock(e.CreatedAt), d.Level, d.Message)
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
			print := func(e liveEvent, data []byte) {
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
				_, err := followEvents(cmd.Context(), c, args[0], -1, cmd.ErrOrStderr(), func(ev sseEvent, e liveEvent) {
					print(e, ev.Data)
				})
				return err
			}
			return readEvents(cmd.Context(), c, args[0], -1, math.MaxInt, func(e liveEvent, raw json.RawMessage) {
				print(e, raw)
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the task ends")
	return cmd
}
