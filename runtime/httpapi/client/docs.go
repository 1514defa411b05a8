package client

import (
	"encoding/json"
	"time"

	"github.com/weft-run/weft/codec"
)

// TaskRequest is the body of POST /v1/tasks and POST /v1/responses.
type TaskRequest struct {
	// Module and Function name what runs.
	Module   string `json:"module"`
	Function string `json:"function"`
	// Input is the {codec, blob} envelope of the input (InputOf builds
	// it); nil or JSON null sends the null value.
	Input json.RawMessage `json:"input"`
	// OnRestart is what a daemon restart does to the task: fail, retry or
	// resume; "" is the default (resume a workflow, retry an activity).
	OnRestart string `json:"on_restart"`
	// TimeoutMS bounds one attempt; 0 is no timeout.
	TimeoutMS int64 `json:"timeout_ms"`
	// ExecutionTimeoutMS bounds a workflow's whole execution, across its
	// attempts and waits; 0 is none.
	ExecutionTimeoutMS int64 `json:"execution_timeout_ms,omitempty"`
	// RunTimeoutMS bounds each attempt of a workflow, waits included; 0 is
	// none.
	RunTimeoutMS int64 `json:"run_timeout_ms,omitempty"`
	// ScheduleToStartTimeoutMS bounds how long an activity stays queued
	// before a worker takes it; 0 is none.
	ScheduleToStartTimeoutMS int64 `json:"schedule_to_start_timeout_ms,omitempty"`
	// HeartbeatTimeoutMS is the longest an activity's attempt may go
	// without a heartbeat; 0 is none.
	HeartbeatTimeoutMS int64 `json:"heartbeat_timeout_ms,omitempty"`
	// Retry is the activity's retry policy; nil is the daemon's default.
	Retry *RetryPolicy `json:"retry"`
	// MemoryLimitBytes bounds each plugin call's memory; 0 is the default.
	MemoryLimitBytes int64 `json:"memory_limit_bytes"`
	// WorkflowID names a workflow for the client: no two of its open runs
	// share one; "" is none.
	WorkflowID string `json:"workflow_id,omitempty"`
	// WorkflowIDReusePolicy says whether the workflow id may follow an
	// ended run: allow_duplicate (the default), allow_duplicate_failed_only
	// or reject_duplicate.
	WorkflowIDReusePolicy string `json:"workflow_id_reuse_policy,omitempty"`
}

// InputOf returns the JSON of envelope e, for TaskRequest.Input and
// SignalRequest.Input.
func InputOf(e codec.Envelope) json.RawMessage {
	b, err := json.Marshal(e)
	if err != nil {
		// An envelope is two strings: its encoding cannot fail.
		panic("encode envelope: " + err.Error())
	}
	return b
}

// RetryPolicy is a retry policy (activity retries: exponential backoff with
// jitter). Intervals are in milliseconds; a zero field is the default.
type RetryPolicy struct {
	InitialIntervalMS      int64    `json:"initial_interval_ms"`
	BackoffCoefficient     float64  `json:"backoff_coefficient"`
	MaximumIntervalMS      int64    `json:"maximum_interval_ms"`
	MaximumAttempts        int      `json:"maximum_attempts"`
	NonRetryableErrorTypes []string `json:"non_retryable_error_types"`
}

