package httpapi

import (
	"math"
	"net/http"
	"strconv"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Codes that only the HTTP layer produces. They share fault.Code so that
// every error body is built the same way.
const (
	codeMethodNotAllowed fault.Code = "method_not_allowed"
	codeNotReady         fault.Code = "not_ready"
	// codeSecretNotReplayed: the replay of an answer that carried a
	// secret, which is never stored.
	codeSecretNotReplayed fault.Code = "idempotency_secret_not_replayed"
	// codeServerBusy: too many bytes of large reads are in flight.
	codeServerBusy fault.Code = "server_busy"
)

// statusByCode is the one table from error code to HTTP status (house style
// rule 10: the mapping lives only here). A code missing from the table is a
// server error (500).
//
// Payload codes (Avro Value protocol: error codes) split in three: an input
// that is not an envelope at all (not an object, a missing or non-string
// blob, an extra member) makes the request itself malformed (400); a
// well-formed envelope whose codec, base64, frame or value breaks a rule of
// the protocol is understood but cannot be processed (422); a value past the
// size or depth limit is too large (413).
var statusByCode = map[fault.Code]int{
	fault.Invalid:                http.StatusBadRequest,
	fault.NotFound:               http.StatusNotFound,
	fault.ModuleNotFound:         http.StatusNotFound,
	fault.FunctionNotFound:       http.StatusNotFound,
	fault.Conflict:               http.StatusConflict,
	fault.TaskNotFinished:        http.StatusConflict,
	fault.SignalTargetFinished:   http.StatusConflict,
	fault.ReplayDivergence:       http.StatusConflict,
	fault.IdempotencyKeyInFlight: http.StatusConflict,
	fault.IdempotencyKeyReused:   http.StatusUnprocessableEntity,
	fault.ModuleInvalid:          http.StatusUnprocessableEntity,
	fault.PayloadTooLarge:        http.StatusRequestEntityTooLarge,
	fault.MissingCredential:      http.StatusUnauthorized,
	fault.InvalidCredential:      http.StatusUnauthorized,
	fault.InsufficientScope:      http.StatusForbidden,
	fault.RateLimited:            http.StatusTooManyRequests,
	fault.PairingExpired:         http.StatusBadRequest,
	fault.PairingUsed:            http.StatusConflict,
	fault.Unavailable:            http.StatusServiceUnavailable,
	fault.ServerRestarted:        http.StatusServiceUnavailable,
	fault.Cancelled:              http.StatusServiceUnavailable,
	fault.Timeout:                http.StatusGatewayTimeout,
	fault.Internal:               http.StatusInternalServerError,

	fault.Code(codec.CodeInvalidPayloadEnvelope):   http.StatusBadRequest,
	fault.Code(codec.CodeInvalidProjection):        http.StatusBadRequest,
	fault.Code(codec.CodeUnsupportedPayloadCodec):  http.StatusUnprocessableEntity,
	fault.Code(codec.CodeUnsupportedPayloadSchema): http.StatusUnprocessableEntity,
	fault.Code(codec.CodeInvalidPayloadFraming):    http.StatusUnprocessableEntity,
	fault.Code(codec.CodeInvalidMapKey):            http.StatusUnprocessableEntity,
	fault.Code(codec.CodeIntegerOverflow):          http.StatusUnprocessableEntity,
	fault.Code(codec.CodeNonFiniteFloat):           http.StatusUnprocessableEntity,
	fault.Code(codec.CodePayloadLimit):             http.StatusRequestEntityTooLarge,

	codeMethodNotAllowed:  http.StatusMethodNotAllowed,
	codeNotReady:          http.StatusServiceUnavailable,
	codeSecretNotReplayed: http.StatusConflict,

	fault.MemoryLimitTooHigh:  http.StatusUnprocessableEntity,
	fault.SignalLimitExceeded: http.StatusTooManyRequests,

	fault.WorkflowIDInUse:        http.StatusConflict,
	fault.WorkflowIDReuseRefused: http.StatusConflict,

	fault.QueryNotSupported:  http.StatusConflict,
	fault.QueryNotFound:      http.StatusNotFound,
	fault.QueryCommand:       http.StatusConflict,
	fault.QueryFailed:        http.StatusUnprocessableEntity,
	fault.QueryLimitExceeded: http.StatusTooManyRequests,
	fault.Nondeterminism:     http.StatusConflict,
	codeServerBusy:           http.StatusServiceUnavailable,

	fault.ScheduleExists:        http.StatusConflict,
	fault.ScheduleLimitExceeded: http.StatusConflict,
	fault.ScheduleOverlap:       http.StatusConflict,
}

// statusOf returns the HTTP status for an error code.
func statusOf(code fault.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorType returns the error-body type for an HTTP status, following the
// Responses convention (api-conventions §4).
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// errorf returns a runtime error with a code, a parameter name and a message.
func errorf(code fault.Code, param, format string, args ...any) error {
	e := fault.Errorf(code, format, args...)
	e.Param = param
	return e
}

// withParam names param as the culprit of err unless err names one already.
func withParam(err error, param string) error {
	if err == nil || fault.Param(err) != "" {
		return err
	}
	return &fault.Error{Code: fault.CodeOf(err), Message: fault.Message(err), Param: param, Err: err}
}

// renameParam renames the param of err from the engine's name to the
// request's name.
func renameParam(err error, from, to string) error {
	if fault.Param(err) != from {
		return err
	}
	return &fault.Error{Code: fault.CodeOf(err), Message: fault.Message(err), Param: to, Err: err}
}

// writeError writes err as a JSON error body with the status the table gives
// its code. Server errors are logged here, once, and their message never
// shows internals.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := fault.CodeOf(err)
	status := statusOf(code)
	msg := fault.Message(err)
	if status >= 500 {
		if r.Context().Err() != nil {
			s.log.Debug("request abandoned", "method", r.Method, "path", r.URL.Path, "error", err)
		} else {
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", string(code), "error", err)
		}
		if code == fault.Internal || msg == "" {
			msg = http.StatusText(status)
		}
	}
	body := client.ErrorBody{Error: &client.Error{Type: errorType(status), Code: string(code), Message: msg, Param: fault.Param(err)}}
	switch code {
	case fault.MissingCredential:
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
	case fault.InvalidCredential:
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft", error="invalid_token"`)
	case fault.InsufficientScope:
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft", error="insufficient_scope"`)
	case fault.SignalLimitExceeded, codeServerBusy:
		w.Header().Set("Retry-After", "1")
	}
	if wait := fault.RetryAfterOf(err); wait > 0 || status == http.StatusTooManyRequests || code == fault.IdempotencyKeyInFlight {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(max(math.Ceil(wait.Seconds()), 1)), 10))
	}
	s.writeJSON(w, status, body)
}
