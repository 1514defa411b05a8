package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// newSchedulesCmd is weft schedules: the client commands of
// /v1/schedules (docs/workflows.md, "Schedules").
func newSchedulesCmd() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{Use: "schedules", Short: "create, list, inspect, pause, resume, trigger and delete schedules"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(scheduleCreateCmd(&o), scheduleListCmd(&o), scheduleGetCmd(&o),
		scheduleNoteCmd(&o, "pause", "pause a schedule: no tick starts until it is resumed (open runs go on)"),
		scheduleNoteCmd(&o, "resume", "resume a paused schedule from now (the ticks it missed while paused do not start)"),
		scheduleTriggerCmd(&o), scheduleDeleteCmd(&o))
	return cmd
}

func schedulePath(id string) string { return "/v1/schedules/" + url.PathEscape(id) }

func scheduleCreateCmd(o *clientOptions) *cobra.Command {
	var (
		id, cron, timezone, every, offset, jitter, start, end, overlap, catchup, note string
		input, inputFile, onRestart, timeout, memoryLimit, idemKey                    string
		paused                                                                        bool
		retry                                                                         retryFlags
		timeouts                                                                      timeoutFlags
	)
	cmd := &cobra.Command{
		Use:               "create MODULE FUNCTION",
		ValidArgsFunction: completeModuleNames(o, true),
		Short:             "create a schedule that starts FUNCTION of MODULE on a cron expression or an interval",
		Long: "create stores a schedule: each tick starts one task of FUNCTION with the input.\n" +
			"Give --cron (five fields or @hourly, @daily…, read in --timezone) or --every\n" +
			"(at least 1s, with an optional --offset). Each tick has a fixed identity, its\n" +
			"nominal time: it starts its task exactly once, also across restarts.\n" +
			"--overlap says what a tick does while the last run is open: skip (default),\n" +
			"buffer_one, allow_all or cancel_other. After downtime, the ticks that fell due\n" +
			"within --catchup-window (default 1m) start; older ones count as missed.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := map[string]any{}
			if cron != "" {
				spec["cron"] = cron
			}
			if timezone != "" {
				spec["timezone"] = timezone
			}
			for _, f := range []struct {
				name, v, key string
			}{{"--every", every, "interval_ms"}, {"--offset", offset, "offset_ms"}, {"--jitter", jitter, "jitter_ms"}} {
				if f.v == "" {
					continue
				}
				d, err := parseDurationOrZero(f.v)
				if err != nil {
					return usageError{fmt.Errorf("%s: %w", f.name, err)}
				}
				spec[f.key] = d.Milliseconds()
			}
			if start != "" {
				spec["start_at"] = start
			}
			if end != "" {
				spec["end_at"] = end
			}
			env, err := inputEnvelope(cmd.InOrStdin(), input, inputFile, "null")
			if err != nil {
				return err
			}
			action := map[string]any{"module": args[0], "function": args[1], "input": env}
			if onRestart != "" {
				action["on_restart"] = onRestart
			}
			d, err := parseDuration(timeout)
			if err != nil {
				return err
			}
			if d > 0 {
				action["timeout_ms"] = d.Milliseconds()
			}
			if err := timeouts.add(action); err != nil {
				return err
			}
			policy, err := retry.policy(cmd)
			if err != nil {
				return err
			}
			if policy != nil {
				action["retry"] = policy
			}
			if memoryLimit != "" {
				n, err := daemon.ParseSize(memoryLimit)
				if err != nil {
					return usageError{fmt.Errorf("--memory-limit: %w", err)}
				}
				action["memory_limit_bytes"] = n
			}
			req := map[string]any{"spec": spec, "action": action}
			if id != "" {
				req["schedule_id"] = id
			}
			if overlap != "" {
				req["overlap_policy"] = overlap
			}
			if catchup != "" {
				d, err := parseDurationOrZero(catchup)
				if err != nil {
					return usageError{fmt.Errorf("--catchup-window: %w", err)}
				}
				req["catchup_window_ms"] = d.Milliseconds()
			}
			if paused {
				req["paused"] = true
			}
			if note != "" {
				req["note"] = note
			}
			body, err := jsonBody(req)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			h := http.Header{}
			if idemKey != "" {
				h.Set("Idempotency-Key", idemKey)
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: "/v1/schedules", Body: body, Header: h}, &raw); err != nil {
				return err
			}
			return printSchedule(cmd.OutOrStdout(), raw, o.json)
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the schedule's id for this client (default: a new sch_… id)")
	f.StringVar(&cron, "cron", "", `cron expression: five fields ("0 3 * * *") or @hourly, @daily, @weekly, @monthly, @yearly`)
	f.StringVar(&timezone, "timezone", "", "IANA time zone of --cron, e.g. Europe/Paris (default UTC)")
	f.StringVar(&every, "every", "", "tick at a fixed interval instead, e.g. 30s or 1h (at least 1s)")
	f.StringVar(&offset, "offset", "", "shift --every's ticks from the multiples of the interval, e.g. 15s")
	f.StringVar(&jitter, "jitter", "", "delay each tick by up to this, the same for a tick on every host and restart")
	f.StringVar(&start, "start", "", "no tick before this time (RFC 3339)")
	f.StringVar(&end, "end", "", "no tick after this time (RFC 3339)")
	f.StringVar(&overlap, "overlap", "", "a tick while the last run is open: skip (default), buffer_one, allow_all or cancel_other")
	f.StringVar(&catchup, "catchup-window", "", "after downtime, start the ticks that fell due this long ago at most (default 1m; 0 starts none)")
	f.BoolVar(&paused, "paused", false, "create the schedule paused")
	f.StringVar(&note, "note", "", "a note, such as why it is paused")
	f.StringVar(&input, "input", "", "input of each run as JSON (typed projection); default null")
	f.StringVar(&inputFile, "input-file", "", "read the input JSON from this file (- for stdin)")
	f.StringVar(&onRestart, "on-restart", "", "what a daemon restart does to a run: fail, retry or resume")
	f.StringVar(&timeout, "timeout", "", "wall-clock limit of one attempt of a run, e.g. 30s")
	f.StringVar(&memoryLimit, "memory-limit", "", "memory limit of each plugin call, e.g. 128MiB")
	f.StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key header for a safe retry")
	retry.register(f)
	timeouts.register(f)
	return cmd
}

