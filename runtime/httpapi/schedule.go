package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// ScheduleService creates, reads, pauses, resumes, triggers and deletes
// the caller's schedules (/v1/schedules); runtime.Engine implements it.
// Schedules are per client: every method sees the caller's own only, and
// answers fault.NotFound for another client's.
type ScheduleService interface {
	// ScheduleCreate stores a new schedule. It returns fault.Invalid (with
	// Param) for bad params, fault.ModuleNotFound, fault.FunctionNotFound,
	// fault.ScheduleExists and fault.ScheduleLimitExceeded.
	ScheduleCreate(ctx context.Context, who runtime.Caller, p *runtime.ScheduleCreateParams) (*runtime.Schedule, error)
	// ScheduleGet returns a schedule with its latest and next runs.
	ScheduleGet(ctx context.Context, who runtime.Caller, id string) (*runtime.Schedule, error)
	// ScheduleList returns a page of schedules by id and the next cursor.
	ScheduleList(ctx context.Context, who runtime.Caller, cursor string, limit int) ([]*runtime.Schedule, string, error)
	// SchedulePause and ScheduleResume stop and restart the ticks.
	SchedulePause(ctx context.Context, who runtime.Caller, id, note string) (*runtime.Schedule, error)
	ScheduleResume(ctx context.Context, who runtime.Caller, id, note string) (*runtime.Schedule, error)
	// ScheduleTrigger starts one run now, under the overlap policy
	// (fault.ScheduleOverlap when skip refuses it).
	ScheduleTrigger(ctx context.Context, who runtime.Caller, id string) (*runtime.ScheduleTriggerResult, error)
	// ScheduleDelete deletes a schedule; its runs go on.
	ScheduleDelete(ctx context.Context, who runtime.Caller, id string) error
}

// decodeScheduleRequest reads and checks the body of POST /v1/schedules.
func (s *Server) decodeScheduleRequest(r *http.Request) (*runtime.ScheduleCreateParams, error) {
	var q scheduleRequest
	if err := decodeJSON(r, &q); err != nil {
		return nil, err
	}
	if q.Spec == nil {
		return nil, errorf(fault.Invalid, "spec", "spec is required")
	}
	if q.Action == nil {
		return nil, errorf(fault.Invalid, "action", "action is required")
	}
	if q.Action.WorkflowID != "" || q.Action.WorkflowIDReusePolicy != "" {
		return nil, errorf(fault.Invalid, "action.workflow_id", "a schedule names the workflow id of each run itself (<schedule_id>@<tick time>)")
	}
	tp, err := taskParamsOf(r, q.Action)
	if err != nil {
		return nil, prefixParam(err, "action.")
	}
	p := &runtime.ScheduleCreateParams{
		ID: q.ScheduleID,
		Spec: runtime.ScheduleSpec{
			Cron: q.Spec.Cron, Timezone: q.Spec.Timezone, IntervalMS: q.Spec.IntervalMS,
			OffsetMS: q.Spec.OffsetMS, JitterMS: q.Spec.JitterMS,
		},
		OverlapPolicy:   runtime.OverlapPolicy(q.OverlapPolicy),
		CatchupWindowMS: q.CatchupWindowMS,
		Paused:          q.Paused,
		Note:            q.Note,
		Task:            *tp,
	}
	for _, f := range []struct {
		param string
		v     *string
		dst   *time.Time
	}{{"spec.start_at", q.Spec.StartAt, &p.Spec.StartAt}, {"spec.end_at", q.Spec.EndAt, &p.Spec.EndAt}} {
		if f.v == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, *f.v)
		if err != nil {
			return nil, errorf(fault.Invalid, f.param, "%s must be an RFC 3339 time, such as 2026-01-02T03:04:05Z", f.param)
		}
		*f.dst = t
	}
	return p, nil
}

// scheduleRequest is client.ScheduleRequest as the server reads it: the
// spec's times as text, so that a bad one is refused naming its field.
type scheduleRequest struct {
	ScheduleID      string              `json:"schedule_id"`
	Spec            *scheduleSpecWire   `json:"spec"`
	OverlapPolicy   string              `json:"overlap_policy"`
	CatchupWindowMS *int64              `json:"catchup_window_ms"`
	Paused          bool                `json:"paused"`
	Note            string              `json:"note"`
	Action          *client.TaskRequest `json:"action"`
}

