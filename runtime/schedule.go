package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// OverlapPolicy says what a tick does while a run the schedule started is
// still open, as Temporal's overlap policies of the same meaning.
type OverlapPolicy string

// The overlap policies.
const (
	// OverlapSkip skips the tick (counted in Schedule.Skipped); the
	// default.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBufferOne keeps one tick waiting, started when the open run
	// ends; further ticks meanwhile are skipped.
	OverlapBufferOne OverlapPolicy = "buffer_one"
	// OverlapAllowAll starts every tick, whatever runs.
	OverlapAllowAll OverlapPolicy = "allow_all"
	// OverlapCancelOther starts the tick and ends the open runs (as
	// TaskTerminate) once that start committed.
	OverlapCancelOther OverlapPolicy = "cancel_other"
)

// Valid reports whether p is a known policy.
func (p OverlapPolicy) Valid() bool {
	return p == OverlapSkip || p == OverlapBufferOne || p == OverlapAllowAll || p == OverlapCancelOther
}

// DefaultCatchupWindow is the default of ScheduleCreateParams.CatchupWindowMS:
// after downtime, the ticks that fell due within the last minute start.
const DefaultCatchupWindow = time.Minute

// MaxCatchupWindow bounds ScheduleCreateParams.CatchupWindowMS (a year).
const MaxCatchupWindow = 366 * 24 * time.Hour

// MaxScheduleNoteLen bounds a schedule's note, in bytes.
const MaxScheduleNoteLen = 1024

// ScheduleCreateParams are the params of Engine.ScheduleCreate.
type ScheduleCreateParams struct {
	// ID is the schedule id (store.ValidScheduleID), unique among the
	// caller's schedules. Defaults to a new "sch_" id.
	ID string
	// Spec says when the schedule ticks. Required.
	Spec ScheduleSpec
	// OverlapPolicy decides a tick while a run is open. Defaults to
	// OverlapSkip.
	OverlapPolicy OverlapPolicy
	// CatchupWindowMS is how far back, after downtime, a tick that fell
	// due still starts; older ones are counted missed. Nil means
	// DefaultCatchupWindow; 0 starts no late tick.
	CatchupWindowMS *int64
	// Paused creates the schedule paused; Note says why.
	Paused bool
	Note   string
	// Task is what each tick starts, as TaskCreate takes it: its
	// ClientID, Admin and ClientMemoryLimit are the schedule's owner's,
	// and the WorkflowID of a workflow is the tick's (see
	// docs/workflows.md, "Schedules"). Required: Module and Function.
	Task TaskCreateParams
}

// scheduleDef is the stored definition of a schedule (store.Schedule's
// Definition).
type scheduleDef struct {
	Spec            ScheduleSpec   `json:"spec"`
	OverlapPolicy   OverlapPolicy  `json:"overlap_policy"`
	CatchupWindowMS int64          `json:"catchup_window_ms"`
	Action          scheduleAction `json:"action"`
}

// scheduleAction is the task a tick starts.
type scheduleAction struct {
	Module                   string             `json:"module"`
	Function                 string             `json:"function"`
	Input                    codec.Envelope     `json:"input"`
	OnRestart                store.OnRestart    `json:"on_restart,omitempty"`
	TimeoutMS                int64              `json:"timeout_ms,omitempty"`
	ExecutionTimeoutMS       int64              `json:"execution_timeout_ms,omitempty"`
	RunTimeoutMS             int64              `json:"run_timeout_ms,omitempty"`
	ScheduleToStartTimeoutMS int64              `json:"schedule_to_start_timeout_ms,omitempty"`
	HeartbeatTimeoutMS       int64              `json:"heartbeat_timeout_ms,omitempty"`
	MemoryLimitBytes         int64              `json:"memory_limit_bytes,omitempty"`
	Retry                    *store.RetryPolicy `json:"retry,omitempty"`
	Admin                    bool               `json:"admin,omitempty"`
	ClientMemoryLimit        int64              `json:"client_memory_limit,omitempty"`
}

