package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/fair"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// TaskCreateParams are the params of Engine.TaskCreate and Engine.TaskRun.
type TaskCreateParams struct {
	// ClientID is the owner of the new task: only this client (and admins)
	// can see it. Defaults to "" (no owner; internal use).
	ClientID string
	// Module is the module name; the task is pinned to its latest version.
	// Required.
	Module string
	// Function is the exported function to run. Required.
	Function string
	// Input is the function's argument. Defaults to the null value.
	Input codec.Envelope
	// OnRestart is the restart policy (persistence §11.3). Defaults to
	// store.OnRestartResume for a workflow and store.OnRestartRetry for an
	// activity.
	OnRestart store.OnRestart
	// TimeoutMS bounds each attempt, in milliseconds, at most
	// MaxTimeoutMS: each plugin call of a workflow, an activity's
	// attempt (start-to-close). Defaults to 0 (no limit).
	TimeoutMS int64
	// ExecutionTimeoutMS bounds a workflow's whole execution, from its
	// creation across all its attempts and waits, in milliseconds, at most
	// MaxTimeoutMS; it is stored as an absolute deadline. Workflows only.
	// Defaults to 0 (no limit).
	ExecutionTimeoutMS int64
	// RunTimeoutMS bounds each attempt of a workflow from its start to its
	// end, waits included, in milliseconds, at most MaxTimeoutMS; a run
	// that times out is retried as Retry allows. Workflows only. Defaults
	// to 0 (no limit).
	RunTimeoutMS int64
	// ScheduleToStartTimeoutMS bounds how long an activity stays queued
	// before a worker takes it, in milliseconds, at most MaxTimeoutMS; it
	// then fails with schedule_to_start_timeout, never retried. Activities
	// only. Defaults to 0 (no limit).
	ScheduleToStartTimeoutMS int64
	// HeartbeatTimeoutMS is the longest an activity's attempt may go
	// without a heartbeat, in milliseconds, at most MaxTimeoutMS; it is
	// then stopped and retried as Retry allows. Activities only. Defaults
	// to 0 (no limit).
	HeartbeatTimeoutMS int64
	// MemoryLimitBytes bounds the linear memory of each plugin call of the
	// task, at most MaxMemoryLimit. Defaults to 0 (the executor's default,
	// 64 MiB for the wazero host).
	MemoryLimitBytes int64
	// Retry is the retry policy, including the total timeout across
	// attempts. Defaults to nil (one attempt).
	Retry *store.RetryPolicy
	// Admin marks a caller with the admin scope, whose MemoryLimitBytes is
	// bounded by the memory budget only, not by a client ceiling. Defaults
	// to false.
	Admin bool
	// ClientMemoryLimit is the caller's own ceiling on MemoryLimitBytes
	// (access.Principal.MaxMemoryLimit). Defaults to 0:
	// Config.ClientMemoryLimit.
	ClientMemoryLimit int64
	// Idempotency, when set, completes the caller's in-flight idempotency
	// key in the same transaction as the task insert, so that a crash can
	// never leave a created task behind a released key. Defaults to nil
	// (the caller completes the key separately, through access).
	Idempotency *IdempotencyReply
	// WorkflowID names a workflow task for its client (1 to 256 bytes of
	// UTF-8 without control characters): no two open runs of one client
	// share one, and signals, queries and cancels may name the run by it
	// (WorkflowRun). Workflows only. Defaults to "" (none).
	WorkflowID string
	// WorkflowIDReuse says whether the task may take a workflow id whose
	// latest run ended. Defaults to store.ReuseAllowDuplicate.
	WorkflowIDReuse store.WorkflowIDReusePolicy
	// IdempotencyKey, for TaskRun, is the caller's in-flight idempotency key
	// of ClientID (from access.Service.IdempotencyBegin): it is bound to the
	// new task in the same transaction as the insert, so that after a crash
	// a retry with the key finds this task (access.Replay.TaskID) instead of
	// creating another. The caller completes the key with the final answer.
	// Defaults to "" (no key).
	IdempotencyKey string
}