// scheduleSpecWire is client.ScheduleSpec with its times as text.
type scheduleSpecWire struct {
	Cron       string  `json:"cron"`
	Timezone   string  `json:"timezone"`
	IntervalMS int64   `json:"interval_ms"`
	OffsetMS   int64   `json:"offset_ms"`
	JitterMS   int64   `json:"jitter_ms"`
	StartAt    *string `json:"start_at"`
	EndAt      *string `json:"end_at"`
}

// prefixParam puts prefix before the param err names, if any.
func prefixParam(err error, prefix string) error {
	if p := fault.Param(err); p != "" {
		return &fault.Error{Code: fault.CodeOf(err), Message: fault.Message(err), Param: prefix + p, Err: err}
	}
	return err
}

// engineParam maps the engine's names of an action's fields to the
// request's.
func engineParam(err error) error {
	switch p := fault.Param(err); p {
	case "", "spec", "overlap_policy", "catchup_window_ms", "note", "schedule_id":
		return err
	default:
		if len(p) >= 5 && p[:5] == "spec." {
			return err
		}
		return prefixParam(err, "action.")
	}
}

// scheduleDoc renders a schedule.
func (s *Server) scheduleDoc(v *runtime.Schedule) *client.Schedule {
	sc := v.Stored
	d := &client.Schedule{
		Object:     "schedule",
		ScheduleID: sc.ID,
		ClientID:   sc.OwnerClientID,
		Spec: client.ScheduleSpec{
			Cron: v.Spec.Cron, Timezone: v.Spec.Timezone, IntervalMS: v.Spec.IntervalMS,
			OffsetMS: v.Spec.OffsetMS, JitterMS: v.Spec.JitterMS,
			StartAt: timeOrNil(v.Spec.StartAt), EndAt: timeOrNil(v.Spec.EndAt),
		},
		OverlapPolicy:   string(v.OverlapPolicy),
		CatchupWindowMS: v.CatchupWindow.Milliseconds(),
		Paused:          sc.Paused,
		Note:            sc.Note,
		LastTickAt:      sc.LastTickAt.UTC(),
		NextRunAt:       timeOrNil(sc.NextRunAt),
		Buffered:        sc.Buffered,
		Missed:          sc.Missed,
		Skipped:         sc.Skipped,
		CreatedAt:       sc.CreatedAt.UTC(),
		UpdatedAt:       sc.UpdatedAt.UTC(),
	}
	t := v.Task
	d.Action = client.TaskRequest{
		Module: t.Module, Function: t.Function, Input: client.InputOf(t.Input), OnRestart: string(t.OnRestart),
		TimeoutMS: t.TimeoutMS, ExecutionTimeoutMS: t.ExecutionTimeoutMS, RunTimeoutMS: t.RunTimeoutMS,
		ScheduleToStartTimeoutMS: t.ScheduleToStartTimeoutMS, HeartbeatTimeoutMS: t.HeartbeatTimeoutMS,
		MemoryLimitBytes: t.MemoryLimitBytes,
	}
	if t.Retry != nil {
		d.Action.Retry = retryDocOf(*t.Retry)
	}
	for _, n := range v.NextRuns {
		d.NextRuns = append(d.NextRuns, n.UTC())
	}
	for _, r := range v.Runs {
		d.LastRuns = append(d.LastRuns, client.ScheduleRun{
			Key: r.Key, NominalTime: r.TickAt.UTC(), StartedAt: r.StartedAt.UTC(), TaskID: r.TaskID,
			Status: string(r.Status), Trigger: r.Trigger,
		})
	}
	return d
}

// handleScheduleCreate creates a schedule: POST /v1/schedules answers 201
// with it and its Location.
func (s *Server) handleScheduleCreate(w http.ResponseWriter, r *http.Request) {
	p, err := s.decodeScheduleRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.schedules.ScheduleCreate(r.Context(), caller(r), p)
	if err != nil {
		s.writeError(w, r, engineParam(err))
		return
	}
	w.Header().Set("Location", "/v1/schedules/"+v.Stored.ID)
	s.writeJSON(w, http.StatusCreated, s.scheduleDoc(v))
}

