package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// FutureID names one future of a workflow call: an activity, a timer or a
// signal wait. The WorkflowHost chooses the ids; they must be the same on
// every replay of the same journal.
type FutureID int64

// WorkflowHost answers the workflow imports of one workflow call, from the
// task's journal when the step was recorded before and by recording it
// otherwise (docs/abi.md, "Replay"). The embedder implements it per call.
// Methods are called on the goroutine running the guest, one at a time. An
// error fails the call with hook_failed and wraps the error, so an
// embedder's own error (a nondeterminism error naming the step) reaches
// the caller of Call through errors.As.
type WorkflowHost interface {
	// ScheduleActivity schedules an activity call and returns its future.
	ScheduleActivity(ctx context.Context, call ActivityCall) (FutureID, error)
	// StartTimer starts a durable timer of d and returns its future, which
	// resolves to null.
	StartTimer(ctx context.Context, d time.Duration) (FutureID, error)
	// WaitSignal waits for the next signal called name and returns its
	// future, which resolves to the signal's payload, or to
	// abi.OutcomeTimeout after timeout. A negative timeout waits forever.
	WaitSignal(ctx context.Context, name string, timeout time.Duration) (FutureID, error)
	// Await reports whether the futures ids are resolved: with all unset,
	// whether any is, and index is the position in ids of the one resolved
	// first in the journal; with all set, whether every one is (index 0).
	// ready false suspends the workflow.
	Await(ctx context.Context, ids []FutureID, all bool) (index int, ready bool, err error)
	// Result returns the outcome of a resolved future.
	Result(ctx context.Context, id FutureID) (FutureResult, error)
	// Now returns the workflow's deterministic time. It also serves the
	// guest's WASI wall clock during a workflow call.
	Now() time.Time
	// Random fills p with the workflow's deterministic random bytes. It also
	// serves WASI random_get during a workflow call.
	Random(p []byte)
	// History returns how many journal events the run replayed or
	// recorded so far (its commands and the results it read) and the
	// bytes of their values: the same at the same point of every replay.
	History() (length, size int64)
}

// ActivityCall is an activity a workflow schedules.
type ActivityCall struct {
	// Module is the name of the module that holds the activity; empty means
	// the workflow's own module.
	Module string
	// Function is the activity's name.
	Function string
	// Input is the activity's input frame, validated.
	Input []byte
	// Options are the call's options.
	Options ActivityOptions
}

// ActivityOptions are the options of a scheduled activity; zero fields
// mean the embedder's defaults.
type ActivityOptions struct {
	// Timeout bounds one attempt.
	Timeout time.Duration
	// ScheduleToStartTimeout bounds the time queued before a worker takes
	// the activity.
	ScheduleToStartTimeout time.Duration
	// HeartbeatTimeout is the longest an attempt may go without a
	// heartbeat.
	HeartbeatTimeout time.Duration
	// Retry is the retry policy, nil for the default.
	Retry *RetryPolicy
	// ChildWorkflow, when set, makes the call a child workflow.
	ChildWorkflow *ChildWorkflowOptions
}

// ChildWorkflowOptions are the options of a child workflow; zero fields
// mean the embedder's defaults.
type ChildWorkflowOptions struct {
	// WorkflowID is the child's workflow id.
	WorkflowID string
	// ParentClosePolicy is abi.ParentCloseTerminate,
	// abi.ParentCloseRequestCancel or abi.ParentCloseAbandon.
	ParentClosePolicy string
}

// RetryPolicy says how a failed activity is retried; zero fields mean the
// embedder's defaults.
type RetryPolicy struct {
	// MaxAttempts is the most attempts, the first included.
	MaxAttempts int
	// InitialInterval is the delay before the first retry.
	InitialInterval time.Duration
	// BackoffCoefficient multiplies the delay after each retry.
	BackoffCoefficient float64
	// MaxInterval caps the delay.
	MaxInterval time.Duration
	// NonRetryableErrorTypes are error types never retried.
	NonRetryableErrorTypes []string
}

// FutureResult is the outcome of a resolved future.
type FutureResult struct {
	// Outcome says how it resolved.
	Outcome abi.Outcome
	// Frame is the result Value (abi.OutcomeValue) or the error Value
	// (abi.OutcomeError); nil for abi.OutcomeTimeout.
	Frame []byte
}

