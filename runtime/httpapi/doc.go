// Package httpapi is the HTTP JSON API of weft (BRIEF §3.3) over the
// durable-execution engine of package runtime and the access control of
// package runtime/access: modules, tasks, their events as JSON pages or
// server-sent events, responses, pairing and clients, plus /healthz,
// /readyz and /metrics.
//
// # Errors
//
// A failed request answers {"error":{"type","code","message","param"}}. The
// code is a fault.Code; one table (statusByCode) maps it to the HTTP status,
// and the status gives the type: invalid_request_error (400, 404, 405, 409,
// 413, 422), authentication_error (401), permission_error (403),
// rate_limit_error (429), server_error (5xx, whose message never shows
// internals).
//
// # Authentication
//
// Every /v1 route but POST /v1/pair needs Authorization: Bearer <token>, and
// each route needs a scope (admin holds all of them). The routes declare
// their scope in one table, and one middleware authenticates the request
// through the AuthService, on every request, and checks that scope, before
// anything else runs: this is the only place scopes are checked. The engine
// is then told whose tasks the caller may see (runtime.Caller: its own, or
// every client's for an admin); another client's task is 404, never 403.
//
// # Idempotency
//
// Creating requests (PUT /v1/modules/{name}, POST /v1/tasks, POST
// /v1/responses, POST /v1/tasks/{id}/signals/{name}, POST /v1/pairings)
// honour the Idempotency-Key header per client (api-conventions §5).
//
// # Usage
//
//	srv, err := httpapi.New(httpapi.Config{
//		Engine: engine, Modules: engine.Modules(), Access: acc, Logger: logger, Metrics: registry,
//	})
//	if err != nil {
//		return err
//	}
//	hs := &http.Server{Addr: addr, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
//
// Config.Engine fills every service of the engine (TaskService,
// EventService, ResponseService, ReadinessService) and Config.Access every
// service of access control (AuthService, ClientService,
// IdempotencyService) not set on its own; one *runtime.Engine and one
// *access.Service provide them all. The ModuleService is the engine's
// module registry, *modules.Registry (Engine.Modules), set as
// Config.Modules.
//
// The full reference, with curl examples, is docs/http-api.md.
package httpapi
