package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
)

// now returns the current time at the store's precision (milliseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// msTime returns t at the store's precision: UTC, truncated to the
// millisecond (timestamptz keeps microseconds).
func msTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// tsOrNull returns t at the store's precision, or NULL for the zero time.
func tsOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return msTime(t)
}

// fromTS returns a read time in UTC.
func fromTS(t time.Time) time.Time { return t.UTC() }

// fromNullTS returns a read nullable time in UTC; NULL is the zero time.
func fromNullTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// payloadArgs returns the codec and data column values of p; the zero
// Payload is two NULLs.
func payloadArgs(p store.Payload) (codec, data any) {
	if p.IsZero() {
		return nil, nil
	}
	if p.Data == nil {
		return p.Codec, []byte{}
	}
	return p.Codec, p.Data
}

func toPayload(codec *string, data []byte) store.Payload {
	if codec == nil && data == nil {
		return store.Payload{}
	}
	p := store.Payload{Data: data}
	if codec != nil {
		p.Codec = *codec
	}
	return p
}

// taskColumns lists the tasks columns in the order scanTask reads them.
const taskColumns = `id, module, module_digest, function, kind, input_codec, input, status, on_restart,
	timeout_ms, retry, attempt, checkpoint_codec, checkpoint, output_codec, output,
	error_code, error_message, error_type, error_non_retryable, error_details_codec, error_details,
	owner_client_id, parent_task_id, not_before, created_at, updated_at, started_at, finished_at, last_seq,
	memory_limit, progress, lease_host, lease_token, lease_expires_at`

// taskColumnsNoPayloads is taskColumns with every payload read as NULL.
var taskColumnsNoPayloads = strings.NewReplacer(
	"input_codec, input,", "NULL::text, NULL::bytea,",
	"checkpoint_codec, checkpoint, output_codec, output,", "NULL::text, NULL::bytea, NULL::text, NULL::bytea,",
	"error_details_codec, error_details,", "NULL::text, NULL::bytea,",
).Replace(taskColumns)

// prefixed qualifies every column of a comma-separated list.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

type scanner interface{ Scan(dest ...any) error }

// scanTask reads one row of taskColumns.
func scanTask(s scanner) (*store.Task, error) {
	var (
		t                                      store.Task
		kind, status, onRestart, retry         string
		inCodec, cpCodec, outCodec, errDtCodec *string
		in, cp, out, errDt                     []byte
		errCode, errMsg, errType, parent       *string
		errNonRetryable                        *bool
		timeoutMS                              int64
		notBefore, created, updated            time.Time
		started, finished                      *time.Time
		progress                               *string
		leaseExpires                           *time.Time
	)
	err := s.Scan(&t.ID, &t.Module, &t.ModuleDigest, &t.Function, &kind, &inCodec, &in, &status, &onRestart,
		&timeoutMS, &retry, &t.Attempt, &cpCodec, &cp, &outCodec, &out,
		&errCode, &errMsg, &errType, &errNonRetryable, &errDtCodec, &errDt,
		&t.OwnerClientID, &parent, &notBefore, &created, &updated, &started, &finished, &t.LastSeq,
		&t.MemoryLimit, &progress, &t.Lease.Host, &t.Lease.Token, &leaseExpires)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		if t.Progress, err = unmarshalProgress(*progress); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
	}
	t.Kind = store.Kind(kind)
	t.Status = store.Status(status)
	t.OnRestart = store.OnRestart(onRestart)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	if err := unmarshalRetry(retry, &t.Retry); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	t.Input = toPayload(inCodec, in)
	t.Checkpoint = toPayload(cpCodec, cp)
	t.Output = toPayload(outCodec, out)
	if errCode != nil {
		t.Error = &store.TaskError{
			Code:         *errCode,
			Message:      deref(errMsg),
			Type:         deref(errType),
			NonRetryable: errNonRetryable != nil && *errNonRetryable,
			Details:      toPayload(errDtCodec, errDt),
		}
	}
	t.ParentTaskID = deref(parent)
	t.NotBefore = fromTS(notBefore)
	t.CreatedAt = fromTS(created)
	t.UpdatedAt = fromTS(updated)
	t.StartedAt = fromNullTS(started)
	t.FinishedAt = fromNullTS(finished)
	t.Lease.ExpiresAt = fromNullTS(leaseExpires)
	return &t, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// progressJSON is the stored form of a task's progress, its time in Unix
// milliseconds.
type progressJSON struct {
	Done      int64  `json:"done"`
	Total     int64  `json:"total"`
	Message   string `json:"message,omitempty"`
	UpdatedAt int64  `json:"updated_at"`
}

func marshalProgress(p *store.TaskProgress) string {
	b, _ := json.Marshal(progressJSON{Done: p.Done, Total: p.Total, Message: p.Message, UpdatedAt: p.UpdatedAt.UnixMilli()})
	return string(b)
}

func unmarshalProgress(s string) (*store.TaskProgress, error) {
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

func marshalRetry(p store.RetryPolicy) (string, error) {
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

func unmarshalRetry(s string, p *store.RetryPolicy) error {
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

// errorArgs returns the six error column values of e.
func errorArgs(e *store.TaskError) []any {
	if e == nil {
		return []any{nil, nil, nil, nil, nil, nil}
	}
	codec, data := payloadArgs(e.Details)
	return []any{e.Code, e.Message, e.Type, e.NonRetryable, codec, data}
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// conflictTask returns task, the current row, when err is a lost
// compare-and-set or a lost lease, and nil otherwise: after any other failure nothing
// reliable can be said about the task.
func conflictTask(task *store.Task, err error) *store.Task {
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrLeaseLost) {
		return task
	}
	return nil
}