// workflowFuncs are the functions of the import module weft:workflow/v1,
// which only workflow calls may use; an activity that calls one fails with
// import_not_allowed (docs/abi.md, "weft:workflow/v1").
func workflowFuncs() []hostFunc {
	return []hostFunc{
		{abi.ImportScheduleActivity, []api.ValueType{i64, i64, i64, i64}, []api.ValueType{i64}, workflowScheduleActivity},
		{abi.ImportStartTimer, []api.ValueType{i64}, []api.ValueType{i64}, workflowStartTimer},
		{abi.ImportWaitSignal, []api.ValueType{i64, i64}, []api.ValueType{i64}, workflowWaitSignal},
		{abi.ImportAwait, []api.ValueType{i64, i32}, []api.ValueType{i32}, workflowAwait},
		{abi.ImportFutureResult, []api.ValueType{i64}, []api.ValueType{i64}, workflowFutureResult},
		{abi.ImportFutureRead, []api.ValueType{i64, i64}, []api.ValueType{i64}, workflowFutureRead},
		{abi.ImportNow, nil, []api.ValueType{i64}, workflowNow},
		{abi.ImportRandom, []api.ValueType{i64}, nil, workflowRandom},
		{abi.ImportQueryRequest, nil, []api.ValueType{i64}, workflowQueryRequest},
		{abi.ImportContinueAsNew, []api.ValueType{i64}, nil, workflowContinueAsNew},
		{abi.ImportHistoryLength, nil, []api.ValueType{i64}, workflowHistoryLength},
		{abi.ImportHistorySize, nil, []api.ValueType{i64}, workflowHistorySize},
		{abi.ImportWatchCancel, nil, []api.ValueType{i64}, workflowWatchCancel},
	}
}

// workflow checks a workflow import and returns the call's WorkflowHost.
func (cs *callState) workflow(imp string) WorkflowHost {
	cs.need(abi.KindWorkflow, abi.ModuleWorkflow+"."+imp)
	if cs.querying && imp != abi.ImportNow && imp != abi.ImportRandom && imp != abi.ImportHistoryLength && imp != abi.ImportHistorySize &&
		imp != abi.ImportWatchCancel {
		cs.failf(abi.CodeQueryCommand, "%s called %s while it answered the query %q; a query handler may not call workflow commands", cs.function(), imp, cs.req.Query.Name)
	}
	if cs.suspended {
		cs.failf(abi.CodeABIViolation, "%s called %s after await answered suspended; it must unwind and return suspended", cs.function(), imp)
	}
	if cs.req.Workflow == nil {
		cs.failf(abi.CodeHookFailed, "%s called %s, but the call has no WorkflowHost", cs.function(), imp)
	}
	return cs.req.Workflow
}

func (cs *callState) hookFailed(err error, imp string) {
	cs.fail(wrapf(abi.CodeHookFailed, err, "%s: %s", cs.function(), imp))
}

// workflowScheduleActivity is schedule_activity(module i64, function i64,
// input i64, options i64) -> i64. module is the UTF-8 name of the module
// holding the activity (empty: the workflow's own), function its name,
// input its input frame, and options a frame of null or of a map with the
// optional fields timeout_ms, schedule_to_start_timeout_ms and
// heartbeat_timeout_ms (longs, at most abi.MaxTimeoutMS) and retry (a map with max_attempts,
// initial_interval_ms, backoff_coefficient, max_interval_ms,
// non_retryable_error_types). It returns the future id.
func workflowScheduleActivity(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	wh := cs.workflow(abi.ImportScheduleActivity)
	call := ActivityCall{
		Module:   cs.name(stack[0], "schedule_activity module", true),
		Function: cs.name(stack[1], "schedule_activity function", false),
		Input:    cs.frame(stack[2], "schedule_activity input"),
	}
	opts, perr := parseActivityOptions(cs.view(stack[3], "schedule_activity options"), cs.inst.h.cfg.Limits)
	if perr != nil {
		cs.fail(perr)
	}
	call.Options = opts
	id, err := wh.ScheduleActivity(hookContext(ctx), call)
	if err != nil {
		cs.hookFailed(err, abi.ImportScheduleActivity)
	}
	stack[0] = uint64(id)
}

// workflowStartTimer is start_timer(duration_ms i64) -> i64. It starts a
// durable timer and returns its future id; the future resolves to null. A
// negative duration fails the call with abi_violation.
func workflowStartTimer(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	wh := cs.workflow(abi.ImportStartTimer)
	ms := int64(stack[0])
	if ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		cs.failf(abi.CodeABIViolation, "%s called start_timer with %d ms", cs.function(), ms)
	}
	id, err := wh.StartTimer(hookContext(ctx), time.Duration(ms)*time.Millisecond)
	if err != nil {
		cs.hookFailed(err, abi.ImportStartTimer)
	}
	stack[0] = uint64(id)
}

