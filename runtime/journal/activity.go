package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// The activity events: a workflow's run schedules an activity; the child
// task's end, or the run that could not schedule it, resolves it.
const (
	// EventActivityScheduled records an activity the workflow scheduled and
	// the child task that runs it.
	EventActivityScheduled = "activity.scheduled"
	// EventActivityCompleted records the result of a child activity task.
	EventActivityCompleted = "activity.completed"
	// EventActivityFailed records the error of a child activity task that
	// failed for good, or of an activity that could not be scheduled.
	EventActivityFailed = "activity.failed"
)

// ActivityScheduled is the payload of EventActivityScheduled.
type ActivityScheduled struct {
	// Attempt is the workflow attempt whose run scheduled the activity.
	Attempt int `json:"attempt,omitempty"`
	// FutureID is the step.
	FutureID int64 `json:"future_id,omitempty"`
	// TaskID is the child task that runs the activity; empty when it could
	// not be scheduled.
	TaskID string `json:"task_id,omitempty"`
	// Module and Function name the activity.
	Module   string `json:"module,omitempty"`
	Function string `json:"function,omitempty"`
	// Digest is the module version the child task is pinned to.
	Digest string `json:"module_digest,omitempty"`
	// Input is the activity's input.
	Input store.Payload `json:"input_envelope,omitzero"`
	// Options are the activity's options; nil when every one is the
	// default.
	Options *ActivityOptions `json:"options,omitempty"`
}

// Type implements Event.
func (*ActivityScheduled) Type() string { return EventActivityScheduled }

func (p *ActivityScheduled) slot(key []byte) slot {
	switch string(key) {
	case "task_id":
		return slot{str: &p.TaskID}
	case "module":
		return slot{str: &p.Module}
	case "function":
		return slot{str: &p.Function}
	case "module_digest":
		return slot{str: &p.Digest}
	case "input_envelope":
		return slot{env: &p.Input}
	}
	return stepSlot(key, &p.Attempt, &p.FutureID)
}

// ActivityCompleted is the payload of EventActivityCompleted, written with
// the end of the child task.
type ActivityCompleted struct {
	// TaskID is the child task.
	TaskID string `json:"task_id,omitempty"`
	// Output is the activity's result.
	Output store.Payload `json:"output_envelope,omitzero"`
}

// Type implements Event.
func (*ActivityCompleted) Type() string { return EventActivityCompleted }

func (p *ActivityCompleted) slot(key []byte) slot {
	switch string(key) {
	case "task_id":
		return slot{str: &p.TaskID}
	case "output_envelope":
		return slot{env: &p.Output}
	}
	return slot{}
}

// ActivityFailed is the payload of EventActivityFailed: written with the
// end of a child task that failed for good or was cancelled (TaskID set),
// or by the run that could not schedule the activity (Attempt, FutureID
// and FailedAt set).
type ActivityFailed struct {
	// Attempt and FutureID name the step of an activity that could not be
	// scheduled.
	Attempt  int   `json:"attempt,omitempty"`
	FutureID int64 `json:"future_id,omitempty"`
	// TaskID is the child task that failed.
	TaskID string `json:"task_id,omitempty"`
	// Error is the activity's error.
	Error *store.TaskError `json:"error,omitempty"`
	// FailedAt is when a run found that the activity could not be
	// scheduled: the time its future resolved.
	FailedAt *time.Time `json:"failed_at,omitempty"`
}

// Type implements Event.
func (*ActivityFailed) Type() string { return EventActivityFailed }

func (p *ActivityFailed) slot(key []byte) slot {
	if string(key) == "task_id" {
		return slot{str: &p.TaskID}
	}
	return stepSlot(key, &p.Attempt, &p.FutureID)
}

// ActivityEnd is the journal event of the end p of an activity task that a
// workflow scheduled: ActivityCompleted for a completion, ActivityFailed
// for a failure or a cancel; nil for a transition that does not end it.
func ActivityEnd(p *store.TaskTransitionParams) Event {
	switch p.To {
	case store.StatusCompleted:
		return &ActivityCompleted{TaskID: p.ID, Output: p.Output}
	case store.StatusFailed:
		return &ActivityFailed{TaskID: p.ID, Error: p.Error}
	case store.StatusCancelled:
		te := p.Error
		if te == nil {
			te = &store.TaskError{Code: string(fault.Cancelled), Type: string(fault.Cancelled), Message: "the activity was cancelled", NonRetryable: true}
		}
		return &ActivityFailed{TaskID: p.ID, Error: te}
	}
	return nil
}