// taskParams is the TaskCreateParams of a run of the action for owner.
func (a *scheduleAction) taskParams(owner string) *TaskCreateParams {
	return &TaskCreateParams{
		ClientID: owner, Admin: a.Admin, ClientMemoryLimit: a.ClientMemoryLimit,
		Module: a.Module, Function: a.Function, Input: a.Input, OnRestart: a.OnRestart,
		TimeoutMS: a.TimeoutMS, ExecutionTimeoutMS: a.ExecutionTimeoutMS, RunTimeoutMS: a.RunTimeoutMS,
		ScheduleToStartTimeoutMS: a.ScheduleToStartTimeoutMS, HeartbeatTimeoutMS: a.HeartbeatTimeoutMS,
		MemoryLimitBytes: a.MemoryLimitBytes, Retry: a.Retry,
	}
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	// Stored is the store's record.
	Stored *store.Schedule
	// Spec, OverlapPolicy and CatchupWindow are the definition.
	Spec          ScheduleSpec
	OverlapPolicy OverlapPolicy
	CatchupWindow time.Duration
	// Task is the task each tick starts (ClientID is the owner).
	Task *TaskCreateParams
	// Runs are the latest runs, newest first, each with its task's status
	// ("" when retention purged the task). Filled by ScheduleGet only.
	Runs []ScheduleRunInfo
	// NextRuns are the due times of the next few ticks (none while
	// paused). Filled by ScheduleGet only.
	NextRuns []time.Time
}

// ScheduleRunInfo is one run of a schedule with its task's status.
type ScheduleRunInfo struct {
	store.ScheduleRun
	// Status is the task's status, or "" when it is gone.
	Status store.Status
	// Trigger is set for a run started by ScheduleTrigger.
	Trigger bool
}

// scheduleNextShown is how many next run times ScheduleGet lists.
const scheduleNextShown = 5

// ScheduleCreate validates p and stores a new schedule of the caller's
// client, with its first tick due. It returns fault.Invalid (with Param)
// for bad params, fault.ModuleNotFound and fault.FunctionNotFound for an
// action that names nothing deployed, fault.ScheduleExists for an id the
// caller has, and fault.ScheduleLimitExceeded past
// Config.MaxSchedulesPerClient.
func (e *Engine) ScheduleCreate(ctx context.Context, who Caller, p *ScheduleCreateParams) (*Schedule, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	id := p.ID
	if id == "" {
		id = store.NewID(store.ScheduleIDPrefix)
	}
	if !store.ValidScheduleID(id) {
		return nil, fault.ParamErrorf("schedule_id", "schedule_id must be 1 to %d bytes of UTF-8 without control characters", store.MaxScheduleIDLen)
	}
	spec, err := compileSpec(id, &p.Spec)
	if err != nil {
		return nil, err
	}
	policy := p.OverlapPolicy
	if policy == "" {
		policy = OverlapSkip
	}
	if !policy.Valid() {
		return nil, fault.ParamErrorf("overlap_policy", "overlap_policy must be skip, buffer_one, allow_all or cancel_other, not %q", policy)
	}
	window := DefaultCatchupWindow.Milliseconds()
	if p.CatchupWindowMS != nil {
		window = *p.CatchupWindowMS
	}
	if window < 0 || window > MaxCatchupWindow.Milliseconds() {
		return nil, fault.ParamErrorf("catchup_window_ms", "catchup_window_ms must be from 0 to %d", MaxCatchupWindow.Milliseconds())
	}
	if len(p.Note) > MaxScheduleNoteLen {
		return nil, fault.ParamErrorf("note", "note is longer than %d bytes", MaxScheduleNoteLen)
	}
	if p.Task.WorkflowID != "" || p.Task.WorkflowIDReuse != "" || p.Task.Idempotency != nil || p.Task.IdempotencyKey != "" {
		return nil, fault.ParamErrorf("workflow_id", "a schedule names each run's workflow id itself")
	}
	tp := p.Task
	tp.ClientID = who.ClientID
	if _, err := e.taskInsertParams(ctx, &tp); err != nil { // the action must be startable now
		return nil, err
	}
	def := scheduleDef{
		Spec: p.Spec, OverlapPolicy: policy, CatchupWindowMS: window,
		Action: scheduleAction{
			Module: tp.Module, Function: tp.Function, Input: tp.Input, OnRestart: tp.OnRestart,
			TimeoutMS: tp.TimeoutMS, ExecutionTimeoutMS: tp.ExecutionTimeoutMS, RunTimeoutMS: tp.RunTimeoutMS,
			ScheduleToStartTimeoutMS: tp.ScheduleToStartTimeoutMS, HeartbeatTimeoutMS: tp.HeartbeatTimeoutMS,
			MemoryLimitBytes: tp.MemoryLimitBytes, Retry: tp.Retry, Admin: tp.Admin, ClientMemoryLimit: tp.ClientMemoryLimit,
		},
	}
	if def.Action.Input == (codec.Envelope{}) {
		def.Action.Input = codec.EnvelopeOf(nullFrame)
	}
	def.Spec.StartAt, def.Spec.EndAt = def.Spec.StartAt.UTC(), def.Spec.EndAt.UTC()
	if def.Spec.Timezone == "" && def.Spec.Cron != "" {
		def.Spec.Timezone = "UTC"
	}
	raw, err := json.Marshal(&def)
	if err != nil {
		return nil, fault.Wrap("encode schedule", err)
	}
	if len(raw) > store.MaxScheduleDefinition {
		return nil, fault.ParamErrorf("input", "the schedule is larger than %d bytes", store.MaxScheduleDefinition)
	}
	cursor := e.now().UTC().Truncate(time.Millisecond)
	var next time.Time
	if !p.Paused {
		if n, ok := spec.next(cursor); ok {
			next = spec.due(n)
		}
	}
	sc, err := e.store.ScheduleInsert(ctx, &store.ScheduleInsertParams{
		OwnerClientID: who.ClientID, ID: id, Definition: raw, Paused: p.Paused, Note: p.Note,
		LastTickAt: cursor, NextRunAt: next, MaxPerOwner: e.cfg.MaxSchedulesPerClient,
	})
	switch {
	case errors.Is(err, store.ErrExists):
		return nil, &fault.Error{Code: fault.ScheduleExists, Param: "schedule_id", Message: fmt.Sprintf("schedule %q exists", id), Err: err}
	case errors.Is(err, store.ErrLimit):
		return nil, &fault.Error{Code: fault.ScheduleLimitExceeded, Message: fmt.Sprintf(
			"a client may have at most %d schedules; delete one first", e.cfg.MaxSchedulesPerClient), Err: err}
	case err != nil:
		return nil, fault.Wrap("create schedule", err)
	}
	e.scheduleKick()
	return e.scheduleView(sc)
}