// handleScheduleList lists the caller's schedules by id: GET
// /v1/schedules?cursor=&limit=.
func (s *Server) handleScheduleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageSize(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, next, err := s.schedules.ScheduleList(r.Context(), caller(r), q.Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := client.List[*client.Schedule]{Object: "list", Data: make([]*client.Schedule, 0, len(list)), NextCursor: next, HasMore: next != ""}
	for _, v := range list {
		out.Data = append(out.Data, s.scheduleDoc(v))
	}
	s.writeJSON(w, http.StatusOK, out)
}

// handleScheduleGet returns one schedule with its last and next runs: GET
// /v1/schedules/{id}. Another client's schedule is 404.
func (s *Server) handleScheduleGet(w http.ResponseWriter, r *http.Request) {
	v, err := s.schedules.ScheduleGet(r.Context(), caller(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.scheduleDoc(v))
}

// scheduleNote reads the optional {"note"} body of pause and resume.
func scheduleNote(r *http.Request) (string, error) {
	data, err := readBody(r)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil
	}
	var n client.ScheduleNote
	if err := decodeStrict(data, &n); err != nil {
		return "", err
	}
	return n.Note, nil
}

// handleSchedulePause pauses a schedule: POST /v1/schedules/{id}/pause
// answers 200 with it.
func (s *Server) handleSchedulePause(w http.ResponseWriter, r *http.Request) {
	s.schedulePaused(w, r, s.schedules.SchedulePause)
}

// handleScheduleResume resumes a schedule from now: POST
// /v1/schedules/{id}/resume answers 200 with it.
func (s *Server) handleScheduleResume(w http.ResponseWriter, r *http.Request) {
	s.schedulePaused(w, r, s.schedules.ScheduleResume)
}

func (s *Server) schedulePaused(w http.ResponseWriter, r *http.Request,
	set func(context.Context, runtime.Caller, string, string) (*runtime.Schedule, error),
) {
	note, err := scheduleNote(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := set(r.Context(), caller(r), chi.URLParam(r, "id"), note)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.scheduleDoc(v))
}

// handleScheduleTrigger starts one run now: POST
// /v1/schedules/{id}/trigger answers 202 with the run's task (or, under
// buffer_one with a run open, buffered and no task).
func (s *Server) handleScheduleTrigger(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	res, err := s.schedules.ScheduleTrigger(r.Context(), caller(r), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d := &client.ScheduleTrigger{Object: "schedule_trigger", ScheduleID: id, Key: res.Key, Buffered: res.Buffered}
	if res.Task != nil {
		d.Task = s.taskDoc(res.Task)
		w.Header().Set("Location", "/v1/tasks/"+res.Task.ID)
	}
	s.writeJSON(w, http.StatusAccepted, d)
}

// handleScheduleDelete deletes a schedule: DELETE /v1/schedules/{id}
// answers 204; its runs go on.
func (s *Server) handleScheduleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.schedules.ScheduleDelete(r.Context(), caller(r), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// noSchedules serves the schedule routes of a server without a
// ScheduleService.
type noSchedules struct{}

func (noSchedules) err() error {
	return fault.Errorf(fault.Unavailable, "this server serves no schedules")
}

func (n noSchedules) ScheduleCreate(context.Context, runtime.Caller, *runtime.ScheduleCreateParams) (*runtime.Schedule, error) {
	return nil, n.err()
}

func (n noSchedules) ScheduleGet(context.Context, runtime.Caller, string) (*runtime.Schedule, error) {
	return nil, n.err()
}

func (n noSchedules) ScheduleList(context.Context, runtime.Caller, string, int) ([]*runtime.Schedule, string, error) {
	return nil, "", n.err()
}

func (n noSchedules) SchedulePause(context.Context, runtime.Caller, string, string) (*runtime.Schedule, error) {
	return nil, n.err()
}

func (n noSchedules) ScheduleResume(context.Context, runtime.Caller, string, string) (*runtime.Schedule, error) {
	return nil, n.err()
}

func (n noSchedules) ScheduleTrigger(context.Context, runtime.Caller, string) (*runtime.ScheduleTriggerResult, error) {
	return nil, n.err()
}

func (n noSchedules) ScheduleDelete(context.Context, runtime.Caller, string) error { return n.err() }
