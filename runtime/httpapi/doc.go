// Package httpapi is the HTTP JSON API of weft (BRIEF §3.3) over the
// durable-execution engine of package runtime: modules, tasks, their events
// as JSON pages or server-sent events, responses, pairing and clients, plus
// /healthz, /readyz and /metrics.
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
// each route needs a scope (admin holds all of them). Another client's task
// is 404, never 403.
//
// # Idempotency
//
// Creating requests (PUT /v1/modules/{name}, POST /v1/tasks, POST
// /v1/responses, POST /v1/tasks/{id}/signals/{name}, POST /v1/pairings)
// honour the Idempotency-Key header per client (api-conventions §5).
//
// # Usage
//
//	srv, err := httpapi.New(httpapi.Config{Engine: engine, Logger: logger, Metrics: registry})
//	if err != nil {
//		return err
//	}
//	hs := &http.Server{Addr: addr, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
//
// Config.Engine fills every service (ModuleService, TaskService,
// EventService, ResponseService, ClientService, AuthService,
// IdempotencyService, ReadinessService) not set on its own; one
// *runtime.Engine provides them all.
//
// The full reference, with curl examples, is docs/http-api.md.
package httpapi