// scheduleView decodes a stored schedule.
func (e *Engine) scheduleView(sc *store.Schedule) (*Schedule, error) {
	def, err := decodeScheduleDef(sc)
	if err != nil {
		return nil, err
	}
	return &Schedule{
		Stored: sc, Spec: def.Spec, OverlapPolicy: def.OverlapPolicy,
		CatchupWindow: time.Duration(def.CatchupWindowMS) * time.Millisecond,
		Task:          def.Action.taskParams(sc.OwnerClientID),
	}, nil
}

func decodeScheduleDef(sc *store.Schedule) (*scheduleDef, error) {
	var def scheduleDef
	if err := json.Unmarshal(sc.Definition, &def); err != nil {
		return nil, fault.Wrap(fmt.Sprintf("decode schedule %q", sc.ID), err)
	}
	return &def, nil
}

// getSchedule returns the caller's schedule, or fault.NotFound.
func (e *Engine) getSchedule(ctx context.Context, who Caller, id string) (*store.Schedule, error) {
	if !store.ValidScheduleID(id) {
		return nil, fault.Errorf(fault.NotFound, "schedule %q not found", id)
	}
	sc, err := e.store.ScheduleGet(ctx, who.ClientID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "schedule %q not found", id)
	case err != nil:
		return nil, fault.Wrap("get schedule", err)
	}
	return sc, nil
}

// ScheduleGet returns the caller's schedule with its latest runs and next
// run times. Schedules are per client, as workflow ids: the admin scope
// sees its own only. It returns fault.NotFound for another client's or
// an unknown schedule.
func (e *Engine) ScheduleGet(ctx context.Context, who Caller, id string) (*Schedule, error) {
	sc, err := e.getSchedule(ctx, who, id)
	if err != nil {
		return nil, err
	}
	v, err := e.scheduleView(sc)
	if err != nil {
		return nil, err
	}
	runs, err := e.store.ScheduleRuns(ctx, who.ClientID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fault.Wrap("schedule runs", err)
	}
	for _, r := range runs {
		info := ScheduleRunInfo{ScheduleRun: *r, Trigger: len(r.Key) > 8 && r.Key[:8] == "trigger-"}
		if t, err := e.store.TaskGet(ctx, r.TaskID); err == nil {
			info.Status = t.Status
		}
		v.Runs = append(v.Runs, info)
	}
	if !sc.Paused && !sc.NextRunAt.IsZero() {
		if spec, err := compileSpec(sc.ID, &v.Spec); err == nil {
			cursor := sc.LastTickAt
			for len(v.NextRuns) < scheduleNextShown {
				n, ok := spec.next(cursor)
				if !ok {
					break
				}
				v.NextRuns = append(v.NextRuns, spec.due(n))
				cursor = n
			}
		}
	}
	return v, nil
}

