package httpapi

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// The routes under /v1/workflows/{workflow_id} name a workflow by the id
// its client started it with (docs/http-api.md, "Workflow ids"): each
// resolves the id to the caller's latest run of it, the open one while
// there is one, and then does what the route of that task does.

// pathParam returns the URL parameter key, decoded: a workflow id may hold
// any character, '/' included (as %2F), and chi routes such a path on its
// escaped form.
func pathParam(r *http.Request, key string) (string, error) {
	v := chi.URLParam(r, key)
	if r.URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", errorf(fault.Invalid, key, "%s is not a valid escaped path segment", key)
	}
	return u, nil
}

// workflowRun resolves the workflow id of the request to its latest run,
// writing the error when it cannot.
func (s *Server) workflowRun(w http.ResponseWriter, r *http.Request) (*store.Task, bool) {
	wid, err := pathParam(r, "workflow_id")
	if err == nil {
		var t *store.Task
		if t, err = s.tasks.WorkflowRun(r.Context(), caller(r), wid); err == nil {
			return t, true
		}
	}
	s.writeError(w, r, err)
	return nil, false
}

// handleWorkflowGet returns the latest run of a workflow id: GET
// /v1/workflows/{workflow_id}.
func (s *Server) handleWorkflowGet(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.workflowRun(w, r); ok {
		s.taskGet(w, r, t.ID)
	}
}

// handleWorkflowCancel cancels the latest run of a workflow id: POST
// /v1/workflows/{workflow_id}/cancel.
func (s *Server) handleWorkflowCancel(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.workflowRun(w, r); ok {
		s.taskCancel(w, r, t.ID, false)
	}
}

// handleWorkflowTerminate ends the latest run of a workflow id at once:
// POST /v1/workflows/{workflow_id}/terminate.
func (s *Server) handleWorkflowTerminate(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.workflowRun(w, r); ok {
		s.taskCancel(w, r, t.ID, true)
	}
}

// handleWorkflowSignal signals the latest run of a workflow id: POST
// /v1/workflows/{workflow_id}/signals/{name}; a run that ended is
// 409 signal_target_finished, as for a task.
func (s *Server) handleWorkflowSignal(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.workflowRun(w, r); ok {
		s.signal(w, r, t.ID, chi.URLParam(r, "name"))
	}
}

// handleWorkflowQuery queries the latest run of a workflow id: GET or
// POST /v1/workflows/{workflow_id}/queries/{name}.
func (s *Server) handleWorkflowQuery(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.workflowRun(w, r); ok {
		s.query(w, r, t.ID, chi.URLParam(r, "name"))
	}
}