// IdempotencyReply is the answer stored with an idempotency key by
// TaskCreate (see TaskCreateParams.Idempotency).
type IdempotencyReply struct {
	// Key is the in-flight key of ClientID, from
	// access.Service.IdempotencyBegin. Required.
	Key string
	// StatusCode is the HTTP status to replay, such as 202. Required.
	StatusCode int
	// Body renders the body to replay from the task about to be inserted
	// (its id, status queued and creation time are final; the stored
	// creation time may be later by the time the commit takes, at most a
	// few milliseconds). The caller should send the same bytes in its
	// first answer, so that a replay is identical to it. Required.
	Body func(t *store.Task) ([]byte, error)
}

// TaskCreate validates p, persists a queued task and its response.created
// event in one transaction, and wakes a worker. It returns only after the
// commit (persistence §11.2: persist before 202). It checks no scope: p's
// ClientID owns the task. It returns fault.Invalid
// (with Param) for bad params, fault.ModuleNotFound, fault.FunctionNotFound, a
// codec code for a bad input envelope, and fault.Unavailable when the engine
// is not open.
func (e *Engine) TaskCreate(ctx context.Context, p *TaskCreateParams) (*store.Task, error) {
	ip, err := e.taskInsertParams(ctx, p)
	if err != nil {
		return nil, err
	}
	if r := p.Idempotency; r != nil {
		if r.Key == "" || r.StatusCode == 0 || r.Body == nil {
			return nil, fault.Errorf(fault.Invalid, "an idempotency reply needs a key, a status and a body")
		}
		body, err := r.Body(provisionalTask(ip, e.now()))
		if err != nil {
			return nil, fault.Wrap("render idempotent reply", err)
		}
		ip.Idempotency = &store.IdempotencyKeyCompleteParams{
			ClientID: p.ClientID, Key: r.Key, StatusCode: r.StatusCode, Body: body,
		}
	}
	t, err := e.taskInsert(ctx, ip)
	if p.Idempotency != nil && err != nil && errors.Is(err, store.ErrNotFound) {
		return nil, fault.Errorf(fault.Conflict, "idempotency key %q is not in flight", p.Idempotency.Key)
	}
	return t, err
}

// provisionalTask is the task ip will insert, as TaskInsert returns it,
// with now as its creation time.
func provisionalTask(ip *store.TaskInsertParams, now time.Time) *store.Task {
	now = now.UTC().Truncate(time.Millisecond)
	onRestart := ip.OnRestart
	if onRestart == "" {
		onRestart = defaultOnRestart(ip.Kind)
	}
	t := &store.Task{
		ID: ip.ID, Module: ip.Module, ModuleDigest: ip.ModuleDigest, Function: ip.Function, Kind: ip.Kind,
		Input: ip.Input, Status: store.StatusQueued, OnRestart: onRestart, Timeout: ip.Timeout, Retry: ip.Retry,
		OwnerClientID: ip.OwnerClientID, WorkflowID: ip.WorkflowID, NotBefore: now, CreatedAt: now, UpdatedAt: now,
		Deadline: ip.Deadline.UTC().Truncate(time.Millisecond), RunTimeout: ip.RunTimeout,
		ScheduleToStartTimeout: ip.ScheduleToStartTimeout, HeartbeatTimeout: ip.HeartbeatTimeout,
	}
	t.StartDeadline = t.Deadline
	if t.ScheduleToStartTimeout > 0 {
		t.StartDeadline = earliest(now.Add(t.ScheduleToStartTimeout), t.Deadline)
	}
	return t
}