// parseDurationOrZero is parseDuration that also takes 0.
func parseDurationOrZero(s string) (time.Duration, error) {
	if s == "0" || s == "0s" {
		return 0, nil
	}
	d, err := parseDuration(s)
	if ue, ok := err.(usageError); ok {
		return 0, ue.err
	}
	return d, err
}

func scheduleListCmd(o *clientOptions) *cobra.Command {
	var cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list this client's schedules, by id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodGet, Path: "/v1/schedules?" + q.Encode()}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var page client.List[client.Schedule]
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("decode schedule list: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSPEC\tACTION\tOVERLAP\tSTATE\tNEXT RUN\tMISSED\tSKIPPED")
			for _, s := range page.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%d\t%d\n", s.ScheduleID, specText(&s.Spec), s.Action.Module, s.Action.Function,
					s.OverlapPolicy, stateText(&s), orDash(rfc3339p(s.NextRunAt)), s.Missed, s.Skipped)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "more: weft schedules list --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a listing from this cursor")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many schedules")
	return cmd
}

func scheduleGetCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "get SCHEDULE_ID",
		Short: "show a schedule: spec, action, state, next runs and last runs with their tasks' status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodGet, Path: schedulePath(args[0])}, &raw); err != nil {
				return err
			}
			return printSchedule(cmd.OutOrStdout(), raw, o.json)
		},
	}
}

func scheduleNoteCmd(o *clientOptions, action, short string) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   action + " SCHEDULE_ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			body, err := jsonBody(client.ScheduleNote{Note: note})
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: schedulePath(args[0]) + "/" + action, Body: body}, &raw); err != nil {
				return err
			}
			return printSchedule(cmd.OutOrStdout(), raw, o.json)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (shown by get)")
	return cmd
}

