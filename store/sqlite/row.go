package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
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
		inCodec, cpCodec, outCodec, errDtCodec *string
		in, cp, out, errDt                     []byte
		errCode, errMsg, errType, parent       sql.NullString
		workflowID, continuedFrom, closePolicy sql.NullString
		cancelRequested                        sql.NullInt64
		errNonRetryable                        sql.NullInt64
		timeoutMS, notBefore, created, updated int64
		started, finished                      sql.NullInt64
		progress                               sql.NullString
		leaseExpires                           sql.NullInt64
		deadline, runDeadline, startDeadline   sql.NullInt64
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
	if progress.Valid {
		if t.Progress, err = backend.UnmarshalProgress(progress.String); err != nil {
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
	if errCode.Valid {
		t.Error = &store.TaskError{
			Code:         errCode.String,
			Message:      errMsg.String,
			Type:         errType.String,
			NonRetryable: errNonRetryable.Int64 != 0,
			Details:      backend.ToPayload(errDtCodec, errDt),
		}
	}
	t.ParentTaskID = parent.String
	t.WorkflowID = workflowID.String
	t.ContinuedFrom = continuedFrom.String
	t.CancelRequestedAt = fromNullMS(cancelRequested)
	t.ParentClosePolicy = store.ParentClosePolicy(closePolicy.String)
	t.NotBefore = fromMS(notBefore)
	t.CreatedAt = fromMS(created)
	t.UpdatedAt = fromMS(updated)
	t.StartedAt = fromNullMS(started)
	t.FinishedAt = fromNullMS(finished)
	t.Lease.ExpiresAt = fromNullMS(leaseExpires)
	t.Deadline, t.RunDeadline, t.StartDeadline = fromNullMS(deadline), fromNullMS(runDeadline), fromNullMS(startDeadline)
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