// taskInsertParams validates p and turns it into store params.
func (e *Engine) taskInsertParams(ctx context.Context, p *TaskCreateParams) (*store.TaskInsertParams, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if p.Module == "" {
		return nil, fault.ParamErrorf("module", "module is required")
	}
	if p.Function == "" {
		return nil, fault.ParamErrorf("function", "function is required")
	}
	if p.OnRestart != "" && !p.OnRestart.Valid() {
		return nil, fault.ParamErrorf("on_restart", "on_restart must be fail, retry or resume, not %q", p.OnRestart)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"timeout_ms", p.TimeoutMS},
		{"execution_timeout_ms", p.ExecutionTimeoutMS},
		{"run_timeout_ms", p.RunTimeoutMS},
		{"schedule_to_start_timeout_ms", p.ScheduleToStartTimeoutMS},
		{"heartbeat_timeout_ms", p.HeartbeatTimeoutMS},
	} {
		if f.v < 0 || f.v > MaxTimeoutMS {
			return nil, fault.ParamErrorf(f.name, "%s must be between 0 and %d (ten years)", f.name, int64(MaxTimeoutMS))
		}
	}
	if p.WorkflowID != "" && !store.ValidWorkflowID(p.WorkflowID) {
		return nil, fault.ParamErrorf("workflow_id", "workflow_id must be 1 to %d bytes of UTF-8 without control characters", store.MaxWorkflowIDLen)
	}
	if p.WorkflowIDReuse != "" && !p.WorkflowIDReuse.Valid() {
		return nil, fault.ParamErrorf("workflow_id_reuse_policy", "workflow_id_reuse_policy must be allow_duplicate, allow_duplicate_failed_only or reject_duplicate, not %q", p.WorkflowIDReuse)
	}
	if p.MemoryLimitBytes < 0 || p.MemoryLimitBytes > MaxMemoryLimit {
		return nil, fault.ParamErrorf("memory_limit_bytes", "memory_limit_bytes must be between 0 and %d", int64(MaxMemoryLimit))
	}
	if err := e.checkMemoryLimit(p); err != nil {
		return nil, err
	}
	var policy store.RetryPolicy
	if p.Retry != nil {
		if err := retry.Check(p.Retry); err != nil {
			return nil, err
		}
		policy = *p.Retry
	}
	input, err := inputPayload(p.Input)
	if err != nil {
		return nil, err
	}
	m, kind, err := e.mods.Function(ctx, p.Module, p.Function)
	if err != nil {
		return nil, err
	}
	if err := checkTimeoutKind(p, kind); err != nil {
		return nil, err
	}
	if kind != store.KindWorkflow && p.WorkflowID != "" {
		return nil, fault.ParamErrorf("workflow_id", "workflow_id names a workflow; %s is an activity", p.Function)
	}
	if p.WorkflowID == "" && p.WorkflowIDReuse != "" {
		return nil, fault.ParamErrorf("workflow_id_reuse_policy", "workflow_id_reuse_policy needs a workflow_id")
	}
	var deadline time.Time
	if p.ExecutionTimeoutMS > 0 {
		deadline = e.now().Add(time.Duration(p.ExecutionTimeoutMS) * time.Millisecond)
	}
	// Durable by default: a workflow resumes from its journal after a
	// restart; an activity task starts again, under the default retry
	// policy unless it names one.
	onRestart := p.OnRestart
	if onRestart == "" {
		onRestart = defaultOnRestart(kind)
	}
	if p.Retry == nil && kind == store.KindActivity {
		policy = *e.cfg.DefaultRetry
		policy.NonRetryableErrorTypes = slices.Clone(policy.NonRetryableErrorTypes)
	}
	// Every workflow has a workflow id: its own task id when the caller
	// chose none, which a run that continues as new keeps.
	id := store.NewID(store.TaskIDPrefix)
	workflowID := p.WorkflowID
	if kind == store.KindWorkflow && workflowID == "" {
		workflowID = id
	}
	return &store.TaskInsertParams{
		ID:                     id,
		Module:                 m.Name,
		ModuleDigest:           m.Digest,
		Function:               p.Function,
		Kind:                   kind,
		Input:                  input,
		OnRestart:              onRestart,
		Timeout:                time.Duration(p.TimeoutMS) * time.Millisecond,
		Deadline:               deadline,
		RunTimeout:             time.Duration(p.RunTimeoutMS) * time.Millisecond,
		ScheduleToStartTimeout: time.Duration(p.ScheduleToStartTimeoutMS) * time.Millisecond,
		HeartbeatTimeout:       time.Duration(p.HeartbeatTimeoutMS) * time.Millisecond,
		MemoryLimit:            p.MemoryLimitBytes,
		Retry:                  policy,
		OwnerClientID:          p.ClientID,
		WorkflowID:             workflowID,
		WorkflowIDReuse:        p.WorkflowIDReuse,
	}, nil
}

