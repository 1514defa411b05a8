package httpapi

import (
	"bufio"
	"bytes"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

// Page sizes of list endpoints.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// maxMS is the largest millisecond count a time.Duration holds.
const maxMS = math.MaxInt64 / int64(time.Millisecond)

// decodeTaskRequest reads and validates the body of POST /v1/tasks and POST
// /v1/responses into engine parameters for the caller.
func (s *Server) decodeTaskRequest(r *http.Request) (*runtime.TaskCreateParams, error) {
	var q client.TaskRequest
	if err := decodeJSON(r, &q); err != nil {
		return nil, err
	}
	return taskParamsOf(r, &q)
}

// taskParamsOf checks a decoded task request and turns it into engine
// parameters for the caller: POST /v1/tasks, and the action of POST
// /v1/schedules.
func taskParamsOf(r *http.Request, q *client.TaskRequest) (*runtime.TaskCreateParams, error) {
	if q.Module == "" {
		return nil, errorf(fault.Invalid, "module", "module is required")
	}
	if q.Function == "" {
		return nil, errorf(fault.Invalid, "function", "function is required")
	}
	input, err := parseInput(q.Input, "input")
	if err != nil {
		return nil, err
	}
	p := &runtime.TaskCreateParams{
		ClientID: principal(r).ClientID,
		Admin:    principal(r).IsAdmin(),

		ClientMemoryLimit: principal(r).MaxMemoryLimit,
		Module:            q.Module,
		Function:          q.Function,
		Input:             input,
	}
	if q.OnRestart != "" && !store.OnRestart(q.OnRestart).Valid() {
		return nil, errorf(fault.Invalid, "on_restart", "on_restart must be fail, retry or resume, not %q", q.OnRestart)
	}
	p.OnRestart = store.OnRestart(q.OnRestart)
	if _, err := msDuration(q.TimeoutMS, "timeout_ms"); err != nil {
		return nil, err
	}
	p.TimeoutMS = q.TimeoutMS
	p.ExecutionTimeoutMS = q.ExecutionTimeoutMS
	p.RunTimeoutMS = q.RunTimeoutMS
	p.ScheduleToStartTimeoutMS = q.ScheduleToStartTimeoutMS
	p.HeartbeatTimeoutMS = q.HeartbeatTimeoutMS
	p.MemoryLimitBytes = q.MemoryLimitBytes
	p.WorkflowID = q.WorkflowID
	p.WorkflowIDReuse = store.WorkflowIDReusePolicy(q.WorkflowIDReusePolicy)
	if q.Retry != nil {
		rp, err := retryPolicy(q.Retry)
		if err != nil {
			return nil, err
		}
		p.Retry = &rp
	}
	return p, nil
}

// msDuration converts a millisecond count from a request.
func msDuration(ms int64, param string) (time.Duration, error) {
	if ms < 0 || ms > maxMS {
		return 0, errorf(fault.Invalid, param, "%s must be from 0 to %d", param, maxMS)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// retryPolicy converts the retry policy of a request.
func retryPolicy(d *client.RetryPolicy) (store.RetryPolicy, error) {
	initial, err := msDuration(d.InitialIntervalMS, "retry.initial_interval_ms")
	if err != nil {
		return store.RetryPolicy{}, err
	}
	maximum, err := msDuration(d.MaximumIntervalMS, "retry.maximum_interval_ms")
	if err != nil {
		return store.RetryPolicy{}, err
	}
	if d.BackoffCoefficient != 0 && !(d.BackoffCoefficient >= 1 && d.BackoffCoefficient <= 100) {
		return store.RetryPolicy{}, errorf(fault.Invalid, "retry.backoff_coefficient", "retry.backoff_coefficient must be from 1 to 100")
	}
	if d.MaximumAttempts < 0 {
		return store.RetryPolicy{}, errorf(fault.Invalid, "retry.maximum_attempts", "retry.maximum_attempts must not be negative")
	}
	return store.RetryPolicy{
		InitialInterval:        initial,
		BackoffCoefficient:     d.BackoffCoefficient,
		MaximumInterval:        maximum,
		MaximumAttempts:        d.MaximumAttempts,
		NonRetryableErrorTypes: d.NonRetryableErrorTypes,
	}, nil
}

func retryDocOf(p store.RetryPolicy) *client.RetryPolicy {
	d := &client.RetryPolicy{
		InitialIntervalMS:      p.InitialInterval.Milliseconds(),
		BackoffCoefficient:     p.BackoffCoefficient,
		MaximumIntervalMS:      p.MaximumInterval.Milliseconds(),
		MaximumAttempts:        p.MaximumAttempts,
		NonRetryableErrorTypes: p.NonRetryableErrorTypes,
	}
	if d.NonRetryableErrorTypes == nil {
		d.NonRetryableErrorTypes = []string{}
	}
	return d
}

func (s *Server) taskDoc(t *store.Task) *client.Task {
	d := &client.Task{
		ID:                       t.ID,
		Object:                   "task",
		Module:                   t.Module,
		ModuleDigest:             t.ModuleDigest,
		Function:                 t.Function,
		Kind:                     string(t.Kind),
		Status:                   string(t.Status),
		OnRestart:                string(t.OnRestart),
		TimeoutMS:                t.Timeout.Milliseconds(),
		MemoryLimitBytes:         t.MemoryLimit,
		Retry:                    retryDocOf(t.Retry),
		Attempt:                  t.Attempt,
		Deadline:                 timeOrNil(t.Deadline),
		RunTimeoutMS:             t.RunTimeout.Milliseconds(),
		RunDeadline:              timeOrNil(t.RunDeadline),
		ScheduleToStartTimeoutMS: t.ScheduleToStartTimeout.Milliseconds(),
		HeartbeatTimeoutMS:       t.HeartbeatTimeout.Milliseconds(),
		InputEnvelope:            envelopeOf(t.Input),
		OutputEnvelope:           envelopeOf(t.Output),
		Error:                    s.errorDoc(t.Error),
		ClientID:                 t.OwnerClientID,
		ParentTaskID:             t.ParentTaskID,
		WorkflowID:               t.WorkflowID,
		ContinuedFromTaskID:      t.ContinuedFrom,
		ParentClosePolicy:        string(t.ParentClosePolicy),
		CancelRequestedAt:        timeOrNil(t.CancelRequestedAt),
		ResponseID:               t.ResponseID(),
		LastSequenceNumber:       t.LastSeq,
		CreatedAt:                t.CreatedAt.UTC(),
		UpdatedAt:                t.UpdatedAt.UTC(),
		StartedAt:                timeOrNil(t.StartedAt),
		FinishedAt:               timeOrNil(t.FinishedAt),
	}
	if t.Lease.Held() {
		d.Host = t.Lease.Host
	}
	if p := t.Progress; p != nil {
		d.Progress = &client.Progress{Done: p.Done, Total: p.Total, Message: p.Message, UpdatedAt: p.UpdatedAt.UTC()}
	}
	d.Input = s.projection(d.InputEnvelope)
	d.Output = s.projection(d.OutputEnvelope)
	d.InputProjectionOmitted = s.projectionOmitted(d.InputEnvelope)
	d.OutputProjectionOmitted = s.projectionOmitted(d.OutputEnvelope)
	return d
}

// handleTaskCreate starts a task: POST /v1/tasks answers 202 with the task
// and its Location only after the task is committed (persistence §11.2).
func (s *Server) handleTaskCreate(w http.ResponseWriter, r *http.Request) {
	p, err := s.decodeTaskRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	held := heldIdempotencyKey(r)
	if held == nil {
		t, err := s.tasks.TaskCreate(r.Context(), p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Location", "/v1/tasks/"+t.ID)
		s.writeJSON(w, http.StatusAccepted, s.taskDoc(t))
		return
	}
	// Under an Idempotency-Key the answer is stored with the task, in one
	// transaction, and sent as stored.
	var answer []byte
	p.Idempotency = &runtime.IdempotencyReply{
		Key: held.key, StatusCode: http.StatusAccepted,
		Body: func(t *store.Task) ([]byte, error) {
			var err error
			answer, err = encodeJSON(s.taskDoc(t))
			return answer, err
		},
	}
	t, err := s.tasks.TaskCreate(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	held.stored = true
	w.Header().Set("Location", "/v1/tasks/"+t.ID)
	writeBody(w, http.StatusAccepted, answer)
}

// handleTaskList lists the caller's tasks (every task for admin), newest
// first: GET /v1/tasks?status=&module=&function=&parent_task_id=&workflow_id=&cursor=
// &limit=&include=payloads. Without include=payloads the tasks carry no
// payloads (and none is read); a page ends early, with a cursor, once it
// passes Config.MaxPageBytes.
func (s *Server) handleTaskList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageSize(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	payloads := includePayloads(r)
	page := s.newPage()
	cursor := q.Get("cursor")
	for left := limit; ; {
		batch := left
		if payloads {
			batch = min(left, payloadBatch)
		}
		tasks, next, err := s.tasks.TaskList(r.Context(), caller(r), &runtime.TaskListParams{
			Status: q.Get("status"), Cursor: cursor, Limit: batch, Payloads: payloads,
			Module: q.Get("module"), Function: q.Get("function"), ParentTaskID: q.Get("parent_task_id"),
			WorkflowID: q.Get("workflow_id"),
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for i, t := range tasks {
			item, err := s.taskItem(t, payloads)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			more := page.add(item)
			cursor = t.ID
			left--
			if !more {
				if i < len(tasks)-1 || next != "" {
					page.write(w, cursor, true)
				} else {
					page.write(w, "", false)
				}
				return
			}
		}
		if next == "" {
			page.write(w, "", false)
			return
		}
		if left == 0 {
			page.write(w, cursor, true)
			return
		}
	}
}

// payloadBatch is how many tasks or events a page with payloads reads from
// the store at a time.
const payloadBatch = 8

// taskItem encodes one task of a list page.
func (s *Server) taskItem(t *store.Task, payloads bool) ([]byte, error) {
	if !payloads {
		return marshalHead(s.taskSummary(t))
	}
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := s.encodeTask(bw, t); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// handleTaskGet returns one task: GET /v1/tasks/{id}. Another client's task
// is 404.
func (s *Server) handleTaskGet(w http.ResponseWriter, r *http.Request) {
	s.taskGet(w, r, chi.URLParam(r, "id"))
}

// taskGet writes task id, for handleTaskGet and handleWorkflowGet.
func (s *Server) taskGet(w http.ResponseWriter, r *http.Request, id string) {
	t, err := s.tasks.TaskGet(r.Context(), caller(r), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTask(w, r, http.StatusOK, t)
}

// handleTaskCancel cancels a task: POST /v1/tasks/{id}/cancel answers 200
// with the task. A queued activity is cancelled at once, a running one
// moves to cancelling; a workflow is asked to cancel (cancel_requested_at)
// and ends itself; a finished task is returned unchanged.
func (s *Server) handleTaskCancel(w http.ResponseWriter, r *http.Request) {
	s.taskCancel(w, r, chi.URLParam(r, "id"), false)
}

// handleTaskTerminate ends a task at once: POST /v1/tasks/{id}/terminate
// answers 200 with the task, queued ones cancelled, running ones
// cancelling.
func (s *Server) handleTaskTerminate(w http.ResponseWriter, r *http.Request) {
	s.taskCancel(w, r, chi.URLParam(r, "id"), true)
}

// taskCancel cancels or terminates task id, for the cancel and terminate
// routes of tasks and workflow ids.
func (s *Server) taskCancel(w http.ResponseWriter, r *http.Request, id string, terminate bool) {
	end := s.tasks.TaskCancel
	if terminate {
		end = s.tasks.TaskTerminate
	}
	t, err := end(r.Context(), caller(r), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.taskDoc(t))
}

// handleTaskSignal delivers a named signal to a task: POST
// /v1/tasks/{id}/signals/{name} answers 202 once the signal is recorded. An
// empty body sends the null value.
func (s *Server) handleTaskSignal(w http.ResponseWriter, r *http.Request) {
	s.signal(w, r, chi.URLParam(r, "id"), chi.URLParam(r, "name"))
}

// signal delivers the signal name to task id, for handleTaskSignal and
// handleWorkflowSignal.
func (s *Server) signal(w http.ResponseWriter, r *http.Request, id, name string) {
	body, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var q client.SignalRequest
	if len(body) > 0 {
		if err := decodeStrict(body, &q); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	input, err := parseInput(q.Input, "input")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	held := heldIdempotencyKey(r)
	if held == nil {
		if err := s.tasks.TaskSignal(r.Context(), caller(r), id, name, input); err != nil {
			s.writeError(w, r, renameParam(err, "payload", "input"))
			return
		}
		s.writeJSON(w, http.StatusAccepted, client.Signal{Object: "signal", TaskID: id, Name: name})
		return
	}
	// Under an Idempotency-Key the answer is stored with the signal, in one
	// transaction.
	answer, err := encodeJSON(client.Signal{Object: "signal", TaskID: id, Name: name})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.tasks.TaskSignalIdempotent(r.Context(), caller(r), id, name, input, held.key, http.StatusAccepted, answer); err != nil {
		s.writeError(w, r, renameParam(err, "payload", "input"))
		return
	}
	held.stored = true
	writeBody(w, http.StatusAccepted, answer)
}

// pageSize parses a limit query parameter.
func pageSize(v string) (int, error) {
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, errorf(fault.Invalid, "limit", "limit must be an integer from 1 to %d", maxPageSize)
	}
	return n, nil
}
