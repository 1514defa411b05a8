package store

import (
	"fmt"
	"time"
)

// ScheduleIDPrefix is the prefix of a generated schedule id.
const ScheduleIDPrefix = "sch_"

// MaxScheduleIDLen is the longest schedule id, in bytes: short enough that
// the workflow id of a tick's run (the schedule id, "@" and the tick's
// time) stays within MaxWorkflowIDLen.
const MaxScheduleIDLen = 200

// MaxScheduleDefinition bounds the stored definition of a schedule, in
// bytes.
const MaxScheduleDefinition = 1 << 20

// ScheduleRunsKept is how many of its latest runs a schedule keeps
// (Store.ScheduleRuns); older run rows are deleted by the tick that adds a
// newer one.
const ScheduleRunsKept = 10

// ValidScheduleID reports whether id is 1 to MaxScheduleIDLen bytes of
// UTF-8 without control characters, as a workflow id.
func ValidScheduleID(id string) bool {
	return len(id) <= MaxScheduleIDLen && ValidWorkflowID(id)
}

// Schedule is a recurring start of a task (docs/workflows.md,
// "Schedules"): the store keeps its definition as an opaque JSON document
// that the runtime reads, and the state the scheduler needs.
type Schedule struct {
	// OwnerClientID is the client that created the schedule; schedule ids
	// are unique per owner.
	OwnerClientID string
	// ID is the schedule id.
	ID string
	// Definition is the schedule's spec and action, a JSON document of the
	// runtime.
	Definition []byte
	// Paused stops the ticks while set.
	Paused bool
	// Note says why the schedule was paused or resumed, or "".
	Note string
	// LastTickAt is the cursor: the nominal time of the last tick handled
	// (started, skipped, buffered or missed). Ticks after it are ahead.
	// Millisecond precision, UTC.
	LastTickAt time.Time
	// NextRunAt is when the next tick falls due (its nominal time plus its
	// jitter), or zero for none (paused or past its end); the scheduler's
	// index.
	NextRunAt time.Time
	// Buffered is the key of the run waiting for the open one to end
	// (overlap policy buffer_one), or "".
	Buffered string
	// Missed counts the ticks that fell outside the catch-up window.
	Missed int64
	// Skipped counts the ticks the overlap policy skipped.
	Skipped int64
	// Version goes up by one with each write of the schedule: the token of
	// its compare-and-sets.
	Version int64
	// CreatedAt and UpdatedAt are the times of the insert and the last
	// write. Millisecond precision, UTC.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScheduleRun is one run a schedule started: a tick or a trigger.
type ScheduleRun struct {
	// Key names the run within its schedule: the tick's nominal time
	// (RFC 3339, UTC) or "trigger-" and the trigger's time.
	Key string
	// TickAt is the nominal time of the tick, or the trigger's time.
	TickAt time.Time
	// StartedAt is when the run's task was inserted.
	StartedAt time.Time
	// TaskID is the run's task.
	TaskID string
}

// ScheduleInsertParams are the params of Store.ScheduleInsert.
type ScheduleInsertParams struct {
	// OwnerClientID is the creating client. Required.
	OwnerClientID string
	// ID is the schedule id (ValidScheduleID). Required.
	ID string
	// Definition is the JSON definition. Required.
	Definition []byte
	// Paused creates the schedule paused. Defaults to false.
	Paused bool
	// Note is the pause note. Defaults to "".
	Note string
	// LastTickAt is the initial cursor: ticks after it are ahead.
	// Required.
	LastTickAt time.Time
	// NextRunAt is when the first tick falls due. Defaults to none.
	NextRunAt time.Time
	// MaxPerOwner bounds the owner's schedules: the insert returns
	// ErrLimit when the owner already has that many. Defaults to 0 (no
	// bound).
	MaxPerOwner int
}

// Validate checks p.
func (p *ScheduleInsertParams) Validate() error {
	switch {
	case p.OwnerClientID == "":
		return fmt.Errorf("%w: schedule owner is required", ErrInvalid)
	case !ValidScheduleID(p.ID):
		return fmt.Errorf("%w: schedule id %q", ErrInvalid, p.ID)
	case len(p.Definition) == 0 || len(p.Definition) > MaxScheduleDefinition:
		return fmt.Errorf("%w: schedule definition of %d bytes", ErrInvalid, len(p.Definition))
	case p.LastTickAt.IsZero():
		return fmt.Errorf("%w: schedule cursor is required", ErrInvalid)
	case p.MaxPerOwner < 0:
		return fmt.Errorf("%w: negative schedule limit", ErrInvalid)
	}
	return nil
}

// ScheduleListParams are the params of Store.ScheduleList.
type ScheduleListParams struct {
	// OwnerClientID is the owner whose schedules are listed. Required.
	OwnerClientID string
	// Cursor is the id of the last schedule of the previous page. Defaults
	// to "" (the first page).
	Cursor string
	// Limit caps the page. Defaults to 100; at most MaxListLimit+1.
	Limit int
}

// Validate checks p.
func (p *ScheduleListParams) Validate() error {
	if p.OwnerClientID == "" {
		return fmt.Errorf("%w: schedule owner is required", ErrInvalid)
	}
	if p.Limit < 0 || p.Limit > MaxListLimit+1 {
		return fmt.Errorf("%w: limit %d", ErrInvalid, p.Limit)
	}
	return nil
}

// ScheduleUpdateParams are the params of Store.ScheduleUpdate: the new
// state of a schedule, written compare-and-set on its version.
type ScheduleUpdateParams struct {
	// OwnerClientID and ID name the schedule. Required.
	OwnerClientID string
	ID            string
	// Version is the version the caller read. Required.
	Version int64
	// Paused, Note, LastTickAt, NextRunAt and Buffered are the new values.
	Paused     bool
	Note       string
	LastTickAt time.Time
	NextRunAt  time.Time
	Buffered   string
}

// Validate checks p.
func (p *ScheduleUpdateParams) Validate() error {
	switch {
	case p.OwnerClientID == "" || p.ID == "":
		return fmt.Errorf("%w: schedule owner and id are required", ErrInvalid)
	case p.Version <= 0:
		return fmt.Errorf("%w: schedule version is required", ErrInvalid)
	case p.LastTickAt.IsZero():
		return fmt.Errorf("%w: schedule cursor is required", ErrInvalid)
	}
	return nil
}

// ScheduleDueParams are the params of Store.ScheduleDue.
type ScheduleDueParams struct {
	// Now is the time the schedules must be due by. Required.
	Now time.Time
	// Limit caps the schedules returned. Defaults to 100; at most
	// MaxListLimit.
	Limit int
}

// Validate checks p.
func (p *ScheduleDueParams) Validate() error {
	if p.Now.IsZero() {
		return fmt.Errorf("%w: now is required", ErrInvalid)
	}
	if p.Limit < 0 || p.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit %d", ErrInvalid, p.Limit)
	}
	return nil
}

