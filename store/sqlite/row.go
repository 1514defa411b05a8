package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
)

// now returns the current time at the store's precision (milliseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// ms converts a time to the stored Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// msOrNull converts a time to Unix milliseconds, the zero time to NULL.
func msOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// fromMS converts stored Unix milliseconds to a UTC time.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// fromNullMS converts nullable Unix milliseconds; NULL is the zero time.
func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
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

func toPayload(codec sql.NullString, data []byte) store.Payload {
	if !codec.Valid && data == nil {
		return store.Payload{}
	}
	return store.Payload{Codec: codec.String, Data: data}
}

// taskColumns lists the tasks columns in the order scanTask reads them.
const taskColumns = `id, module, module_digest, function, kind, input_codec, input, status, on_restart,
	timeout_ms, retry, attempt, checkpoint_codec, checkpoint, output_codec, output,
	error_code, error_message, error_type, error_non_retryable, error_details_codec, error_details,
	owner_client_id, parent_task_id, not_before, created_at, updated_at, started_at, finished_at, last_seq,
	memory_limit, progress, lease_host, lease_token, lease_expires_at`

// taskColumnsNoPayloads is taskColumns with every payload read as NULL.
var taskColumnsNoPayloads = strings.NewReplacer(
	"input_codec, input,", "NULL, NULL,",
	"checkpoint_codec, checkpoint, output_codec, output,", "NULL, NULL, NULL, NULL,",
	"error_details_codec, error_details,", "NULL, NULL,",
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
		inCodec, cpCodec, outCodec, errDtCodec sql.NullString
		in, cp, out, errDt                     []byte
		errCode, errMsg, errType, parent       sql.NullString
		errNonRetryable                        sql.NullInt64
		timeoutMS, notBefore, created, updated int64
		started, finished                      sql.NullInt64
		progress                               sql.NullString
		leaseExpires                           sql.NullInt64
	)
	err := s.Scan(&t.ID, &t.Module, &t.ModuleDigest, &t.Function, &kind, &inCodec, &in, &status, &onRestart,
		&timeoutMS, &retry, &t.Attempt, &cpCodec, &cp, &outCodec, &out,
		&errCode, &errMsg, &errType, &errNonRetryable, &errDtCodec, &errDt,
		&t.OwnerClientID, &parent, &notBefore, &created, &updated, &started, &finished, &t.LastSeq,
		&t.MemoryLimit, &progress, &t.Lease.Host, &t.Lease.Token, &leaseExpires)
	if err != nil {
		return nil, err
	}
	if progress.Valid {
		if t.Progress, err = unmarshalProgress(progress.String); err != nil {
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
	if errCode.Valid {
		t.Error = &store.TaskError{
			Code:         errCode.String,
			Message:      errMsg.String,
			Type:         errType.String,
			NonRetryable: errNonRetryable.Int64 != 0,
			Details:      toPayload(errDtCodec, errDt),
		}
	}
	t.ParentTaskID = parent.String
	t.NotBefore = fromMS(notBefore)
	t.CreatedAt = fromMS(created)
	t.UpdatedAt = fromMS(updated)
	t.StartedAt = fromNullMS(started)
	t.FinishedAt = fromNullMS(finished)
	t.Lease.ExpiresAt = fromNullMS(leaseExpires)
	return &t, nil
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
	b, _ := json.Marshal(progressJSON{Done: p.Done, Total: p.Total, Message: p.Message, UpdatedAt: ms(p.UpdatedAt)})
	return string(b)
}

func unmarshalProgress(s string) (*store.TaskProgress, error) {
	var j progressJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	return &store.TaskProgress{Done: j.Done, Total: j.Total, Message: j.Message, UpdatedAt: fromMS(j.UpdatedAt)}, nil
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
	nr := 0
	if e.NonRetryable {
		nr = 1
	}
	return []any{e.Code, e.Message, e.Type, nr, codec, data}
}

func marshalStrings(s []string) string {
	if s == nil {
		s = []string{}
	}
	b, _ := json.Marshal(s) // a []string always marshals
	return string(b)
}

func unmarshalStrings(s string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	return out, nil
}
