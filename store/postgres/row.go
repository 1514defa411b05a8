package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
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

// taskColumns lists the tasks columns in the order scanTask reads them.
const taskColumns = `id, module, module_digest, function, kind, input_codec, input, status, on_restart,
	timeout_ms, retry, attempt, checkpoint_codec, checkpoint, output_codec, output,
	error_code, error_message, error_type, error_non_retryable, error_details_codec, error_details,
	owner_client_id, parent_task_id, not_before, created_at, updated_at, started_at, finished_at, last_seq,
	memory_limit, progress, lease_host, lease_token, lease_expires_at,
	deadline, run_timeout_ms, run_deadline, schedule_to_start_ms, start_deadline, heartbeat_timeout_ms,
	workflow_id, continued_from, parent_close_policy, cancel_requested_at`

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
		workflowID, continuedFrom, closePolicy *string
		cancelRequested                        *time.Time
		errNonRetryable                        *bool
		timeoutMS                              int64
		notBefore, created, updated            time.Time
		started, finished                      *time.Time
		progress                               *string
		leaseExpires                           *time.Time
		deadline, runDeadline, startDeadline   *time.Time
		runMS, startMS, heartbeatMS            int64
	)
	err := s.Scan(&t.ID, &t.Module, &t.ModuleDigest, &t.Function, &kind, &inCodec, &in, &status, &onRestart,
		&timeoutMS, &retry, &t.Attempt, &cpCodec, &cp, &outCodec, &out,
		&errCode, &errMsg, &errType, &errNonRetryable, &errDtCodec, &errDt,
		&t.OwnerClientID, &parent, &notBefore, &created, &updated, &started, &finished, &t.LastSeq,
		&t.MemoryLimit, &progress, &t.Lease.Host, &t.Lease.Token, &leaseExpires,
		&deadline, &runMS, &runDeadline, &startMS, &startDeadline, &heartbeatMS,
		&workflowID, &continuedFrom, &closePolicy, &cancelRequested)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		if t.Progress, err = backend.UnmarshalProgress(*progress); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
	}
	t.Kind = store.Kind(kind)
	t.Status = store.Status(status)
	t.OnRestart = store.OnRestart(onRestart)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	if err := backend.UnmarshalRetry(retry, &t.Retry); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	t.Input = backend.ToPayload(inCodec, in)
	t.Checkpoint = backend.ToPayload(cpCodec, cp)
	t.Output = backend.ToPayload(outCodec, out)
	if errCode != nil {
		t.Error = &store.TaskError{
			Code:         *errCode,
			Message:      backend.Deref(errMsg),
			Type:         backend.Deref(errType),
			NonRetryable: errNonRetryable != nil && *errNonRetryable,
			Details:      backend.ToPayload(errDtCodec, errDt),
		}
	}
	t.ParentTaskID = backend.Deref(parent)
	t.WorkflowID = backend.Deref(workflowID)
	t.ContinuedFrom = backend.Deref(continuedFrom)
	t.CancelRequestedAt = fromNullTS(cancelRequested)
	t.ParentClosePolicy = store.ParentClosePolicy(backend.Deref(closePolicy))
	t.NotBefore = fromTS(notBefore)
	t.CreatedAt = fromTS(created)
	t.UpdatedAt = fromTS(updated)
	t.StartedAt = fromNullTS(started)
	t.FinishedAt = fromNullTS(finished)
	t.Lease.ExpiresAt = fromNullTS(leaseExpires)
	t.Deadline, t.RunDeadline, t.StartDeadline = fromNullTS(deadline), fromNullTS(runDeadline), fromNullTS(startDeadline)
	t.RunTimeout = time.Duration(runMS) * time.Millisecond
	t.ScheduleToStartTimeout = time.Duration(startMS) * time.Millisecond
	t.HeartbeatTimeout = time.Duration(heartbeatMS) * time.Millisecond
	return &t, nil
}

// errorArgs returns the six error column values of e.
func errorArgs(e *store.TaskError) []any {
	if e == nil {
		return []any{nil, nil, nil, nil, nil, nil}
	}
	codec, data := backend.PayloadArgs(e.Details)
	return []any{e.Code, e.Message, e.Type, e.NonRetryable, codec, data}
}