// ScheduleDueResult is the result of Store.ScheduleDue.
type ScheduleDueResult struct {
	// Schedules are the due schedules, earliest first.
	Schedules []*Schedule
	// Next is the earliest NextRunAt after Now of the schedules not
	// returned, or zero for none.
	Next time.Time
}

// ScheduleTickParams are the params of Store.ScheduleTick: the outcome of
// one pass of the scheduler over one schedule, committed in one
// transaction with the tasks it starts.
type ScheduleTickParams struct {
	// OwnerClientID and ID name the schedule. Required.
	OwnerClientID string
	ID            string
	// Version and LastTickAt are the schedule's version and cursor as the
	// caller read them: the compare-and-set. Required.
	Version    int64
	LastTickAt time.Time
	// NewLastTickAt is the cursor after the pass. Required; not before
	// LastTickAt.
	NewLastTickAt time.Time
	// NextRunAt is the due time of the next tick after the pass, or zero
	// for none.
	NextRunAt time.Time
	// Buffered is the buffered run after the pass, or "".
	Buffered string
	// Missed and Skipped are added to the schedule's counts.
	Missed, Skipped int64
	// Runs are the runs the pass starts, each with its task, in order.
	Runs []ScheduleRunStart
}

// ScheduleRunStart is one run started by Store.ScheduleTick.
type ScheduleRunStart struct {
	// Key names the run (ScheduleRun.Key); a key the schedule already
	// has is refused with ErrExists. Required.
	Key string
	// TickAt is the tick's nominal time, or the trigger's time. Required.
	TickAt time.Time
	// Task is the run's task, inserted as TaskInsert would (queued with
	// its response.created event, or running with Start), owned by the
	// schedule's owner. Required.
	Task *TaskInsertParams
}

// Validate checks p.
func (p *ScheduleTickParams) Validate() error {
	switch {
	case p.OwnerClientID == "" || p.ID == "":
		return fmt.Errorf("%w: schedule owner and id are required", ErrInvalid)
	case p.Version <= 0:
		return fmt.Errorf("%w: schedule version is required", ErrInvalid)
	case p.LastTickAt.IsZero() || p.NewLastTickAt.Before(p.LastTickAt):
		return fmt.Errorf("%w: the cursor may only move forward", ErrInvalid)
	case p.Missed < 0 || p.Skipped < 0:
		return fmt.Errorf("%w: negative count", ErrInvalid)
	}
	for i := range p.Runs {
		r := &p.Runs[i]
		if r.Key == "" || r.TickAt.IsZero() || r.Task == nil {
			return fmt.Errorf("%w: run %d needs a key, a time and a task", ErrInvalid, i)
		}
		if r.Task.OwnerClientID != p.OwnerClientID || r.Task.ParentTaskID != "" ||
			r.Task.Idempotency != nil || r.Task.IdempotencyTask != nil {
			return fmt.Errorf("%w: run %d: a top-level queued task of the schedule's owner", ErrInvalid, i)
		}
		if err := r.Task.Validate(); err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
	}
	return nil
}

// ScheduleTickResult is the result of Store.ScheduleTick.
type ScheduleTickResult struct {
	// Schedule is the schedule after the pass.
	Schedule *Schedule
	// Tasks are the tasks inserted, in the order of the params' runs.
	Tasks []*Task
}