// workflowWaitSignal is wait_signal(name i64, timeout_ms i64) -> i64. It
// waits for the next signal of that UTF-8 name and returns the future id;
// the future resolves to the signal's payload, or to abi.OutcomeTimeout
// when timeout_ms (if not negative) passes first.
func workflowWaitSignal(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	wh := cs.workflow(abi.ImportWaitSignal)
	name := cs.name(stack[0], "wait_signal name", false)
	timeout := time.Duration(-1)
	if ms := int64(stack[1]); ms >= 0 {
		if ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
			cs.failf(abi.CodeABIViolation, "%s called wait_signal with a timeout of %d ms", cs.function(), ms)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	id, err := wh.WaitSignal(hookContext(ctx), name, timeout)
	if err != nil {
		cs.hookFailed(err, abi.ImportWaitSignal)
	}
	stack[0] = uint64(id)
}

// workflowAwait is await(ids i64, mode i32) -> i32. ids is an array of 1 to
// abi.MaxAwait future ids, each 8 bytes little-endian. With mode
// abi.AwaitAny (0) it returns the index in ids of a resolved future (the one
// resolved first in the journal), with abi.AwaitAll (1) it returns 0 once
// all are resolved. When they are not, it returns abi.AwaitSuspended (-1):
// the guest must then unwind without calling another workflow import and
// return abi.StatusSuspended from weft_call.
func workflowAwait(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	wh := cs.workflow(abi.ImportAwait)
	b := cs.view(stack[0], "await ids")
	mode := int32(uint32(stack[1]))
	switch {
	case len(b) == 0 || len(b)%8 != 0 || len(b)/8 > abi.MaxAwait:
		cs.failf(abi.CodeABIViolation, "%s called await with %d bytes of ids; want 1 to %d ids of 8 bytes", cs.function(), len(b), abi.MaxAwait)
	case mode != abi.AwaitAny && mode != abi.AwaitAll:
		cs.failf(abi.CodeABIViolation, "%s called await with the mode %d", cs.function(), mode)
	}
	ids := make([]FutureID, len(b)/8)
	for i := range ids {
		ids[i] = FutureID(binary.LittleEndian.Uint64(b[8*i:]))
	}
	index, ready, err := wh.Await(hookContext(ctx), ids, mode == abi.AwaitAll)
	if err != nil {
		cs.hookFailed(err, abi.ImportAwait)
	}
	if !ready {
		cs.suspended = true
		stack[0] = api.EncodeI32(abi.AwaitSuspended)
		return
	}
	if index < 0 || index >= len(ids) || (mode == abi.AwaitAll && index != 0) {
		cs.failf(abi.CodeHookFailed, "the WorkflowHost answered await with the index %d for %d ids", index, len(ids))
	}
	stack[0] = uint64(uint32(index))
}

// workflowFutureResult is future_result(id i64) -> i64. For a resolved
// future it returns outcome<<32 | n, where outcome is an abi.Outcome and n
// the length of the pending blob for blob_read: the result Value
// (abi.OutcomeValue) or the error Value (abi.OutcomeError); with
// abi.OutcomeTimeout there is no blob and n is 0. Asking for a future that
// await did not report resolved fails the call through the WorkflowHost.
func workflowFutureResult(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	r := cs.futureResult(ctx, abi.ImportFutureResult, int64(stack[0]))
	if r.Outcome != abi.OutcomeTimeout {
		cs.setBlob(r.Frame)
	}
	stack[0] = uint64(abi.PackOutcome(r.Outcome, uint32(len(r.Frame))))
}

// workflowFutureRead is future_read(id i64, dst i64) -> i64: future_result
// that also copies the frame into dst when it fits, which saves the guest a
// blob_read. A frame longer than dst is not copied but made pending, as
// future_result does; the guest compares the length it gets with dst's.
func workflowFutureRead(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	r := cs.futureResult(ctx, abi.ImportFutureRead, int64(stack[0]))
	dst := cs.view(stack[1], "future_read dst")
	switch {
	case r.Outcome == abi.OutcomeTimeout:
	case len(r.Frame) <= len(dst):
		copy(dst, r.Frame)
	default:
		cs.setBlob(r.Frame)
	}
	stack[0] = uint64(abi.PackOutcome(r.Outcome, uint32(len(r.Frame))))
}

// futureResult asks the WorkflowHost for the outcome of future id, for the
// import imp, and checks it: a value or an error carries a frame, a
// timeout none.
func (cs *callState) futureResult(ctx context.Context, imp string, id int64) FutureResult {
	wh := cs.workflow(imp)
	r, err := wh.Result(hookContext(ctx), FutureID(id))
	if err != nil {
		cs.hookFailed(err, imp)
	}
	switch r.Outcome {
	case abi.OutcomeTimeout:
		r.Frame = nil
	case abi.OutcomeValue, abi.OutcomeError:
		if len(r.Frame) == 0 {
			cs.failf(abi.CodeHookFailed, "the WorkflowHost resolved future %d with %s and no frame", id, r.Outcome)
		}
	default:
		cs.failf(abi.CodeHookFailed, "the WorkflowHost resolved future %d with the unknown outcome %d", id, int32(r.Outcome))
	}
	return r
}

// workflowNow is now() -> i64: the workflow's deterministic time in Unix
// nanoseconds, the same on every replay.
func workflowNow(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	stack[0] = uint64(cs.workflow(abi.ImportNow).Now().UnixNano())
}

// workflowRandom is random(dst i64). It fills dst (at most
// abi.MaxRandomLen bytes) with the workflow's deterministic random bytes.
func workflowRandom(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	wh := cs.workflow(abi.ImportRandom)
	dst := cs.view(stack[0], "random destination")
	if len(dst) > abi.MaxRandomLen {
		cs.failf(abi.CodeABIViolation, "%s asked random for %d bytes; the most is %d", cs.function(), len(dst), abi.MaxRandomLen)
	}
	wh.Random(dst)
}

// parseActivityOptions reads the options frame of schedule_activity.
func parseActivityOptions(frame []byte, limits codec.Limits) (ActivityOptions, *Error) {
	var o ActivityOptions
	v, err := codec.DecodeFrameLimits(frame, limits)
	if err != nil {
		return o, wrapf(abi.CodeBadBlob, err, "schedule_activity options")
	}
	if v.IsNull() {
		return o, nil
	}
	if v.Kind() != codec.KindMap {
		return o, errorf(abi.CodeBadBlob, "schedule_activity options are a %s, not a map or null", v.Kind())
	}
	bad := func(field, want string) *Error {
		return errorf(abi.CodeBadBlob, "schedule_activity option %s must be %s", field, want)
	}
	ms := func(v codec.Value, field string) (time.Duration, *Error) {
		n, ok := v.AsLong()
		if !ok || n < 0 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
			return 0, bad(field, "a non-negative long of milliseconds")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	timeoutMS := func(v codec.Value, field string) (time.Duration, *Error) {
		n, ok := v.AsLong()
		if !ok || n < 0 || n > abi.MaxTimeoutMS {
			return 0, bad(field, fmt.Sprintf("a long of milliseconds between 0 and %d", int64(abi.MaxTimeoutMS)))
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	for _, e := range v.Entries() {
		var err *Error
		switch e.Key {
		case abi.OptionTimeoutMS:
			o.Timeout, err = ms(e.Value, e.Key)
		case abi.OptionScheduleToStartTimeoutMS:
			o.ScheduleToStartTimeout, err = timeoutMS(e.Value, e.Key)
		case abi.OptionHeartbeatTimeoutMS:
			o.HeartbeatTimeout, err = timeoutMS(e.Value, e.Key)
		case abi.OptionRetry:
			o.Retry, err = parseRetry(e.Value, bad, ms)
		case abi.OptionChildWorkflow:
			o.ChildWorkflow, err = parseChildWorkflow(e.Value, bad)
		default:
			err = errorf(abi.CodeBadBlob, "schedule_activity options have the unknown field %q", e.Key)
		}
		if err != nil {
			return o, err
		}
	}
	if o.ChildWorkflow != nil && (o.ScheduleToStartTimeout > 0 || o.HeartbeatTimeout > 0) {
		return o, errorf(abi.CodeBadBlob, "schedule_activity options of a child workflow have no schedule_to_start_timeout_ms or heartbeat_timeout_ms")
	}
	return o, nil
}

// parseChildWorkflow reads the child_workflow option.
func parseChildWorkflow(v codec.Value, bad func(field, want string) *Error) (*ChildWorkflowOptions, *Error) {
	if v.Kind() != codec.KindMap {
		return nil, bad(abi.OptionChildWorkflow, "a map")
	}
	c := &ChildWorkflowOptions{}
	for _, e := range v.Entries() {
		s, ok := e.Value.AsString()
		switch e.Key {
		case abi.ChildWorkflowID:
			if !ok || !validWorkflowID(s) {
				return nil, bad(abi.OptionChildWorkflow+"."+e.Key, "1 to 256 bytes of UTF-8 without control characters")
			}
			c.WorkflowID = s
		case abi.ChildParentClosePolicy:
			if !ok || (s != abi.ParentCloseTerminate && s != abi.ParentCloseRequestCancel && s != abi.ParentCloseAbandon) {
				return nil, bad(abi.OptionChildWorkflow+"."+e.Key, "terminate, request_cancel or abandon")
			}
			c.ParentClosePolicy = s
		default:
			return nil, errorf(abi.CodeBadBlob, "schedule_activity child_workflow option has the unknown field %q", e.Key)
		}
	}
	return c, nil
}

// validWorkflowID reports whether id is 1 to 256 bytes of UTF-8 without
// control characters.
func validWorkflowID(id string) bool {
	if id == "" || len(id) > 256 || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func parseRetry(v codec.Value, bad func(field, want string) *Error, ms func(codec.Value, string) (time.Duration, *Error)) (*RetryPolicy, *Error) {
	if v.IsNull() {
		return nil, nil
	}
	if v.Kind() != codec.KindMap {
		return nil, bad(abi.OptionRetry, "a map")
	}
	r := &RetryPolicy{}
	for _, e := range v.Entries() {
		var err *Error
		switch e.Key {
		case abi.RetryMaxAttempts:
			n, ok := e.Value.AsLong()
			if !ok || n < 0 || n > 1<<31-1 {
				err = bad("retry."+e.Key, "a non-negative long")
			}
			r.MaxAttempts = int(n)
		case abi.RetryInitialIntervalMS:
			r.InitialInterval, err = ms(e.Value, "retry."+e.Key)
		case abi.RetryMaxIntervalMS:
			r.MaxInterval, err = ms(e.Value, "retry."+e.Key)
		case abi.RetryBackoffCoefficient:
			f, ok := e.Value.AsDouble()
			if !ok || f < 0 {
				err = bad("retry."+e.Key, "a non-negative double")
			}
			r.BackoffCoefficient = f
		case abi.RetryNonRetryableErrorTypes:
			if e.Value.Kind() != codec.KindList {
				err = bad("retry."+e.Key, "a list of strings")
				break
			}
			for _, item := range e.Value.Items() {
				s, ok := item.AsString()
				if !ok {
					err = bad("retry."+e.Key, "a list of strings")
					break
				}
				r.NonRetryableErrorTypes = append(r.NonRetryableErrorTypes, s)
			}
		default:
			err = errorf(abi.CodeBadBlob, "schedule_activity retry policy has the unknown field %q", e.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// workflowContinueAsNew is continue_as_new(input i64). It ends the run as
// set_output would, with input, a Value frame, as the input of the next
// run: the workflow ends (completed, continued as new) and starts again
// as a new task of the same workflow id, with a journal that starts over.
// The guest must then return StatusOK. Called after set_output or
// set_error, or twice, it fails the call with abi_violation.
func workflowContinueAsNew(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.workflow(abi.ImportContinueAsNew)
	if cs.hasOutput || cs.appErr != nil {
		cs.failf(abi.CodeABIViolation, "%s called continue_as_new after set_output, set_error or continue_as_new", cs.function())
	}
	cs.output = cs.frame(stack[0], "continue_as_new input")
	cs.hasOutput, cs.continued = true, true
}

// workflowHistoryLength is history_length() -> i64 (see WorkflowHost.History).
func workflowHistoryLength(ctx context.Context, _ api.Module, stack []uint64) {
	n, _ := stateOf(ctx).workflow(abi.ImportHistoryLength).History()
	stack[0] = uint64(n)
}

// workflowHistorySize is history_size() -> i64 (see WorkflowHost.History).
func workflowHistorySize(ctx context.Context, _ api.Module, stack []uint64) {
	_, n := stateOf(ctx).workflow(abi.ImportHistorySize).History()
	stack[0] = uint64(n)
}

// workflowWatchCancel is watch_cancel() -> i64: the id of the workflow's
// cancel future, abi.CancelFuture. It records nothing; the future resolves
// when the workflow is asked to cancel, and a call that asks for it
// handles its cancel itself (CallResult.HandlesCancel).
func workflowWatchCancel(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.workflow(abi.ImportWatchCancel)
	cs.watched = true
	stack[0] = uint64(abi.CancelFuture)
}
