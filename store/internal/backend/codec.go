package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

// Now returns the current time at the store's precision: UTC, truncated
// to the millisecond.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// PayloadArgs returns the codec and data column values of p; the zero
// Payload is two NULLs.
func PayloadArgs(p store.Payload) (codec, data any) {
	if p.IsZero() {
		return nil, nil
	}
	if p.Data == nil {
		return p.Codec, []byte{}
	}
	return p.Codec, p.Data
}

// ToPayload returns the Payload of a nullable codec and data column pair;
// two NULLs are the zero Payload.
func ToPayload(codec *string, data []byte) store.Payload {
	if codec == nil && data == nil {
		return store.Payload{}
	}
	return store.Payload{Codec: Deref(codec), Data: data}
}

// Deref returns *s, or "" for a NULL column.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ConflictTask returns task, the current row, when err is a lost
// compare-and-set or a lost lease, and nil otherwise: after any other
// failure nothing reliable can be said about the task.
func ConflictTask(task *store.Task, err error) *store.Task {
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrLeaseLost) {
		return task
	}
	return nil
}

// progressJSON is the stored form of a task's progress, its time in Unix
// milliseconds.
type progressJSON struct {
	Done      int64  `json:"done"`
	Total     int64  `json:"total"`
	Message   string `json:"message,omitempty"`
	UpdatedAt int64  `json:"updated_at"`
}

// MarshalProgress returns the stored form of p.
func MarshalProgress(p *store.TaskProgress) string {
	b, _ := json.Marshal(progressJSON{Done: p.Done, Total: p.Total, Message: p.Message, UpdatedAt: p.UpdatedAt.UnixMilli()})
	return string(b)
}

// UnmarshalProgress reads the stored form of a task's progress.
func UnmarshalProgress(s string) (*store.TaskProgress, error) {
	var j progressJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	return &store.TaskProgress{Done: j.Done, Total: j.Total, Message: j.Message, UpdatedAt: time.UnixMilli(j.UpdatedAt).UTC()}, nil
}

// retryJSON is the stored form of a retry policy, durations in
// milliseconds.
type retryJSON struct {
	InitialIntervalMS      int64    `json:"initial_interval_ms,omitempty"`
	BackoffCoefficient     float64  `json:"backoff_coefficient,omitempty"`
	MaximumIntervalMS      int64    `json:"maximum_interval_ms,omitempty"`
	MaximumAttempts        int      `json:"maximum_attempts,omitempty"`
	NonRetryableErrorTypes []string `json:"non_retryable_error_types,omitempty"`
	TotalTimeoutMS         int64    `json:"total_timeout_ms,omitempty"`
}

// MarshalRetry returns the stored form of p.
func MarshalRetry(p store.RetryPolicy) (string, error) {
	b, err := json.Marshal(retryJSON{
		InitialIntervalMS:      p.InitialInterval.Milliseconds(),
		BackoffCoefficient:     p.BackoffCoefficient,
		MaximumIntervalMS:      p.MaximumInterval.Milliseconds(),
		MaximumAttempts:        p.MaximumAttempts,
		NonRetryableErrorTypes: p.NonRetryableErrorTypes,
		TotalTimeoutMS:         p.TotalTimeout.Milliseconds(),
	})
	return string(b), err
}

// UnmarshalRetry reads the stored form of a retry policy into p.
func UnmarshalRetry(s string, p *store.RetryPolicy) error {
	var r retryJSON
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return fmt.Errorf("retry policy: %w", err)
	}
	*p = store.RetryPolicy{
		InitialInterval:        time.Duration(r.InitialIntervalMS) * time.Millisecond,
		BackoffCoefficient:     r.BackoffCoefficient,
		MaximumInterval:        time.Duration(r.MaximumIntervalMS) * time.Millisecond,
		MaximumAttempts:        r.MaximumAttempts,
		NonRetryableErrorTypes: r.NonRetryableErrorTypes,
		TotalTimeout:           time.Duration(r.TotalTimeoutMS) * time.Millisecond,
	}
	return nil
}

// TickRuns returns, for the runs of a schedule tick, the id each task is
// inserted under (its own, or a new one) and its stored retry policy.
func TickRuns(runs []store.ScheduleRunStart) (ids, retries []string, err error) {
	ids, retries = make([]string, len(runs)), make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.Task.ID
		if ids[i] == "" {
			ids[i] = store.NewID(store.TaskIDPrefix)
		}
		if retries[i], err = MarshalRetry(r.Task.Retry); err != nil {
			return nil, nil, err
		}
	}
	return ids, retries, nil
}
