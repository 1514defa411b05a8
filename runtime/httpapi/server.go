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

	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
)

// Defaults of Config.
const (
	DefaultMaxJSONBody   = 4 << 20
	DefaultMaxModuleBody = 64 << 20
	DefaultKeepAlive     = 15 * time.Second
)

// Config configures a Server. Every service must be set, on its own or
// through Engine and Access; the zero value of every other field means its
// default.
type Config struct {
	// Engine, when set, fills every service of the engine below that is
	// nil (Readiness, Tasks, Events, Responses): one *runtime.Engine
	// serves them all.
	Engine Engine
	// Access, when set, fills every service of access control below that
	// is nil (Auth, Clients, Idempotency): one *access.Service serves them
	// all.
	Access Access

	// Readiness answers GET /readyz and tells POST /v1/responses whether
	// the engine stopped.
	Readiness ReadinessService
	// Auth authenticates the bearer token of every authenticated route.
	Auth AuthService
	// Modules serves /v1/modules: the engine's module registry,
	// runtime.Engine.Modules. Engine does not fill it.
	Modules ModuleService
	// Tasks serves /v1/tasks and runs the tasks of POST /v1/responses.
	Tasks TaskService
	// Events serves /v1/tasks/{id}/events.
	Events EventService
	// Schedules serves /v1/schedules. Defaults to Engine when it is one
	// (runtime.Engine is); without either, the schedule routes answer 503
	// unavailable.
	Schedules ScheduleService
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

	// Host is the engine's host id, shown by GET /readyz ("host") so
	// that the hosts of a shared store can be told apart. Defaults to
	// none (no "host" member).
	Host string
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
	schedules   ScheduleService
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
// a service is neither set nor filled by cfg.Engine or cfg.Access, or the
// HTTP metrics cannot be registered.
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
		readiness: cfg.Readiness, auth: cfg.Auth, modules: cfg.Modules, tasks: cfg.Tasks, schedules: cfg.Schedules,
		events: cfg.Events, responses: cfg.Responses, clients: cfg.Clients, idempotency: cfg.Idempotency,
	}
	s.mux = s.routes()
	s.handler = s.mux
	return s, nil
}