// checkTimeoutKind refuses the timeouts that do not apply to a task of
// kind: the execution and run timeouts are a workflow's, the
// schedule-to-start and heartbeat timeouts an activity's.
func checkTimeoutKind(p *TaskCreateParams, kind store.Kind) error {
	switch {
	case kind != store.KindWorkflow && p.ExecutionTimeoutMS > 0:
		return fault.ParamErrorf("execution_timeout_ms", "execution_timeout_ms applies to workflows; %s is an activity (bound it with retry.total_timeout_ms)", p.Function)
	case kind != store.KindWorkflow && p.RunTimeoutMS > 0:
		return fault.ParamErrorf("run_timeout_ms", "run_timeout_ms applies to workflows; %s is an activity (bound an attempt with timeout_ms)", p.Function)
	case kind == store.KindWorkflow && p.ScheduleToStartTimeoutMS > 0:
		return fault.ParamErrorf("schedule_to_start_timeout_ms", "schedule_to_start_timeout_ms applies to activities; %s is a workflow", p.Function)
	case kind == store.KindWorkflow && p.HeartbeatTimeoutMS > 0:
		return fault.ParamErrorf("heartbeat_timeout_ms", "heartbeat_timeout_ms applies to activities; %s is a workflow", p.Function)
	}
	return nil
}

// defaultOnRestart is the on_restart policy of a task of kind created
// without one: resume for a workflow, retry for an activity.
func defaultOnRestart(kind store.Kind) store.OnRestart {
	if kind == store.KindWorkflow {
		return store.OnRestartResume
	}
	return store.OnRestartRetry
}

// checkMemoryLimit refuses a memory limit that could never be admitted
// (above the whole memory budget) or that the caller may not ask for
// (above the client ceiling), with fault.MemoryLimitTooHigh.
func (e *Engine) checkMemoryLimit(p *TaskCreateParams) error {
	limit := e.adm.LimitOf(p.MemoryLimitBytes)
	ceiling := e.cfg.ClientMemoryLimit
	if p.ClientMemoryLimit > 0 {
		ceiling = p.ClientMemoryLimit
	}
	if !p.Admin && p.MemoryLimitBytes > ceiling {
		return &fault.Error{Code: fault.MemoryLimitTooHigh, Param: "memory_limit_bytes", Message: fmt.Sprintf(
			"memory_limit_bytes %d exceeds this client's ceiling of %d bytes", p.MemoryLimitBytes, ceiling)}
	}
	if !e.adm.Fits(p.MemoryLimitBytes) {
		return &fault.Error{Code: fault.MemoryLimitTooHigh, Param: "memory_limit_bytes", Message: fmt.Sprintf(
			"memory_limit_bytes %d exceeds the daemon's memory budget of %d bytes", limit, e.cfg.MemoryBudget)}
	}
	return nil
}

// nullFrame is the frame of the null value, the input of a task created
// without one.
var nullFrame = func() []byte {
	f, err := codec.EncodeFrame(codec.Null())
	if err != nil {
		panic(err)
	}
	return f
}()

// inputPayload checks an input envelope (codec tag first, then strict
// base64, then the whole frame; Avro Value protocol: wire format) and
// returns it as a store payload.
func inputPayload(env codec.Envelope) (store.Payload, error) {
	if env.Codec == "" && env.Blob == "" {
		return store.Payload{Codec: codec.CodecAvro, Data: nullFrame}, nil
	}
	frame, err := env.Frame()
	if err == nil {
		err = codec.ValidateFrame(frame, codec.DefaultLimits)
	}
	if err != nil {
		return store.Payload{}, &fault.Error{Code: fault.CodeOf(err), Param: "input", Message: fault.Message(err)}
	}
	return store.Payload{Codec: codec.CodecAvro, Data: frame}, nil
}

