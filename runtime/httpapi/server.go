package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/fault"
)

// Defaults of Config.
const (
	DefaultMaxJSONBody   = 4 << 20
	DefaultMaxModuleBody = 64 << 20
	DefaultKeepAlive     = 15 * time.Second
)

// Config configures a Server. Every service must be set, on its own or
// through Engine; the zero value of every other field means its default.
type Config struct {
	// Engine, when set, fills every service below that is nil: one
	// *runtime.Engine serves the whole API.
	Engine Engine

	// Readiness answers GET /readyz and tells POST /v1/responses whether
	// the engine stopped.
	Readiness ReadinessService
	// Auth authenticates the bearer token of every authenticated route.
	Auth AuthService
	// Modules serves /v1/modules.
	Modules ModuleService
	// Tasks serves /v1/tasks and runs the tasks of POST /v1/responses.
	Tasks TaskService
	// Events serves /v1/tasks/{id}/events.
	Events EventService
	// Responses serves GET /v1/responses/{id}.
	Responses ResponseService
	// Clients serves /v1/pairings, /v1/pair and /v1/clients.
	Clients ClientService
	// Idempotency holds the Idempotency-Key of mutating requests.
	Idempotency IdempotencyService

	// Logger receives request failures (5xx) and debug traces of every
	// request. Defaults to a null logger.
	Logger hclog.Logger

	// MaxJSONBody bounds JSON request bodies; a larger body is answered 413
	// payload_too_large. Defaults to 4 MiB.
	MaxJSONBody int64

	// MaxModuleBody bounds the wasm body of PUT /v1/modules/{name}.
	// Defaults to 64 MiB.
	MaxModuleBody int64

	// Metrics is the registry served on GET /metrics. The server registers
	// its own HTTP request metrics in it; the engine's metrics appear when
	// the engine registers in the same registry. Defaults to a new registry.
	Metrics *prometheus.Registry

	// KeepAlive is the interval of keep-alive comments on an idle SSE
	// stream. Defaults to 15 seconds.
	KeepAlive time.Duration

	// MaxPageBytes ends a list page early, with a cursor, once its encoded
	// size passes it. Defaults to 4 MiB.
	MaxPageBytes int64
	// MaxProjectionBytes is the largest stored payload shown with its
	// typed projection; a larger one shows its envelope only. Defaults to
	// 1 MiB.
	MaxProjectionBytes int64
	// MaxReadBytes bounds the stored bytes of payloads that single reads
	// write out at once; ReadWait is how long a read waits for room before
	// it is answered 503 server_busy. Default 64 MiB and 2 seconds.
	MaxReadBytes int64
	ReadWait     time.Duration
}

// Server is the HTTP JSON API of weft (BRIEF §3.3) over the engine's
// services. It is safe for concurrent use; create it with New and serve
// Handler.
type Server struct {
	cfg         Config
	log         hclog.Logger
	readiness   ReadinessService
	auth        AuthService
	modules     ModuleService
	tasks       TaskService
	events      EventService
	responses   ResponseService
	clients     ClientService
	idempotency IdempotencyService
	metrics     *httpMetrics
	mux         *chi.Mux
	handler     http.Handler
	// streamsDone is closed by CloseStreams: every SSE stream ends.
	streamsDone chan struct{}
	closeOnce   sync.Once
	reads       *readGate
}

// New validates cfg, fills in its defaults and returns a Server. It fails when
// a service is neither set nor filled by cfg.Engine, or the HTTP metrics
// cannot be registered.
func New(cfg Config) (*Server, error) {
	if err := cfg.fillServices(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxJSONBody <= 0 {
		cfg.MaxJSONBody = DefaultMaxJSONBody
	}
	if cfg.MaxModuleBody <= 0 {
		cfg.MaxModuleBody = DefaultMaxModuleBody
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.MaxPageBytes <= 0 {
		cfg.MaxPageBytes = DefaultMaxPageBytes
	}
	if cfg.MaxProjectionBytes <= 0 {
		cfg.MaxProjectionBytes = DefaultMaxProjectionBytes
	}
	if cfg.MaxReadBytes <= 0 {
		cfg.MaxReadBytes = DefaultMaxReadBytes
	}
	if cfg.ReadWait <= 0 {
		cfg.ReadWait = DefaultReadWait
	}
	m, err := newHTTPMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger.Named("http"), metrics: m, streamsDone: make(chan struct{}),
		reads:     newReadGate(cfg.MaxReadBytes, cfg.ReadWait),
		readiness: cfg.Readiness, auth: cfg.Auth, modules: cfg.Modules, tasks: cfg.Tasks,
		events: cfg.Events, responses: cfg.Responses, clients: cfg.Clients, idempotency: cfg.Idempotency,
	}
	s.mux = s.routes()
	s.handler = s.mux
	return s, nil
}

// fillServices sets every nil service to cfg.Engine and names the first
// service still missing.
func (cfg *Config) fillServices() error {
	if e := cfg.Engine; e != nil {
		if cfg.Readiness == nil {
			cfg.Readiness = e
		}
		if cfg.Auth == nil {
			cfg.Auth = e
		}
		if cfg.Modules == nil {
			cfg.Modules = e
		}
		if cfg.Tasks == nil {
			cfg.Tasks = e
		}
		if cfg.Events == nil {
			cfg.Events = e
		}
		if cfg.Responses == nil {
			cfg.Responses = e
		}
		if cfg.Clients == nil {
			cfg.Clients = e
		}
		if cfg.Idempotency == nil {
			cfg.Idempotency = e
		}
	}
	for _, s := range []struct {
		name string
		set  bool
	}{
		{"Readiness", cfg.Readiness != nil},
		{"Auth", cfg.Auth != nil},
		{"Modules", cfg.Modules != nil},
		{"Tasks", cfg.Tasks != nil},
		{"Events", cfg.Events != nil},
		{"Responses", cfg.Responses != nil},
		{"Clients", cfg.Clients != nil},
		{"Idempotency", cfg.Idempotency != nil},
	} {
		if !s.set {
			return fmt.Errorf("new http server: no %s service and no engine", s.name)
		}
	}
	return nil
}

// Handler returns the http.Handler of the API. The caller owns the
// http.Server and its timeouts; recommended values are ReadHeaderTimeout 10s,
// ReadTimeout 5m (module uploads), IdleTimeout 2m and no WriteTimeout, since
// SSE streams and POST /v1/responses stay open as long as a task runs (an SSE
// stream clears its deadlines and sets its own per write). At shutdown, close
// the engine before or while shutting the http.Server down: requests waiting
// for a task end when the engine stops.
func (s *Server) Handler() http.Handler { return s.handler }

// CloseStreams ends every open SSE stream, and every stream opened later at
// once, so that a graceful shutdown need not wait for them: register it
// with http.Server.RegisterOnShutdown. A client resumes a stream with
// Last-Event-ID after the restart. It is safe to call more than once.
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() { close(s.streamsDone) })
}