// ActivityOptions are the recorded options of an activity, compared on
// replay.
type ActivityOptions struct {
	// TimeoutMS bounds one attempt, in milliseconds; zero means no limit.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// ScheduleToStartTimeoutMS bounds the time queued, in milliseconds;
	// zero means no limit.
	ScheduleToStartTimeoutMS int64 `json:"schedule_to_start_timeout_ms,omitempty"`
	// HeartbeatTimeoutMS bounds the time between heartbeats, in
	// milliseconds; zero means no limit.
	HeartbeatTimeoutMS int64 `json:"heartbeat_timeout_ms,omitempty"`
	// Retry is the retry policy; nil means one attempt.
	Retry *RetryRecord `json:"retry,omitempty"`
	// Child makes the step a child workflow; nil for an activity.
	Child *ChildRecord `json:"child_workflow,omitempty"`
}

// ChildRecord are the recorded options of a child workflow.
type ChildRecord struct {
	// WorkflowID is the workflow id the call asked for; "" for the
	// child's task id.
	WorkflowID string `json:"workflow_id,omitempty"`
	// ParentClosePolicy is the policy the call asked for; "" for the
	// default, terminate.
	ParentClosePolicy store.ParentClosePolicy `json:"parent_close_policy,omitempty"`
}

// RetryRecord is a recorded activity retry policy, in the words of a
// task's retry policy (maximum_attempts, maximum_interval_ms).
type RetryRecord struct {
	// MaxAttempts is the most attempts, the first included.
	MaxAttempts int `json:"maximum_attempts,omitempty"`
	// InitialIntervalMS is the delay before the first retry.
	InitialIntervalMS int64 `json:"initial_interval_ms,omitempty"`
	// BackoffCoefficient multiplies the delay after each retry.
	BackoffCoefficient float64 `json:"backoff_coefficient,omitempty"`
	// MaxIntervalMS caps the delay.
	MaxIntervalMS int64 `json:"maximum_interval_ms,omitempty"`
	// NonRetryableErrorTypes are error types never retried.
	NonRetryableErrorTypes []string `json:"non_retryable_error_types,omitempty"`
}