// taskInsert persists a task and wakes the scheduler.
//
// With a worker idle and the module loaded, the task starts in the same
// transaction and goes straight to that worker: no claim, one commit
// instead of three. A task created under an idempotency key is not: the
// reply stored with the key shows it queued, as the first reply must.
func (e *Engine) taskInsert(ctx context.Context, ip *store.TaskInsertParams) (*store.Task, error) {
	ip.Start = ip.NotBefore.IsZero() && ip.Idempotency == nil && e.mods.Loaded(ip.ModuleDigest) && e.sched.takeIdle()
	var tk fair.Ticket
	if ip.Start {
		var ok bool
		if tk, ok = e.adm.TryStart(ip.OwnerClientID, ip.MemoryLimit); !ok {
			ip.Start = false // through the queue, for the scheduler to admit
			e.sched.free <- struct{}{}
		}
	}
	if ip.Start {
		ip.Host, ip.LeaseTTL = e.cfg.Host, e.cfg.LeaseTTL
	}
	start, mark := time.Now(), e.running.mark()
	t, err := e.store.TaskInsert(ctx, ip)
	e.metrics.ObserveWrite("task_insert", time.Since(start))
	if err != nil {
		if ip.Start {
			e.adm.Release(tk)
			e.sched.free <- struct{}{}
		}
		if werr := e.workflowIDError(ctx, ip, err); werr != nil {
			return nil, werr
		}
		return nil, &fault.Error{Code: fault.Internal, Err: fmt.Errorf("create task: %w", err)}
	}
	if ip.Start {
		e.sched.work <- workItem{task: t, resumed: true, fresh: true, mark: mark}
		return t, nil
	}
	e.overdue.armAt(e, t.StartDeadline)
	e.sched.notify()
	return t, nil
}

// taskRunRecheck is how often TaskRun reads its task while it waits,
// besides when the engine reports it finished.
const taskRunRecheck = time.Second

// TaskRun creates a task like TaskCreate, durably, then waits until it
// finishes and returns its response (POST /v1/responses). When ctx ends
// first it returns ctx's error and the task goes on.
func (e *Engine) TaskRun(ctx context.Context, p *TaskCreateParams) (*store.Response, error) {
	ip, err := e.taskInsertParams(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.IdempotencyKey != "" {
		ip.IdempotencyTask = &store.IdempotencyKeyRef{ClientID: p.ClientID, Key: p.IdempotencyKey}
	}
	ended, stop := e.finished.add(ip.ID)
	defer stop()
	if _, err := e.taskInsert(ctx, ip); err != nil {
		if p.IdempotencyKey != "" && errors.Is(err, store.ErrNotFound) {
			return nil, fault.Errorf(fault.Conflict, "idempotency key %q is not in flight", p.IdempotencyKey)
		}
		return nil, err
	}
	return e.waitTask(ctx, ip.ID, ended)
}

// TaskWait waits until a task the caller may see finishes and returns its
// response, as TaskRun does for the task it creates: for a retry of POST
// /v1/responses whose task was committed before a crash. When ctx ends
// first it returns ctx's error and the task goes on. It returns
// fault.NotFound for a task the caller may not see and fault.Unavailable
// when the engine is not open.
func (e *Engine) TaskWait(ctx context.Context, who Caller, id string) (*store.Response, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	ended, stop := e.finished.add(id)
	defer stop()
	t, err := e.visibleTask(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if t.Status.IsTerminal() {
		r, err := e.store.ResponseGet(ctx, t.ResponseID())
		if err != nil {
			return nil, fault.Wrap("get response", err)
		}
		return r, nil
	}
	return e.waitTask(ctx, id, ended)
}

// waitTask waits until task id is terminal and returns its response; ended
// is closed when the engine sees the task end. It returns ErrClosed when
// the engine stops first.
func (e *Engine) waitTask(ctx context.Context, id string, ended <-chan struct{}) (*store.Response, error) {
	// The engine says when the task ends; reading it now and then as well
	// keeps the wait correct whatever ended it.
	recheck := time.NewTicker(taskRunRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ended:
			ended = nil // closed: read the task once
		case <-recheck.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.runCtx.Done():
			// The engine stops; the task goes on at the next start.
			return nil, ErrClosed
		}
		t, err := e.store.TaskGet(ctx, id)
		if err != nil {
			return nil, fault.Wrap("get task", err)
		}
		if t.Status.IsTerminal() {
			r, err := e.store.ResponseGet(ctx, t.ResponseID())
			if err != nil {
				return nil, fault.Wrap("get response", err)
			}
			return r, nil
		}
	}
}

// TaskGet returns a task the caller may see. Another client's task is
// fault.NotFound, as is an unknown id.
func (e *Engine) TaskGet(ctx context.Context, who Caller, id string) (*store.Task, error) {
	return e.visibleTask(ctx, who, id)
}

// visibleTask reads task id and hides it from a caller who does not own it.
func (e *Engine) visibleTask(ctx context.Context, who Caller, id string) (*store.Task, error) {
	if store.CheckID(store.TaskIDPrefix, id) != nil {
		return nil, fault.Errorf(fault.NotFound, "task %q not found", id)
	}
	t, err := e.store.TaskGet(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "task %q not found", id)
	case err != nil:
		return nil, fault.Wrap("get task", err)
	}
	if !who.sees(t.OwnerClientID) {
		return nil, fault.Errorf(fault.NotFound, "task %q not found", id)
	}
	return t, nil
}

