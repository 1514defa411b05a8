package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

func moduleDocOf(m *store.Module) *client.Module {
	d := &client.Module{
		Object:    "module",
		Name:      m.Name,
		Version:   m.Version,
		Digest:    m.Digest,
		Size:      m.Size,
		Functions: make([]client.Function, 0, len(m.Functions)),
		CreatedAt: m.CreatedAt.UTC(),
	}
	for _, f := range m.Functions {
		d.Functions = append(d.Functions, client.Function{Name: f.Name, Kind: string(f.Kind)})
	}
	return d
}

// handleModulePut deploys a module: PUT /v1/modules/{name} with the wasm
// bytes as the body (any Content-Type) answers 201 with the module. With
// ?check_replay=true it first replays the journals of the module's running
// workflows against the new version and answers 409 replay_divergence,
// deploying nothing, when any would diverge.
func (s *Server) handleModulePut(w http.ResponseWriter, r *http.Request) {
	check := false
	if v := r.URL.Query().Get("check_replay"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.writeError(w, r, &fault.Error{Code: fault.Invalid, Param: "check_replay", Message: "check_replay must be true or false"})
			return
		}
		check = b
	}
	wasm, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	deploy := s.modules.Deploy
	if check {
		deploy = s.modules.DeployCheckReplay
	}
	// The same bytes as the latest version deploy nothing new: 200 and
	// unchanged, instead of 201 and a new version.
	prev, _ := s.modules.Get(r.Context(), name)
	m, err := deploy(r.Context(), name, wasm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/modules/"+m.Name)
	doc := moduleDocOf(m)
	if prev != nil && prev.Digest == m.Digest && prev.Version == m.Version {
		doc.Unchanged = true
		s.writeJSON(w, http.StatusOK, doc)
		return
	}
	s.writeJSON(w, http.StatusCreated, doc)
}

// handleModuleList lists the deployed modules: GET /v1/modules.
func (s *Server) handleModuleList(w http.ResponseWriter, r *http.Request) {
	mods, err := s.modules.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeKeyedPage(s, w, r, mods, func(m *store.Module) string { return m.Name }, func(m *store.Module) any { return moduleDocOf(m) })
}

// handleModuleGet returns one module: GET /v1/modules/{name}.
func (s *Server) handleModuleGet(w http.ResponseWriter, r *http.Request) {
	m, err := s.modules.Get(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, moduleDocOf(m))
}

// handleModuleDelete removes a module: DELETE /v1/modules/{name} answers 204.
func (s *Server) handleModuleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.modules.Delete(r.Context(), chi.URLParam(r, "name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