func scheduleTriggerCmd(o *clientOptions) *cobra.Command {
	var idemKey string
	cmd := &cobra.Command{
		Use:   "trigger SCHEDULE_ID",
		Short: "start one run of a schedule now (the overlap policy applies) and print its task id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			h := http.Header{}
			if idemKey != "" {
				h.Set("Idempotency-Key", idemKey)
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: schedulePath(args[0]) + "/trigger", Header: h}, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var t client.ScheduleTrigger
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode trigger: %w", err)
			}
			if t.Task == nil {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "buffered %s: it starts when the open run ends\n", t.Key)
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), t.Task.ID)
			return err
		},
	}
	cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key header for a safe retry")
	return cmd
}

func scheduleDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete SCHEDULE_ID",
		Short: "delete a schedule: no tick starts after it (open runs go on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodDelete, Path: schedulePath(args[0])}, nil); err != nil {
				return err
			}
			if o.json {
				return nil
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return err
		},
	}
}

// printSchedule prints a schedule document: raw with --json, readable
// otherwise.
func printSchedule(w io.Writer, raw []byte, asJSON bool) error {
	if asJSON {
		_, err := fmt.Fprintln(w, string(raw))
		return err
	}
	var s client.Schedule
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("decode schedule: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "schedule\t%s\n", s.ScheduleID)
	fmt.Fprintf(tw, "spec\t%s\n", specText(&s.Spec))
	fmt.Fprintf(tw, "action\t%s %s\n", s.Action.Module, s.Action.Function)
	fmt.Fprintf(tw, "overlap\t%s\n", s.OverlapPolicy)
	fmt.Fprintf(tw, "catch-up window\t%s\n", time.Duration(s.CatchupWindowMS)*time.Millisecond)
	fmt.Fprintf(tw, "state\t%s\n", stateText(&s))
	if s.Note != "" {
		fmt.Fprintf(tw, "note\t%s\n", s.Note)
	}
	fmt.Fprintf(tw, "last tick\t%s\n", rfc3339(s.LastTickAt))
	fmt.Fprintf(tw, "next run\t%s\n", orDash(rfc3339p(s.NextRunAt)))
	if s.Buffered != "" {
		fmt.Fprintf(tw, "buffered\t%s\n", s.Buffered)
	}
	fmt.Fprintf(tw, "missed\t%d\n", s.Missed)
	fmt.Fprintf(tw, "skipped\t%d\n", s.Skipped)
	fmt.Fprintf(tw, "created\t%s\n", rfc3339(s.CreatedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.NextRuns) > 0 {
		fmt.Fprintln(w, "next runs:")
		for _, n := range s.NextRuns {
			fmt.Fprintf(w, "  %s\n", rfc3339(n))
		}
	}
	if len(s.LastRuns) > 0 {
		fmt.Fprintln(w, "last runs:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tSTARTED\tTASK\tSTATUS")
		for _, r := range s.LastRuns {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Key, rfc3339(r.StartedAt), r.TaskID, orDash(r.Status))
		}
		return tw.Flush()
	}
	return nil
}

func specText(s *client.ScheduleSpec) string {
	var b strings.Builder
	if s.Cron != "" {
		fmt.Fprintf(&b, "cron %q", s.Cron)
		if s.Timezone != "" {
			fmt.Fprintf(&b, " %s", s.Timezone)
		}
	} else {
		fmt.Fprintf(&b, "every %s", time.Duration(s.IntervalMS)*time.Millisecond)
		if s.OffsetMS > 0 {
			fmt.Fprintf(&b, " +%s", time.Duration(s.OffsetMS)*time.Millisecond)
		}
	}
	if s.JitterMS > 0 {
		fmt.Fprintf(&b, " jitter %s", time.Duration(s.JitterMS)*time.Millisecond)
	}
	return b.String()
}

func stateText(s *client.Schedule) string {
	switch {
	case s.Paused:
		return "paused"
	case s.NextRunAt == nil:
		return "ended"
	}
	return "active"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
