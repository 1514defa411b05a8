package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

func (s *Server) responseDoc(resp *store.Response) *client.Response {
	d := &client.Response{
		ID:             resp.ID,
		Object:         store.ResponseObject,
		TaskID:         resp.TaskID,
		Status:         string(resp.Status),
		OutputEnvelope: envelopeOf(resp.Output),
		Error:          s.errorDoc(resp.Error),
		CreatedAt:      resp.CreatedAt.UTC(),
		FinishedAt:     timeOrNil(resp.FinishedAt),
	}
	d.Output = s.projection(d.OutputEnvelope)
	d.OutputProjectionOmitted = s.projectionOmitted(d.OutputEnvelope)
	return d
}

// handleResponseCreate runs a task to its end: POST /v1/responses (the body
// of POST /v1/tasks) creates the task durably, waits for its terminal state
// and answers 200 with the response. A task that fails is still a 200 whose
// status is failed; only a request that cannot be served is an error.
//
// When the client goes away the task goes on. Under an Idempotency-Key the
// handler goes on waiting too, so that the key stores the real response and
// a retry with the key gets it (409 until then) instead of starting a second
// task; it stops when the engine stops. The key is bound to the task in the
// transaction that creates it, so a retry after a crash waits for the same
// task and answers its response.
func (s *Server) handleResponseCreate(w http.ResponseWriter, r *http.Request) {
	p, err := s.decodeTaskRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var resp *store.Response
	if held := heldIdempotencyKey(r); held == nil {
		resp, err = s.tasks.TaskRun(ctx, p)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = s.detach(ctx)
		defer cancel()
		if held.taskID != "" {
			// The first request with this key committed its task and
			// died with the daemon: answer for that task.
			resp, err = s.tasks.TaskWait(ctx, caller(r), held.taskID)
		} else {
			p.IdempotencyKey = held.key
			resp, err = s.tasks.TaskRun(ctx, p)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeResponse(w, r, http.StatusOK, resp)
}

// engineCheckInterval is how often a detached wait checks that the engine
// still runs.
const engineCheckInterval = 250 * time.Millisecond

// detach returns a context that outlives the client's cancellation of ctx
// but ends when the engine stops (or cancel is called).
func (s *Server) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	detached, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		select {
		case <-detached.Done():
			return
		case <-ctx.Done():
		}
		tick := time.NewTicker(engineCheckInterval)
		defer tick.Stop()
		for {
			select {
			case <-detached.Done():
				return
			case <-tick.C:
				if !s.readiness.Ready() {
					cancel()
					return
				}
			}
		}
	}()
	return detached, cancel
}

// handleResponseGet returns a stored response: GET /v1/responses/{id}.
func (s *Server) handleResponseGet(w http.ResponseWriter, r *http.Request) {
	resp, err := s.responses.ResponseGet(r.Context(), caller(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeResponse(w, r, http.StatusOK, resp)
}