// ScheduleList returns one page of the caller's schedules by id, and the
// cursor of the next page ("" after the last).
func (e *Engine) ScheduleList(ctx context.Context, who Caller, cursor string, limit int) ([]*Schedule, string, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		return nil, "", fault.ParamErrorf("limit", "limit must be from 1 to %d", store.MaxListLimit)
	}
	scs, err := e.store.ScheduleList(ctx, &store.ScheduleListParams{OwnerClientID: who.ClientID, Cursor: cursor, Limit: limit + 1})
	if err != nil {
		return nil, "", fault.Wrap("list schedules", err)
	}
	next := ""
	if len(scs) > limit {
		scs = scs[:limit]
		next = scs[limit-1].ID
	}
	out := make([]*Schedule, 0, len(scs))
	for _, sc := range scs {
		v, err := e.scheduleView(sc)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// SchedulePause stops a schedule's ticks (a waiting buffered run is
// dropped); its open runs go on. Pausing a paused schedule changes only
// its note. It returns fault.NotFound for a schedule the caller does not
// have.
func (e *Engine) SchedulePause(ctx context.Context, who Caller, id, note string) (*Schedule, error) {
	return e.scheduleSetPaused(ctx, who, id, true, note)
}

// ScheduleResume starts a paused schedule again from now: the ticks that
// fell due while it was paused are not started, nor counted missed.
func (e *Engine) ScheduleResume(ctx context.Context, who Caller, id, note string) (*Schedule, error) {
	return e.scheduleSetPaused(ctx, who, id, false, note)
}

func (e *Engine) scheduleSetPaused(ctx context.Context, who Caller, id string, paused bool, note string) (*Schedule, error) {
	if len(note) > MaxScheduleNoteLen {
		return nil, fault.ParamErrorf("note", "note is longer than %d bytes", MaxScheduleNoteLen)
	}
	for attempt := 0; ; attempt++ {
		sc, err := e.getSchedule(ctx, who, id)
		if err != nil {
			return nil, err
		}
		if sc.Paused == paused && sc.Note == note {
			return e.scheduleView(sc)
		}
		def, err := decodeScheduleDef(sc)
		if err != nil {
			return nil, err
		}
		up := &store.ScheduleUpdateParams{
			OwnerClientID: who.ClientID, ID: id, Version: sc.Version, Paused: paused, Note: note,
			LastTickAt: sc.LastTickAt, Buffered: sc.Buffered,
		}
		switch {
		case paused:
			up.Buffered = ""
		case !sc.Paused:
			up.NextRunAt = sc.NextRunAt // a note only
		default:
			spec, err := compileSpec(id, &def.Spec)
			if err != nil {
				return nil, err
			}
			if now := e.now().UTC().Truncate(time.Millisecond); now.After(up.LastTickAt) {
				up.LastTickAt = now
			}
			if n, ok := spec.next(up.LastTickAt); ok {
				up.NextRunAt = spec.due(n)
			}
		}
		sc, err = e.store.ScheduleUpdate(ctx, up)
		if errors.Is(err, store.ErrConflict) && attempt < 5 {
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Errorf(fault.NotFound, "schedule %q not found", id)
		}
		if err != nil {
			return nil, fault.Wrap("update schedule", err)
		}
		e.scheduleKick()
		return e.scheduleView(sc)
	}
}

// ScheduleDelete deletes the caller's schedule: no tick starts after it;
// its open runs go on. It returns fault.NotFound for a schedule the
// caller does not have.
func (e *Engine) ScheduleDelete(ctx context.Context, who Caller, id string) error {
	if !store.ValidScheduleID(id) {
		return fault.Errorf(fault.NotFound, "schedule %q not found", id)
	}
	err := e.store.ScheduleDelete(ctx, who.ClientID, id)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Errorf(fault.NotFound, "schedule %q not found", id)
	}
	if err != nil {
		return fault.Wrap("delete schedule", err)
	}
	return nil
}

// ScheduleTriggerResult is the result of Engine.ScheduleTrigger.
type ScheduleTriggerResult struct {
	// Task is the run started, or nil when it was buffered.
	Task *store.Task
	// Key is the run's key ("trigger-" and its time).
	Key string
	// Buffered is set when the overlap policy buffer_one keeps the run
	// waiting for the open one to end.
	Buffered bool
}