// Scopes of the API (BRIEF §3.3). admin implies every other scope.
const (
	scopeAdmin        = runtime.ScopeAdmin
	scopeModulesRead  = runtime.ScopeModulesRead
	scopeModulesWrite = runtime.ScopeModulesWrite
	scopeTasksRead    = runtime.ScopeTasksRead
	scopeTasksWrite   = runtime.ScopeTasksWrite
)

// routes lists every route of the API with its middleware.
func (s *Server) routes() *chi.Mux {
	r := chi.NewRouter()
	r.Use(s.instrument, s.recoverPanic)
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))

	jsonBody := s.limitBody(s.cfg.MaxJSONBody)
	r.Route("/v1", func(r chi.Router) {
		r.With(jsonBody).Post("/pair", s.handlePair)

		r.Group(func(r chi.Router) {
			r.Use(s.authenticate)

			r.With(s.requireScope(scopeModulesWrite), s.limitBody(s.cfg.MaxModuleBody), s.idempotent(moduleLocation)).
				Put("/modules/{name}", s.handleModulePut)
			r.With(s.requireScope(scopeModulesRead)).Get("/modules", s.handleModuleList)
			r.With(s.requireScope(scopeModulesRead)).Get("/modules/{name}", s.handleModuleGet)
			r.With(s.requireScope(scopeModulesWrite)).Delete("/modules/{name}", s.handleModuleDelete)

			r.With(s.requireScope(scopeTasksWrite), jsonBody, s.idempotent(taskLocation)).Post("/tasks", s.handleTaskCreate)
			r.With(s.requireScope(scopeTasksRead)).Get("/tasks", s.handleTaskList)
			r.With(s.requireScope(scopeTasksRead)).Get("/tasks/{id}", s.handleTaskGet)
			r.With(s.requireScope(scopeTasksWrite), jsonBody).Post("/tasks/{id}/cancel", s.handleTaskCancel)
			r.With(s.requireScope(scopeTasksWrite), jsonBody, s.idempotent(nil)).
				Post("/tasks/{id}/signals/{name}", s.handleTaskSignal)
			r.With(s.requireScope(scopeTasksRead)).Get("/tasks/{id}/events", s.handleEventList)

			r.With(s.requireScope(scopeTasksWrite), jsonBody, s.idempotent(nil)).Post("/responses", s.handleResponseCreate)
			r.With(s.requireScope(scopeTasksRead)).Get("/responses/{id}", s.handleResponseGet)

			r.With(s.requireScope(scopeAdmin), jsonBody, s.idempotent(nil)).Post("/pairings", s.handlePairingCreate)
			r.With(s.requireScope(scopeAdmin)).Get("/clients", s.handleClientList)
			r.With(s.requireScope(scopeAdmin)).Get("/clients/{id}", s.handleClientGet)
			r.With(s.requireScope(scopeAdmin)).Delete("/clients/{id}", s.handleClientDelete)
			r.With(s.requireScope(scopeAdmin), jsonBody).Patch("/clients/{id}", s.handleClientUpdate)
		})
	})
	return r
}

// limitBody bounds the request body to n bytes (http.MaxBytesReader); reading
// past the bound fails and the request is answered 413.
func (s *Server) limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				s.writeError(w, r, errorf(fault.PayloadTooLarge, "", "request body exceeds the limit of %d bytes", n))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, errorf(fault.NotFound, "", "no route for %s %s", r.Method, r.URL.Path))
}

// handleMethodNotAllowed answers 405 with an Allow header that lists the
// methods of the route (RFC 9110 §15.5.6).
func (s *Server) handleMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowedMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	s.writeError(w, r, errorf(codeMethodNotAllowed, "", "method %s is not allowed on %s", methodLabel(r.Method), r.URL.Path))
}

// routeMethods are the methods the API's routes use, in Allow order.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

// allowedMethods returns the methods that have a route for r's path.
func (s *Server) allowedMethods(r *http.Request) []string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allow []string
	for _, m := range routeMethods {
		if s.mux.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	return allow
}

// handleHealthz answers 200 while the process serves HTTP at all.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 once the engine is open and accepts work, 503
// not_ready before, and while the store refuses the engine's writes.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if !s.readiness.Ready() {
		s.writeError(w, r, errorf(codeNotReady, "", "the engine is not open yet"))
		return
	}
	if err := s.readiness.StoreError(); err != nil {
		s.writeError(w, r, errorf(codeNotReady, "", "%s", err.Error()))
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
