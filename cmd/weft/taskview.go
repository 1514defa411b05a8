package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// eventData is the union of the event data fields the readable views show.
type eventData struct {
	Status   string            `json:"status"`
	From     string            `json:"from"`
	Attempt  int               `json:"attempt"`
	Reason   string            `json:"reason"`
	Error    *client.TaskError `json:"error"`
	RetryAt  string            `json:"retry_at"`
	Level    string            `json:"level"`
	Message  string            `json:"message"`
	Dropped  int64             `json:"dropped"`
	TaskID   string            `json:"task_id"`
	Module   string            `json:"module"`
	Function string            `json:"function"`
	Name     string            `json:"name"`
	Duration int64             `json:"duration_ms"`
	FireAt   string            `json:"fire_at"`
	Timeout  *int64            `json:"timeout_ms"`
	Done     *int64            `json:"done"`
	Total    int64             `json:"total"`
}

// liveView is what the readable view of one task's events remembers: the
// first task.progress event seen, for the rate and the time left, and the
// module and function of each activity scheduled, to name it when it ends.
type liveView struct {
	firstDone  int64
	firstAt    time.Time
	seen       bool
	activities map[string]string
	signal     string // the signal waited for last
}

// activity names the child task id: module.function (id) when its
// scheduling was seen, the id alone otherwise.
func (p *liveView) activity(id string) string {
	if name, ok := p.activities[id]; ok {
		return name + " (" + id + ")"
	}
	return id
}

// describe returns a line that says what the event means, for a person.
func (p *liveView) describe(e client.Event) string {
	var d eventData
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case "response.created":
		return "created"
	case "task.status_changed", "response.in_progress":
		s := d.Status
		if d.Attempt > 0 && (d.Status == "running" || d.Status == "loading") {
			s += fmt.Sprintf(" (attempt %d)", d.Attempt)
		}
		if d.Reason != "" {
			s += ", " + d.Reason
		}
		return s
	case "task.attempt_failed":
		s := fmt.Sprintf("attempt %d failed", d.Attempt)
		if d.Error != nil {
			s += ": " + errorText(d.Error)
		}
		if d.RetryAt != "" {
			s += "; next attempt at " + clock(d.RetryAt)
		}
		return s
	case "task.recovered":
		if d.Reason != "" {
			return "recovered after a restart (" + d.Reason + ")"
		}
		return "recovered after a restart"
	case "task.log":
		if d.Dropped > 0 {
			return fmt.Sprintf("log: %d more lines dropped", d.Dropped)
		}
		return fmt.Sprintf("log %-5s %s", d.Level, d.Message)
	case "task.progress":
		return p.bar(d, e.CreatedAt)
	case "activity.scheduled":
		if p.activities == nil {
			p.activities = make(map[string]string)
		}
		if len(p.activities) < maxNamedActivities {
			p.activities[d.TaskID] = d.Module + "." + d.Function
		}
		return fmt.Sprintf("activity %s.%s scheduled as %s", d.Module, d.Function, d.TaskID)
	case "activity.completed":
		return "activity " + p.activity(d.TaskID) + " completed"
	case "activity.failed":
		s := "activity " + p.activity(d.TaskID) + " failed"
		if d.Error != nil {
			s += ": " + errorText(d.Error)
		}
		return s
	case "timer.started":
		return fmt.Sprintf("timer of %s, fires at %s", time.Duration(d.Duration)*time.Millisecond, clock(d.FireAt))
	case "timer.fired":
		return "timer fired"
	case "signal.waiting":
		p.signal = d.Name
		if d.Timeout != nil && *d.Timeout >= 0 {
			return fmt.Sprintf("waiting for signal %q (at most %s)", d.Name, time.Duration(*d.Timeout)*time.Millisecond)
		}
		return fmt.Sprintf("waiting for signal %q", d.Name)
	case "signal.received":
		return fmt.Sprintf("signal %q received", d.Name)
	case "signal.timed_out":
		return fmt.Sprintf("no signal %q in time", firstNonEmpty(d.Name, p.signal))
	case "response.completed", "response.failed", "response.cancelled":
		return strings.TrimPrefix(e.Type, "response.")
	}
	return ""
}

const (
	// barWidth is the width of a progress bar in characters.
	barWidth = 24
	// maxNamedActivities bounds the activity names a live view keeps.
	maxNamedActivities = 10_000
)

// bar draws a progress event: a bar when the total is known, the count,
// the rate since the first progress event seen and the time left.
func (p *liveView) bar(d eventData, at time.Time) string {
	done := int64(0)
	if d.Done != nil {
		done = *d.Done
	}
	if !p.seen {
		p.seen, p.firstDone, p.firstAt = true, done, at
	}
	var b strings.Builder
	if d.Total > 0 {
		filled := int(min(done, d.Total) * barWidth / d.Total)
		fmt.Fprintf(&b, "[%s%s] %d/%d %3d%%", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
			done, d.Total, min(done, d.Total)*100/d.Total)
	} else {
		fmt.Fprintf(&b, "%d done", done)
	}
	if secs := at.Sub(p.firstAt).Seconds(); secs > 0 && done > p.firstDone {
		rate := float64(done-p.firstDone) / secs
		fmt.Fprintf(&b, "  %.1f/s", rate)
		if d.Total > done {
			left := time.Duration(float64(d.Total-done) / rate * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", left.Round(time.Second))
		}
	}
	if d.Message != "" {
		b.WriteString("  " + d.Message)
	}
	return b.String()
}

// errorText is an error as a person reads it: the plugin's type when it
// gave one, else the code, then the message.
func errorText(e *client.TaskError) string {
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Code + ": " + e.Message
}

// clock is the time of day of an RFC 3339 time, or the text as it is.
func clock(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return clockOf(t)
}

// clockOf is the time of day of t.
func clockOf(t time.Time) string { return t.Local().Format("15:04:05.000") }

// writeLiveLine prints one event of a live view: sequence number, type,
// time of day and what it means.
func writeLiveLine(w io.Writer, p *liveView, e client.Event) {
	fmt.Fprintf(w, "%4d  %-22s %s  %s\n", e.SequenceNumber, e.Type, clockOf(e.CreatedAt), p.describe(e))
}