// UnmarshalJSON reads a recorded policy, also under the names journals
// written before the vocabulary was unified used (max_attempts,
// max_interval_ms), so that those journals replay unchanged.
func (r *RetryRecord) UnmarshalJSON(b []byte) error {
	type plain RetryRecord
	var v struct {
		plain
		LegacyMaxAttempts   int   `json:"max_attempts"`
		LegacyMaxIntervalMS int64 `json:"max_interval_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = RetryRecord(v.plain)
	if r.MaxAttempts == 0 {
		r.MaxAttempts = v.LegacyMaxAttempts
	}
	if r.MaxIntervalMS == 0 {
		r.MaxIntervalMS = v.LegacyMaxIntervalMS
	}
	return nil
}

// optionsOf records the options of an activity command; the zero value
// when every option is the default.
func optionsOf(c *ActivityCommand) ActivityOptions {
	o := ActivityOptions{
		TimeoutMS: c.Timeout.Milliseconds(), ScheduleToStartTimeoutMS: c.ScheduleToStartTimeout.Milliseconds(),
		HeartbeatTimeoutMS: c.HeartbeatTimeout.Milliseconds(),
	}
	if r := c.Retry; r != nil {
		rr := RetryRecord{
			MaxAttempts:            r.MaxAttempts,
			InitialIntervalMS:      r.InitialInterval.Milliseconds(),
			BackoffCoefficient:     r.BackoffCoefficient,
			MaxIntervalMS:          r.MaxInterval.Milliseconds(),
			NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		}
		if !rr.equal(&RetryRecord{}) {
			o.Retry = &rr
		}
	}
	if c.Child != nil {
		o.Child = &ChildRecord{WorkflowID: c.Child.WorkflowID, ParentClosePolicy: c.Child.ParentClosePolicy}
	}
	return o
}

// isZero reports whether every option is the default.
func (o ActivityOptions) isZero() bool {
	return o.TimeoutMS == 0 && o.ScheduleToStartTimeoutMS == 0 && o.HeartbeatTimeoutMS == 0 && o.Retry == nil && o.Child == nil
}

// record returns the options as an event records them: nil for the
// defaults.
func (o ActivityOptions) record() *ActivityOptions {
	if o.isZero() {
		return nil
	}
	return &o
}

func (o ActivityOptions) equal(p ActivityOptions) bool {
	if o.TimeoutMS != p.TimeoutMS || o.ScheduleToStartTimeoutMS != p.ScheduleToStartTimeoutMS ||
		o.HeartbeatTimeoutMS != p.HeartbeatTimeoutMS {
		return false
	}
	if (o.Child == nil) != (p.Child == nil) || (o.Child != nil && *o.Child != *p.Child) {
		return false
	}
	if o.Retry == nil || p.Retry == nil {
		return o.Retry == p.Retry
	}
	return o.Retry.equal(p.Retry)
}

func (r *RetryRecord) equal(q *RetryRecord) bool {
	if r.MaxAttempts != q.MaxAttempts || r.InitialIntervalMS != q.InitialIntervalMS ||
		r.BackoffCoefficient != q.BackoffCoefficient || r.MaxIntervalMS != q.MaxIntervalMS ||
		len(r.NonRetryableErrorTypes) != len(q.NonRetryableErrorTypes) {
		return false
	}
	for i, t := range r.NonRetryableErrorTypes {
		if q.NonRetryableErrorTypes[i] != t {
			return false
		}
	}
	return true
}

// policy is the attempt timeout and the task retry policy of a child
// activity.
func (o ActivityOptions) policy() (time.Duration, store.RetryPolicy) {
	var p store.RetryPolicy
	if r := o.Retry; r != nil {
		p = store.RetryPolicy{
			InitialInterval:        time.Duration(r.InitialIntervalMS) * time.Millisecond,
			BackoffCoefficient:     r.BackoffCoefficient,
			MaximumInterval:        time.Duration(r.MaxIntervalMS) * time.Millisecond,
			MaximumAttempts:        r.MaxAttempts,
			NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		}
		if p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1 {
			p.BackoffCoefficient = 0 // below 1 means the default
		}
		if p.MaximumInterval > 0 && p.InitialInterval > p.MaximumInterval {
			p.MaximumInterval = p.InitialInterval
		}
	}
	return time.Duration(o.TimeoutMS) * time.Millisecond, p
}

// timeouts are the schedule-to-start and heartbeat timeouts of a child
// activity.
func (o ActivityOptions) timeouts() (scheduleToStart, heartbeat time.Duration) {
	return time.Duration(o.ScheduleToStartTimeoutMS) * time.Millisecond, time.Duration(o.HeartbeatTimeoutMS) * time.Millisecond
}

// errorValueFrame is the error Value (ABI §8) of a failed activity task:
// its type (the code when the plugin gave none), message, non_retryable
// flag and details.
func errorValueFrame(te *store.TaskError) ([]byte, error) {
	if te == nil {
		te = &store.TaskError{Code: string(fault.Internal), Message: "the activity failed without an error"}
	}
	typ := te.Type
	if typ == "" {
		typ = te.Code
	}
	details := codec.Null()
	if len(te.Details.Data) > 0 {
		v, err := codec.DecodeFrame(te.Details.Data)
		if err != nil {
			return nil, fmt.Errorf("activity error details: %w", err)
		}
		details = v
	}
	return codec.EncodeFrame(codec.Map(
		codec.Entry{Key: "type", Value: codec.String(typ)},
		codec.Entry{Key: "message", Value: codec.String(te.Message)},
		codec.Entry{Key: "non_retryable", Value: codec.Bool(te.NonRetryable)},
		codec.Entry{Key: "details", Value: details},
	))
}