// TaskListParams are the params of Engine.TaskList.
type TaskListParams struct {
	// Status limits the list to one status. Defaults to "" (every status).
	Status string
	// Cursor is the NextCursor of the previous page. Defaults to "" (the
	// first page).
	Cursor string
	// Limit caps the page. Defaults to 50; at most 1000.
	Limit int
	// Payloads reads the tasks' payloads too. Defaults to false: the
	// tasks carry no input, output or error details.
	Payloads bool
	// Module, Function and ParentTaskID limit the list to the tasks of one
	// module, of one function (of any module unless Module is set too), or
	// to the activities one workflow scheduled. Each defaults to "" (no
	// filter).
	Module, Function, ParentTaskID string
	// WorkflowID limits the list to the runs of one workflow id, newest
	// first; with All, of every client's. Defaults to "" (no filter).
	WorkflowID string
}

// maxNameFilter bounds the module and function names a listing filters by.
const maxNameFilter = 256

// TaskList returns one page of the tasks the caller may see, newest first,
// and the cursor of the next page ("" on the last page). It returns
// fault.Invalid for an unknown status.
func (e *Engine) TaskList(ctx context.Context, who Caller, p *TaskListParams) ([]*store.Task, string, error) {
	lp := &store.TaskListParams{Newest: true, Cursor: p.Cursor, Limit: p.Limit, OmitPayloads: !p.Payloads}
	if !who.All {
		lp.OwnerClientID = who.ClientID
	}
	if p.Status != "" {
		s, err := store.ParseStatus(p.Status)
		if err != nil {
			return nil, "", fault.ParamErrorf("status", "unknown task status %q", p.Status)
		}
		lp.Statuses = []store.Status{s}
	}
	if lp.Cursor != "" && store.CheckID(store.TaskIDPrefix, lp.Cursor) != nil {
		return nil, "", fault.ParamErrorf("cursor", "invalid cursor %q", lp.Cursor)
	}
	if p.ParentTaskID != "" && store.CheckID(store.TaskIDPrefix, p.ParentTaskID) != nil {
		return nil, "", fault.ParamErrorf("parent_task_id", "invalid task id %q", p.ParentTaskID)
	}
	for _, f := range []struct{ name, value string }{{"module", p.Module}, {"function", p.Function}} {
		if len(f.value) > maxNameFilter {
			return nil, "", fault.ParamErrorf(f.name, "%s is longer than %d bytes", f.name, maxNameFilter)
		}
	}
	if p.WorkflowID != "" && !store.ValidWorkflowID(p.WorkflowID) {
		return nil, "", fault.ParamErrorf("workflow_id", "workflow_id must be 1 to %d bytes of UTF-8 without control characters", store.MaxWorkflowIDLen)
	}
	lp.Module, lp.Function, lp.ParentTaskID, lp.WorkflowID = p.Module, p.Function, p.ParentTaskID, p.WorkflowID
	switch {
	case lp.Limit <= 0:
		lp.Limit = 50
	case lp.Limit > store.MaxListLimit:
		lp.Limit = store.MaxListLimit
	}
	limit := lp.Limit
	lp.Limit++ // one more tells whether there is a next page
	ts, err := e.store.TaskList(ctx, lp)
	if err != nil {
		return nil, "", fault.Wrap("list tasks", err)
	}
	next := ""
	if len(ts) > limit {
		ts = ts[:limit]
		next = ts[limit-1].ID
	}
	return ts, next, nil
}

