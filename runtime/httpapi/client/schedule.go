package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ScheduleSpec is when a schedule ticks: exactly one of Cron (in
// Timezone) and IntervalMS.
type ScheduleSpec struct {
	// Cron is a five-field cron expression or a descriptor (@hourly,
	// @daily, @weekly, @monthly, @yearly).
	Cron string `json:"cron,omitempty"`
	// Timezone is the IANA time zone of Cron; "" is UTC.
	Timezone string `json:"timezone,omitempty"`
	// IntervalMS ticks every IntervalMS milliseconds (at least 1000),
	// OffsetMS after each multiple of it since the Unix epoch.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	OffsetMS   int64 `json:"offset_ms,omitempty"`
	// JitterMS delays each tick by up to JitterMS, fixed per tick.
	JitterMS int64 `json:"jitter_ms,omitempty"`
	// StartAt and EndAt bound the nominal ticks; nil is none.
	StartAt *time.Time `json:"start_at,omitempty"`
	EndAt   *time.Time `json:"end_at,omitempty"`
}

// ScheduleRequest is the body of POST /v1/schedules.
type ScheduleRequest struct {
	// ScheduleID names the schedule for the client; "" makes a "sch_" id.
	ScheduleID string `json:"schedule_id,omitempty"`
	// Spec says when it ticks.
	Spec *ScheduleSpec `json:"spec"`
	// OverlapPolicy is skip (the default), buffer_one, allow_all or
	// cancel_other.
	OverlapPolicy string `json:"overlap_policy,omitempty"`
	// CatchupWindowMS is how late, after downtime, a tick still starts;
	// nil is the default (60000).
	CatchupWindowMS *int64 `json:"catchup_window_ms,omitempty"`
	// Paused creates it paused; Note says why.
	Paused bool   `json:"paused,omitempty"`
	Note   string `json:"note,omitempty"`
	// Action is the task each tick starts, as POST /v1/tasks takes it
	// (without a workflow id: each tick names its own).
	Action *TaskRequest `json:"action"`
}

// ScheduleRun is one of the latest runs of a schedule.
type ScheduleRun struct {
	// Key is the run's identity within the schedule: the tick's nominal
	// time (RFC 3339, UTC), or "trigger-" and the trigger's time.
	Key string `json:"key"`
	// NominalTime is the tick's nominal time (a trigger's time).
	NominalTime time.Time `json:"nominal_time"`
	// StartedAt is when its task was created.
	StartedAt time.Time `json:"started_at"`
	// TaskID is its task, and Status the task's status ("" once purged).
	TaskID string `json:"task_id"`
	Status string `json:"status"`
	// Trigger is set for a run started by POST .../trigger.
	Trigger bool `json:"trigger"`
}

// Schedule is the schedule document.
type Schedule struct {
	Object          string       `json:"object"`
	ScheduleID      string       `json:"schedule_id"`
	ClientID        string       `json:"client_id"`
	Spec            ScheduleSpec `json:"spec"`
	OverlapPolicy   string       `json:"overlap_policy"`
	CatchupWindowMS int64        `json:"catchup_window_ms"`
	Action          TaskRequest  `json:"action"`
	Paused          bool         `json:"paused"`
	Note            string       `json:"note"`
	// LastTickAt is the cursor: the nominal time of the last tick handled.
	LastTickAt time.Time `json:"last_tick_at"`
	// NextRunAt is when the next tick falls due; nil while paused or
	// after the end.
	NextRunAt *time.Time `json:"next_run_at"`
	// NextRuns lists the due times of the next few ticks (GET of one
	// schedule only).
	NextRuns []time.Time `json:"next_runs,omitempty"`
	// LastRuns are the latest runs, newest first (GET of one schedule
	// only).
	LastRuns []ScheduleRun `json:"last_runs,omitempty"`
	// Buffered is the key of the run waiting for the open one to end
	// (buffer_one), or "".
	Buffered string `json:"buffered"`
	// Missed counts ticks past the catch-up window, Skipped those the
	// overlap policy skipped.
	Missed    int64     `json:"missed"`
	Skipped   int64     `json:"skipped"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ScheduleNote is the optional body of POST .../pause and .../resume.
type ScheduleNote struct {
	Note string `json:"note"`
}

// ScheduleTrigger is the answer of POST /v1/schedules/{id}/trigger.
type ScheduleTrigger struct {
	Object     string `json:"object"`
	ScheduleID string `json:"schedule_id"`
	// Key is the run's key ("trigger-<time>").
	Key string `json:"key"`
	// Buffered is set when the run waits for the open one (buffer_one);
	// Task is then nil.
	Buffered bool  `json:"buffered"`
	Task     *Task `json:"task"`
}

// ScheduleCreate creates a schedule: POST /v1/schedules answers 201.
func (c *Client) ScheduleCreate(ctx context.Context, req *ScheduleRequest) (*Schedule, error) {
	var s Schedule
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/schedules", req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ScheduleGet returns one schedule with its last and next runs.
func (c *Client) ScheduleGet(ctx context.Context, id string) (*Schedule, error) {
	var s Schedule
	if err := c.jsonCall(ctx, http.MethodGet, "/v1/schedules/"+esc(id), nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ScheduleList returns one page of the client's schedules, by id.
func (c *Client) ScheduleList(ctx context.Context, cursor string, limit int) (*List[Schedule], error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/schedules"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l List[Schedule]
	if err := c.jsonCall(ctx, http.MethodGet, path, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// SchedulePause pauses a schedule, with an optional note.
func (c *Client) SchedulePause(ctx context.Context, id, note string) (*Schedule, error) {
	return c.scheduleAction(ctx, id, "pause", note)
}

// ScheduleResume resumes a paused schedule from now.
func (c *Client) ScheduleResume(ctx context.Context, id, note string) (*Schedule, error) {
	return c.scheduleAction(ctx, id, "resume", note)
}

func (c *Client) scheduleAction(ctx context.Context, id, action, note string) (*Schedule, error) {
	var s Schedule
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/schedules/"+esc(id)+"/"+action, &ScheduleNote{Note: note}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ScheduleTrigger starts one run of a schedule now.
func (c *Client) ScheduleTrigger(ctx context.Context, id string) (*ScheduleTrigger, error) {
	var t ScheduleTrigger
	if err := c.jsonCall(ctx, http.MethodPost, "/v1/schedules/"+esc(id)+"/trigger", nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ScheduleDelete deletes a schedule; its runs go on.
func (c *Client) ScheduleDelete(ctx context.Context, id string) error {
	return c.jsonCall(ctx, http.MethodDelete, "/v1/schedules/"+esc(id), nil, nil)
}