// Task is a task as the API shows it. Each payload appears twice: the
// lossless envelope and its typed projection.
type Task struct {
	ID               string       `json:"id"`
	Object           string       `json:"object"`
	Module           string       `json:"module"`
	ModuleDigest     string       `json:"module_digest"`
	Function         string       `json:"function"`
	Kind             string       `json:"kind"`
	Status           string       `json:"status"`
	OnRestart        string       `json:"on_restart"`
	TimeoutMS        int64        `json:"timeout_ms"`
	MemoryLimitBytes int64        `json:"memory_limit_bytes"`
	Retry            *RetryPolicy `json:"retry"`
	Attempt          int          `json:"attempt"`
	// Deadline is a workflow's execution deadline (its creation plus its
	// execution timeout), absent without one.
	Deadline *time.Time `json:"deadline,omitempty"`
	// RunTimeoutMS is a workflow's run timeout, absent without one.
	RunTimeoutMS int64 `json:"run_timeout_ms,omitempty"`
	// RunDeadline is when the current attempt's run timeout passes, absent
	// without one or before the first attempt.
	RunDeadline *time.Time `json:"run_deadline,omitempty"`
	// ScheduleToStartTimeoutMS is an activity's schedule-to-start timeout,
	// absent without one.
	ScheduleToStartTimeoutMS int64 `json:"schedule_to_start_timeout_ms,omitempty"`
	// HeartbeatTimeoutMS is an activity's heartbeat timeout, absent
	// without one.
	HeartbeatTimeoutMS int64 `json:"heartbeat_timeout_ms,omitempty"`
	// Host is the host that holds the task's lease (it claimed the task
	// and runs it), absent while none does: queued, waiting (a workflow)
	// or finished.
	Host           string          `json:"host,omitempty"`
	InputEnvelope  *codec.Envelope `json:"input_envelope"`
	Input          json.RawMessage `json:"input"`
	OutputEnvelope *codec.Envelope `json:"output_envelope"`
	Output         json.RawMessage `json:"output"`
	// InputProjectionOmitted and OutputProjectionOmitted say that the
	// projection is left out for its size (the envelope is still there).
	InputProjectionOmitted  bool       `json:"input_projection_omitted,omitempty"`
	OutputProjectionOmitted bool       `json:"output_projection_omitted,omitempty"`
	Error                   *TaskError `json:"error"`
	ClientID                string     `json:"client_id"`
	ParentTaskID            string     `json:"parent_task_id,omitempty"`
	// WorkflowID is the workflow id the task was started with, absent
	// without one.
	WorkflowID string `json:"workflow_id,omitempty"`
	// ContinuedFromTaskID is the run of the same workflow that continued
	// as new into this one, absent for a first run.
	ContinuedFromTaskID string `json:"continued_from_task_id,omitempty"`
	// ParentClosePolicy is what a child workflow's parent does to it at
	// its end: terminate, request_cancel or abandon; absent otherwise.
	ParentClosePolicy string `json:"parent_close_policy,omitempty"`
	// CancelRequestedAt is when the workflow was asked to cancel
	// (POST /v1/tasks/{id}/cancel), absent while nobody asked.
	CancelRequestedAt  *time.Time `json:"cancel_requested_at,omitempty"`
	ResponseID         string     `json:"response_id"`
	LastSequenceNumber int64      `json:"last_sequence_number"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	StartedAt          *time.Time `json:"started_at"`
	FinishedAt         *time.Time `json:"finished_at"`
	// Progress is the latest progress report of the task's activity, or
	// nil before the first.
	Progress *Progress `json:"progress"`
}

// Progress is a task's latest progress report.
type Progress struct {
	Done      int64     `json:"done"`
	Total     int64     `json:"total"`
	Message   string    `json:"message"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TaskError is the error of a failed task (or the reason of a cancelled
// one), with its optional details both as envelope and projection.
type TaskError struct {
	Code            string          `json:"code"`
	Message         string          `json:"message"`
	Type            string          `json:"type,omitempty"`
	NonRetryable    bool            `json:"non_retryable,omitempty"`
	DetailsEnvelope *codec.Envelope `json:"details_envelope,omitempty"`
	Details         json.RawMessage `json:"details,omitempty"`
	// DetailsProjectionOmitted says that Details is left out for its size.
	DetailsProjectionOmitted bool `json:"details_projection_omitted,omitempty"`
}

// Response is the stored outcome of a finished task: GET
// /v1/responses/{id}, POST /v1/responses, and the data of a terminal event.
type Response struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"`
	TaskID         string          `json:"task_id"`
	Status         string          `json:"status"`
	OutputEnvelope *codec.Envelope `json:"output_envelope"`
	Output         json.RawMessage `json:"output"`
	// OutputProjectionOmitted says that Output is left out for its size.
	OutputProjectionOmitted bool       `json:"output_projection_omitted,omitempty"`
	Error                   *TaskError `json:"error"`
	CreatedAt               time.Time  `json:"created_at"`
	FinishedAt              *time.Time `json:"finished_at"`
}

// Event is one task event, in a JSON page and as the data of an SSE event.
// Data is the event's payload; the terminal events (IsTerminalEvent) carry
// the whole Response there.
type Event struct {
	Object         string          `json:"object"`
	Type           string          `json:"type"`
	SequenceNumber int64           `json:"sequence_number"`
	TaskID         string          `json:"task_id"`
	CreatedAt      time.Time       `json:"created_at"`
	Data           json.RawMessage `json:"data"`
}

// Terminal event types: exactly one of them ends a task's log.
const (
	EventCompleted = "response.completed"
	EventFailed    = "response.failed"
	EventCancelled = "response.cancelled"
)

// IsTerminalEvent reports whether an event of type typ ends a task's log.
func IsTerminalEvent(typ string) bool {
	return typ == EventCompleted || typ == EventFailed || typ == EventCancelled
}

// Response decodes the response a terminal event carries.
func (e *Event) Response() (*Response, error) {
	if !IsTerminalEvent(e.Type) {
		return nil, &DecodeError{What: "terminal event", Err: errNotTerminal(e.Type)}
	}
	var r Response
	if err := json.Unmarshal(e.Data, &r); err != nil {
		return nil, &DecodeError{What: "terminal event", Err: err}
	}
	return &r, nil
}

// Module is a deployed module.
type Module struct {
	Object    string     `json:"object"`
	Name      string     `json:"name"`
	Version   int        `json:"version"`
	Digest    string     `json:"digest"`
	Size      int64      `json:"size"`
	Functions []Function `json:"functions"`
	CreatedAt time.Time  `json:"created_at"`
	// Unchanged is set on the answer of a deploy of the bytes the latest
	// version has already: no version was added.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Function is one function a module exports.
type Function struct {
	Name string `json:"name"`
	// Kind is activity or workflow.
	Kind string `json:"kind"`
}

// SignalRequest is the body of POST /v1/tasks/{id}/signals/{name}.
type SignalRequest struct {
	// Input is the {codec, blob} envelope of the signal's value (InputOf
	// builds it); nil sends the null value.
	Input json.RawMessage `json:"input"`
}

// Signal acknowledges a signal.
type Signal struct {
	Object string `json:"object"`
	TaskID string `json:"task_id"`
	Name   string `json:"name"`
}

// QueryRequest is the body of POST /v1/tasks/{id}/queries/{name}.
type QueryRequest struct {
	// Input is the {codec, blob} envelope of the query's argument (InputOf
	// builds it); nil sends the null value.
	Input json.RawMessage `json:"input"`
}

// QueryResult is the answer of a workflow's query handler.
type QueryResult struct {
	Object string `json:"object"`
	TaskID string `json:"task_id"`
	Name   string `json:"name"`
	// Status is the task's status when the query read it.
	Status         string          `json:"status"`
	OutputEnvelope *codec.Envelope `json:"output_envelope"`
	Output         json.RawMessage `json:"output"`
	// OutputProjectionOmitted says that Output is left out for its size.
	OutputProjectionOmitted bool `json:"output_projection_omitted,omitempty"`
}

// PairingRequest is the body of POST /v1/pairings.
type PairingRequest struct {
	// Scopes the code grants; none is the daemon's default scopes.
	Scopes []string `json:"scopes"`
	// TTLSeconds is how long the code lives; 0 is the daemon's default.
	TTLSeconds int64 `json:"ttl_seconds"`
}

// Pairing is a fresh one-time pairing code.
type Pairing struct {
	Object    string    `json:"object"`
	Code      string    `json:"code"`
	Scopes    []string  `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PairRequest is the body of POST /v1/pair.
type PairRequest struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

// PairResult is a newly paired client with its token, shown only here.
type PairResult struct {
	Object   string   `json:"object"`
	ClientID string   `json:"client_id"`
	Name     string   `json:"name"`
	Token    string   `json:"token"`
	Scopes   []string `json:"scopes"`
}

// PairedClient is a paired client of the daemon; never its token.
type PairedClient struct {
	ID        string     `json:"id"`
	Object    string     `json:"object"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// MaxMemoryLimitBytes is the client's ceiling on memory_limit_bytes;
	// 0 means the daemon's default.
	MaxMemoryLimitBytes int64 `json:"max_memory_limit_bytes"`
}

// ClientUpdateRequest is the body of PATCH /v1/clients/{id}.
type ClientUpdateRequest struct {
	MaxMemoryLimitBytes *int64 `json:"max_memory_limit_bytes"`
}

// List is a page of a list endpoint. NextCursor, when set, continues it.
type List[T any] struct {
	Object     string `json:"object"`
	Data       []T    `json:"data"`
	NextCursor string `json:"next_cursor,omitempty"`
	HasMore    bool   `json:"has_more"`
}

// ErrorBody is the JSON shape of every failed request:
// {"error":{"type","code","message","param"}}.
type ErrorBody struct {
	Error *Error `json:"error"`
}