// TaskCancel cancels a task (persistence §11.2). An activity task is
// cancelled atomically: a queued or loading one becomes cancelled at once;
// a running one becomes cancelling, its plugin call is asked to stop, and
// its worker then writes cancelled. A workflow is asked to cancel
// (docs/workflows.md, "Cancellation"): the request is recorded once and
// the workflow, woken, sees it, may run its compensation and ends itself,
// typically cancelled; one whose run does not watch the request
// is ended cancelled by its next run. TaskTerminate ends a workflow
// without its say. Cancelling a finished task, or a workflow asked
// before, succeeds and changes nothing. It returns the task as it is after
// the call, and fault.NotFound for a task the caller may not see.
func (e *Engine) TaskCancel(ctx context.Context, who Caller, id string) (*store.Task, error) {
	t, err := e.cancelable(ctx, who, id)
	switch {
	case err != nil || t.Status.IsTerminal():
		return t, err
	case t.Kind == store.KindWorkflow:
		return e.cancelWorkflow(ctx, t, who.ClientID)
	}
	return e.cancelTask(ctx, id)
}

// cancelTask cancels task id and, for a workflow, its children: the part
// of TaskCancel after its checks, which a parent's end also runs for its
// child workflows.
func (e *Engine) cancelTask(ctx context.Context, id string) (*store.Task, error) {
	start := time.Now()
	t, changed, err := e.store.TaskCancel(ctx, id)
	e.metrics.ObserveWrite("task_cancel", time.Since(start))
	if err != nil {
		return nil, fault.Wrap("cancel task", err)
	}
	if changed && t.Status == store.StatusCancelled {
		e.taskFinished(t)
	}
	if t.Status == store.StatusCancelling && !e.running.cancel(id, errCancelRequested) && t.Kind == store.KindWorkflow &&
		(!t.Lease.Held() || t.Lease.Host == e.cfg.Host) {
		// A waiting workflow holds no call to stop: its cancel ends here.
		// One in a run on another host is stopped by that host, which
		// learns of the cancel at its next lease renewal.
		e.cancelWaiting(ctx, id)
		if cur, err := e.store.TaskGet(ctx, id); err == nil {
			t = cur
		}
	}
	if changed && t.Kind == store.KindWorkflow {
		e.cancelChildren(ctx, id)
	}
	return t, nil
}

// TaskSignal delivers a named signal with a value to an unfinished workflow
// task: it is appended to the task's log, in order, exactly once, and wakes
// the workflow. It returns fault.NotFound for a task the caller may not
// see, fault.SignalTargetFinished for a finished task and fault.Invalid for
// an activity task, a bad name or payload.
func (e *Engine) TaskSignal(ctx context.Context, who Caller, id, name string, payload codec.Envelope) error {
	return e.signal(ctx, who, id, name, payload, nil)
}