// ScheduleTrigger starts one run of the caller's schedule now, paused or
// not, under the key "trigger-<time>" (a workflow's workflow id is the
// schedule id, "@" and that key). The overlap policy applies: skip
// refuses it with fault.ScheduleOverlap while a run is open, buffer_one
// buffers it, cancel_other ends the open runs once the new one is
// committed. It returns fault.NotFound for a schedule the caller does
// not have.
func (e *Engine) ScheduleTrigger(ctx context.Context, who Caller, id string) (*ScheduleTriggerResult, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		sc, err := e.getSchedule(ctx, who, id)
		if err != nil {
			return nil, err
		}
		def, err := decodeScheduleDef(sc)
		if err != nil {
			return nil, err
		}
		now := e.now().UTC()
		key := triggerKey(now)
		open, err := e.scheduleOpenRuns(ctx, sc, def.OverlapPolicy)
		if err != nil {
			return nil, err
		}
		tp := &store.ScheduleTickParams{
			OwnerClientID: sc.OwnerClientID, ID: sc.ID, Version: sc.Version, LastTickAt: sc.LastTickAt,
			NewLastTickAt: sc.LastTickAt, NextRunAt: sc.NextRunAt, Buffered: sc.Buffered,
		}
		res := &ScheduleTriggerResult{Key: key}
		var cancel []string
		if len(open) > 0 {
			switch def.OverlapPolicy {
			case OverlapSkip:
				return nil, fault.Errorf(fault.ScheduleOverlap, "schedule %q has an open run (%s) and its overlap policy is skip", id, open[0])
			case OverlapBufferOne:
				if sc.Buffered != "" {
					return nil, fault.Errorf(fault.ScheduleOverlap, "schedule %q has an open run and a buffered one already", id)
				}
				tp.Buffered, res.Buffered = key, true
				if tp.NextRunAt.IsZero() || tp.NextRunAt.After(now.Add(scheduleBufferRecheck)) {
					tp.NextRunAt = now.Add(scheduleBufferRecheck)
				}
			case OverlapCancelOther:
				cancel = open
			}
		}
		if !res.Buffered {
			ip, err := e.scheduleTaskParams(ctx, sc, def, key)
			if err != nil {
				return nil, err
			}
			tp.Runs = []store.ScheduleRunStart{{Key: key, TickAt: now, Task: ip}}
		}
		out, err := e.store.ScheduleTick(ctx, tp)
		if (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists)) && attempt < 5 {
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Errorf(fault.NotFound, "schedule %q not found", id)
		}
		if err != nil {
			if werr := e.workflowIDError(ctx, tp.Runs[0].Task, err); werr != nil {
				return nil, werr
			}
			return nil, fault.Wrap("trigger schedule", err)
		}
		e.scheduleStarted(out.Tasks)
		e.scheduleCancel(ctx, cancel) // after the commit, as a tick does
		if len(out.Tasks) == 1 {
			res.Task = out.Tasks[0]
		}
		if res.Buffered {
			e.scheduleKick()
		}
		return res, nil
	}
}

// scheduleTaskParams builds the task insert of a run of sc under key.
func (e *Engine) scheduleTaskParams(ctx context.Context, sc *store.Schedule, def *scheduleDef, key string) (*store.TaskInsertParams, error) {
	ip, err := e.taskInsertParams(ctx, def.Action.taskParams(sc.OwnerClientID))
	if err != nil {
		return nil, err
	}
	if ip.Kind == store.KindWorkflow {
		ip.WorkflowID = sc.ID + "@" + key
	}
	return ip, nil
}

// scheduleStarted tells the workers and the overdue loop about tasks a
// schedule inserted.
func (e *Engine) scheduleStarted(tasks []*store.Task) {
	for _, t := range tasks {
		e.overdue.armAt(e, t.StartDeadline)
	}
	if len(tasks) > 0 {
		e.sched.notify()
	}
}

// scheduleOpenRuns returns the ids of the schedule's runs that are still
// open (among the latest it keeps); none under allow_all, which never
// asks.
func (e *Engine) scheduleOpenRuns(ctx context.Context, sc *store.Schedule, policy OverlapPolicy) ([]string, error) {
	if policy == OverlapAllowAll {
		return nil, nil
	}
	runs, err := e.store.ScheduleRuns(ctx, sc.OwnerClientID, sc.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Errorf(fault.NotFound, "schedule %q not found", sc.ID)
		}
		return nil, fault.Wrap("schedule runs", err)
	}
	var open []string
	for _, r := range runs {
		t, err := e.store.TaskGet(ctx, r.TaskID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fault.Wrap("schedule run", err)
		}
		if !t.Status.IsTerminal() {
			open = append(open, t.ID)
		}
	}
	return open, nil
}

// scheduleCancel ends a schedule's open runs at once (cancel_other), as
// TaskTerminate does: the tick that follows starts at once.
func (e *Engine) scheduleCancel(ctx context.Context, ids []string) {
	for _, id := range ids {
		if _, err := e.cancelTask(ctx, id); err != nil {
			e.log.Warn("schedule: cancel the open run", "task_id", id, "error", err)
		}
	}
}
