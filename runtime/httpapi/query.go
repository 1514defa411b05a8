package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// handleTaskQuery answers a workflow's query: GET
// /v1/tasks/{id}/queries/{name}, with the input envelope as the JSON of
// the query parameter input, or POST with a client.QueryRequest body. It
// answers 200 with a client.QueryResult; the workflow's state does not
// change, so the route needs tasks:read only.
func (s *Server) handleTaskQuery(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, chi.URLParam(r, "id"), chi.URLParam(r, "name"))
}

// query answers the query name of task id, for handleTaskQuery and
// handleWorkflowQuery.
func (s *Server) query(w http.ResponseWriter, r *http.Request, id, name string) {
	var raw json.RawMessage
	if r.Method == http.MethodPost {
		body, err := readBody(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var q client.QueryRequest
		if len(body) > 0 {
			if err := decodeStrict(body, &q); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		raw = q.Input
	} else if v := r.URL.Query().Get("input"); v != "" {
		raw = json.RawMessage(v)
	}
	input, err := parseInput(raw, "input")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.tasks.TaskQuery(r.Context(), caller(r), id, name, input)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	env := envelopeOf(a.Output)
	s.writeJSON(w, http.StatusOK, client.QueryResult{
		Object: "query_result", TaskID: a.Task.ID, Name: name, Status: string(a.Task.Status),
		OutputEnvelope: env, Output: s.projection(env), OutputProjectionOmitted: s.projectionOmitted(env),
	})
}