// fillServices sets every nil service to cfg.Engine or cfg.Access and
// names the first service still missing.
func (cfg *Config) fillServices() error {
	if e := cfg.Engine; e != nil {
		if cfg.Readiness == nil {
			cfg.Readiness = e
		}
		if cfg.Tasks == nil {
			cfg.Tasks = e
		}
		if cfg.Events == nil {
			cfg.Events = e
		}
		if ss, ok := e.(ScheduleService); ok && cfg.Schedules == nil {
			cfg.Schedules = ss
		}
		if cfg.Responses == nil {
			cfg.Responses = e
		}
	}
	if cfg.Schedules == nil {
		cfg.Schedules = noSchedules{}
	}
	if a := cfg.Access; a != nil {
		if cfg.Auth == nil {
			cfg.Auth = a
		}
		if cfg.Clients == nil {
			cfg.Clients = a
		}
		if cfg.Idempotency == nil {
			cfg.Idempotency = a
		}
	}
	for _, s := range []struct {
		name, filler string
		set          bool
	}{
		{"Readiness", "engine", cfg.Readiness != nil},
		{"Auth", "access", cfg.Auth != nil},
		{"Modules", "module registry", cfg.Modules != nil},
		{"Tasks", "engine", cfg.Tasks != nil},
		{"Events", "engine", cfg.Events != nil},
		{"Responses", "engine", cfg.Responses != nil},
		{"Clients", "access", cfg.Clients != nil},
		{"Idempotency", "access", cfg.Idempotency != nil},
	} {
		if !s.set {
			return fmt.Errorf("new http server: no %s service and no %s", s.name, s.filler)
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
	scopeAdmin        = access.ScopeAdmin
	scopeModulesRead  = access.ScopeModulesRead
	scopeModulesWrite = access.ScopeModulesWrite
	scopeTasksRead    = access.ScopeTasksRead
	scopeTasksWrite   = access.ScopeTasksWrite
	// noCredential is the "scope" of a route that takes no credential.
	noCredential = ""
)

// route is one route of the API under /v1.
type route struct {
	// method and pattern (chi syntax, /v1 included) match the request.
	method, pattern string
	// scope is what the caller needs: the route authenticates the request
	// and checks it before anything else (see authorize). noCredential
	// routes do neither.
	scope string
	// use is the route's middleware, in order, after the scope check.
	use []func(http.Handler) http.Handler
	// handle answers the request.
	handle http.HandlerFunc
}

// routeTable lists every route under /v1 with the scope it needs: the one
// place where scopes are checked.
func (s *Server) routeTable() []route {
	jsonBody := s.limitBody(s.cfg.MaxJSONBody)
	with := func(mw ...func(http.Handler) http.Handler) []func(http.Handler) http.Handler { return mw }
	return []route{
		{http.MethodPost, "/v1/pair", noCredential, with(jsonBody), s.handlePair},

		{http.MethodPut, "/v1/modules/{name}", scopeModulesWrite, with(s.limitBody(s.cfg.MaxModuleBody), s.idempotent(moduleLocation)), s.handleModulePut},
		{http.MethodGet, "/v1/modules", scopeModulesRead, nil, s.handleModuleList},
		{http.MethodGet, "/v1/modules/{name}", scopeModulesRead, nil, s.handleModuleGet},
		{http.MethodDelete, "/v1/modules/{name}", scopeModulesWrite, nil, s.handleModuleDelete},

		{http.MethodPost, "/v1/tasks", scopeTasksWrite, with(jsonBody, s.idempotent(taskLocation)), s.handleTaskCreate},
		{http.MethodGet, "/v1/tasks", scopeTasksRead, nil, s.handleTaskList},
		{http.MethodGet, "/v1/tasks/{id}", scopeTasksRead, nil, s.handleTaskGet},
		{http.MethodPost, "/v1/tasks/{id}/cancel", scopeTasksWrite, with(jsonBody), s.handleTaskCancel},
		{http.MethodPost, "/v1/tasks/{id}/terminate", scopeTasksWrite, with(jsonBody), s.handleTaskTerminate},
		{http.MethodPost, "/v1/tasks/{id}/signals/{name}", scopeTasksWrite, with(jsonBody, s.idempotent(nil)), s.handleTaskSignal},
		{http.MethodGet, "/v1/tasks/{id}/events", scopeTasksRead, nil, s.handleEventList},
		{http.MethodGet, "/v1/tasks/{id}/queries/{name}", scopeTasksRead, nil, s.handleTaskQuery},
		{http.MethodPost, "/v1/tasks/{id}/queries/{name}", scopeTasksRead, with(jsonBody), s.handleTaskQuery},

		{http.MethodPost, "/v1/schedules", scopeTasksWrite, with(jsonBody, s.idempotent(scheduleLocation)), s.handleScheduleCreate},
		{http.MethodGet, "/v1/schedules", scopeTasksRead, nil, s.handleScheduleList},
		{http.MethodGet, "/v1/schedules/{id}", scopeTasksRead, nil, s.handleScheduleGet},
		{http.MethodDelete, "/v1/schedules/{id}", scopeTasksWrite, nil, s.handleScheduleDelete},
		{http.MethodPost, "/v1/schedules/{id}/pause", scopeTasksWrite, with(jsonBody), s.handleSchedulePause},
		{http.MethodPost, "/v1/schedules/{id}/resume", scopeTasksWrite, with(jsonBody), s.handleScheduleResume},
		{http.MethodPost, "/v1/schedules/{id}/trigger", scopeTasksWrite, with(jsonBody, s.idempotent(triggerLocation)), s.handleScheduleTrigger},

		{http.MethodGet, "/v1/workflows/{workflow_id}", scopeTasksRead, nil, s.handleWorkflowGet},
		{http.MethodPost, "/v1/workflows/{workflow_id}/cancel", scopeTasksWrite, with(jsonBody), s.handleWorkflowCancel},
		{http.MethodPost, "/v1/workflows/{workflow_id}/terminate", scopeTasksWrite, with(jsonBody), s.handleWorkflowTerminate},
		{http.MethodPost, "/v1/workflows/{workflow_id}/signals/{name}", scopeTasksWrite, with(jsonBody, s.idempotent(nil)), s.handleWorkflowSignal},
		{http.MethodGet, "/v1/workflows/{workflow_id}/queries/{name}", scopeTasksRead, nil, s.handleWorkflowQuery},
		{http.MethodPost, "/v1/workflows/{workflow_id}/queries/{name}", scopeTasksRead, with(jsonBody), s.handleWorkflowQuery},

		{http.MethodPost, "/v1/responses", scopeTasksWrite, with(jsonBody, s.idempotent(nil)), s.handleResponseCreate},
		{http.MethodGet, "/v1/responses/{id}", scopeTasksRead, nil, s.handleResponseGet},

		{http.MethodPost, "/v1/pairings", scopeAdmin, with(jsonBody, s.idempotent(nil)), s.handlePairingCreate},
		{http.MethodGet, "/v1/clients", scopeAdmin, nil, s.handleClientList},
		{http.MethodGet, "/v1/clients/{id}", scopeAdmin, nil, s.handleClientGet},
		{http.MethodDelete, "/v1/clients/{id}", scopeAdmin, nil, s.handleClientDelete},
		{http.MethodPatch, "/v1/clients/{id}", scopeAdmin, with(jsonBody), s.handleClientUpdate},
	}
}

// routes lists every route of the API with its middleware.
func (s *Server) routes() *chi.Mux {
	r := chi.NewRouter()
	r.Use(s.instrument, s.recoverPanic)
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))

	r.Route("/v1", func(r chi.Router) {
		for _, rt := range s.routeTable() {
			h := http.Handler(rt.handle)
			for i := len(rt.use) - 1; i >= 0; i-- {
				h = rt.use[i](h)
			}
			if rt.scope != noCredential {
				h = s.authorize(rt.scope)(h)
			}
			r.Method(rt.method, strings.TrimPrefix(rt.pattern, "/v1"), h)
		}
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
	body := map[string]string{"status": "ready"}
	if s.cfg.Host != "" {
		body["host"] = s.cfg.Host
	}
	s.writeJSON(w, http.StatusOK, body)
}