// TaskSignalIdempotent is TaskSignal under the caller's in-flight
// idempotency key of who.ClientID (from access.Service.IdempotencyBegin):
// the key is completed with status and body in the transaction that appends
// the signal, so that no crash lets a retry with the key deliver the signal
// twice. It returns fault.Conflict when the key is not in flight.
func (e *Engine) TaskSignalIdempotent(ctx context.Context, who Caller, id, name string, payload codec.Envelope, key string, status int, body []byte) error {
	if key == "" || status == 0 {
		return fault.Errorf(fault.Invalid, "an idempotent signal needs a key and a status")
	}
	return e.signal(ctx, who, id, name, payload, &store.IdempotencyKeyCompleteParams{
		ClientID: who.ClientID, Key: key, StatusCode: status, Body: body,
	})
}

// signal is TaskSignal, completing idem with the append when it is set.
func (e *Engine) signal(ctx context.Context, who Caller, id, name string, payload codec.Envelope, idem *store.IdempotencyKeyCompleteParams) error {
	if name == "" || len(name) > 256 {
		return fault.ParamErrorf("name", "signal name must be 1 to 256 characters")
	}
	t, err := e.visibleTask(ctx, who, id)
	if err != nil {
		return err
	}
	if t.Status.IsTerminal() {
		return fault.Errorf(fault.SignalTargetFinished, "task %s is %s and receives no more signals", id, t.Status)
	}
	if t.Kind != store.KindWorkflow {
		return fault.Errorf(fault.Invalid, "task %s is an activity; only workflow tasks receive signals", id)
	}
	value, err := inputPayload(payload)
	if err != nil {
		var re *fault.Error
		if errors.As(err, &re) {
			re.Param = "payload"
		}
		return err
	}
	draft, err := journal.Encode(&journal.SignalReceived{Name: name, Payload: value})
	if err != nil {
		return fault.Wrap("signal payload", err)
	}
	// The signals no wait consumed yet are bounded; the check and the
	// append are one step per workflow.
	ps := e.signals.Of(id)
	ps.Lock()
	defer ps.Unlock()
	size := int64(len(value.Data))
	if err := e.admitSignal(ctx, ps, id, size); err != nil {
		return err
	}
	evs, err := e.store.EventAppend(ctx, &store.EventAppendParams{
		TaskID: id, Events: []store.EventDraft{draft}, Wake: true,
		Idempotency: idem,
	})
	if err == nil && len(evs) == 1 {
		ps.Appended(evs[0].Seq, size)
	}
	switch {
	case errors.Is(err, store.ErrTaskFinished):
		e.signals.Drop(id)
		return fault.Errorf(fault.SignalTargetFinished, "task %s finished and receives no more signals", id)
	case idem != nil && errors.Is(err, store.ErrNotFound):
		return fault.Errorf(fault.Conflict, "idempotency key %q is not in flight", idem.Key)
	case err != nil:
		return fault.Wrap("signal task", err)
	}
	e.wf.markDue()
	e.sched.notify()
	return nil
}

// ResponseGet returns the response of a finished task the caller may see
// (GET /v1/responses/{id}). It returns fault.TaskNotFinished while the task
// runs and fault.NotFound for an unknown id or another client's response.
func (e *Engine) ResponseGet(ctx context.Context, who Caller, id string) (*store.Response, error) {
	if store.CheckID(store.ResponseIDPrefix, id) != nil {
		return nil, fault.Errorf(fault.NotFound, "response %q not found", id)
	}
	r, err := e.store.ResponseGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		t, terr := e.visibleTask(ctx, who, store.TaskIDFor(id))
		if terr != nil {
			return nil, fault.Errorf(fault.NotFound, "response %q not found", id)
		}
		if !t.Status.IsTerminal() {
			return nil, fault.Errorf(fault.TaskNotFinished, "task %s is %s; its response is not ready", t.ID, t.Status)
		}
		return nil, fault.Errorf(fault.NotFound, "response %q not found", id)
	}
	if err != nil {
		return nil, fault.Wrap("get response", err)
	}
	if !who.sees(r.OwnerClientID) {
		return nil, fault.Errorf(fault.NotFound, "response %q not found", id)
	}
	return r, nil
}
