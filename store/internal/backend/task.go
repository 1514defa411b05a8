package backend

import (
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

// OrDefault returns v, or def when v is the zero value.
func OrDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// NewTask returns the row TaskInsert writes for p under id, owned by
// owner, at n, without its lease: queued, or with start running in
// attempt 1 with last_seq 2 (the status events of a claim and a start
// follow response.created). It returns ErrInvalid for a task that starts
// at once with a later not_before.
func NewTask(p *store.TaskInsertParams, id, owner string, start bool, n time.Time) (*store.Task, error) {
	task := &store.Task{
		ID:                     id,
		Module:                 p.Module,
		ModuleDigest:           p.ModuleDigest,
		Function:               p.Function,
		Kind:                   OrDefault(p.Kind, store.KindActivity),
		Input:                  p.Input,
		Status:                 store.StatusQueued,
		OnRestart:              OrDefault(p.OnRestart, store.OnRestartFail),
		Timeout:                p.Timeout.Truncate(time.Millisecond),
		Deadline:               msOrZero(p.Deadline),
		RunTimeout:             p.RunTimeout.Truncate(time.Millisecond),
		HeartbeatTimeout:       p.HeartbeatTimeout.Truncate(time.Millisecond),
		ScheduleToStartTimeout: p.ScheduleToStartTimeout.Truncate(time.Millisecond),
		MemoryLimit:            max(p.MemoryLimit, 0),
		Retry:                  p.Retry,
		OwnerClientID:          owner,
		ParentTaskID:           p.ParentTaskID,
		WorkflowID:             p.WorkflowID,
		ContinuedFrom:          p.ContinuedFrom,
		ParentClosePolicy:      p.ParentClosePolicy,
		NotBefore:              n,
		CreatedAt:              n,
		UpdatedAt:              n,
	}
	if !p.NotBefore.IsZero() {
		task.NotBefore = p.NotBefore.UTC().Truncate(time.Millisecond)
	}
	if start {
		if task.NotBefore.After(n) {
			return nil, fmt.Errorf("%w: a task that starts at once has no later not_before", store.ErrInvalid)
		}
		task.Status, task.Attempt, task.StartedAt, task.LastSeq = store.StatusRunning, 1, n, 2
		task.RunDeadline = RunDeadline(task, n)
	}
	task.StartDeadline = StartDeadline(task)
	return task, nil
}

// CheckWorkflowID decides whether the task of p may take its workflow id,
// given the owner's latest run of that id (nil for none): ErrWorkflowIDInUse
// while that run is open, ErrWorkflowIDReuse when p's reuse policy refuses
// to follow it, nil otherwise.
func CheckWorkflowID(p *store.TaskInsertParams, latest *store.Task) error {
	if p.WorkflowID == "" || latest == nil {
		return nil
	}
	if !latest.Status.IsTerminal() {
		return fmt.Errorf("%w: workflow id %q is held by the open run %s (%s)", store.ErrWorkflowIDInUse, p.WorkflowID, latest.ID, latest.Status)
	}
	policy := OrDefault(p.WorkflowIDReuse, store.ReuseAllowDuplicate)
	if !policy.Allows(latest.Status) {
		return fmt.Errorf("%w: workflow id %q was last run by %s, which ended %s; the policy %s refuses a new run",
			store.ErrWorkflowIDReuse, p.WorkflowID, latest.ID, latest.Status, policy)
	}
	return nil
}

// NewServiceConfig returns the service identity ServiceInit with p
// creates at n.
func NewServiceConfig(p *store.ServiceInitParams, n time.Time) *store.ServiceConfig {
	return &store.ServiceConfig{
		ID:                store.NewID(store.ServiceIDPrefix),
		CreatedAt:         n,
		UpdatedAt:         n,
		RetentionPeriod:   OrDefault(p.RetentionPeriod, store.DefaultRetentionPeriod).Truncate(time.Millisecond),
		IdempotencyKeyTTL: OrDefault(p.IdempotencyKeyTTL, store.DefaultIdempotencyKeyTTL).Truncate(time.Millisecond),
	}
}

// msOrZero returns t in UTC at the millisecond, the zero time unchanged.
func msOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}
