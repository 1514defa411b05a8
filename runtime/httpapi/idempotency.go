package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/access"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// idempotent makes a creating route honour the Idempotency-Key header
// (api-conventions §5, BRIEF §3.3). Keys are per client. The first request
// with a key runs the handler, and its status and body are stored; the same
// key with the same request (method, path and canonical body: see
// requestDigest) replays them with Idempotent-Replayed: true; the same key with
// another request is 422 idempotency_key_reused; the same key while the first
// is still running is 409 idempotency_key_in_flight with Retry-After. A 5xx
// answer or a panic releases the key, so the request can be retried, unless
// the request committed a task under it. Requests without the header run as
// usual.
//
// Handlers that create a task store their answer with the task, in one
// transaction (see heldKey), so that no crash leaves a task behind a key
// that recovery frees. An answer that carries a secret is never stored: its
// key keeps a 409 idempotency_secret_not_replayed instead (see
// heldKey.secret).
//
// location, when not nil, recomputes the Location header of a replayed
// answer from the request and the stored body.
func (s *Server) idempotent(location func(r *http.Request, status int, body []byte) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			values := r.Header.Values("Idempotency-Key")
			if len(values) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			key, err := parseIdempotencyKey(values)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			body, err := readBody(r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			who := principal(r)
			digest := requestDigest(r.Method, r.URL.EscapedPath(), body)
			replay, err := s.idempotency.IdempotencyBegin(r.Context(), who.ClientID, key, digest)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if replay != nil && replay.TaskID == "" {
				h := w.Header()
				h.Set("Idempotent-Replayed", "true")
				h.Set("Content-Type", "application/json")
				h.Set("Cache-Control", "no-store")
				if location != nil {
					if loc := location(r, replay.StatusCode, replay.Body); loc != "" {
						h.Set("Location", loc)
					}
				}
				w.WriteHeader(replay.StatusCode)
				_, _ = w.Write(replay.Body)
				return
			}

			// From here the key is ours until completed or released. Storing
			// must not depend on the client still being connected.
			ctx := context.WithoutCancel(r.Context())
			held := &heldKey{key: key}
			if replay != nil {
				held.taskID = replay.TaskID
				w.Header().Set("Idempotent-Replayed", "true")
			}
			rec := &captureWriter{ResponseWriter: w}
			done := false
			defer func() {
				if done {
					return
				}
				if err := s.idempotency.IdempotencyRelease(ctx, who.ClientID, key); err != nil {
					s.log.Error("release idempotency key", "client_id", who.ClientID, "error", err)
				}
			}()
			r.Body = http.NoBody
			if len(body) > 0 {
				r.Body = readCloser{bytes.NewReader(body)}
			}
			r = r.WithContext(context.WithValue(r.Context(), heldKeyKey{}, held))
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK // nothing written: net/http sends 200
			}
			if rec.status >= 500 {
				return // released by the deferred call
			}
			done = true
			if held.stored {
				// Completed with the task or the signal, in its transaction.
				s.idempotency.IdempotencyCompleted(who.ClientID, key)
				return
			}
			status, answer := rec.status, rec.body.Bytes()
			if held.secret {
				status, answer = secretNotReplayed()
			}
			if err := s.idempotency.IdempotencyComplete(ctx, who.ClientID, key, status, answer); err != nil {
				s.log.Error("complete idempotency key", "client_id", who.ClientID, "error", err)
			}
		})
	}
}

// heldKey is the idempotency key a request holds, as its handler sees it.
type heldKey struct {
	// key is the Idempotency-Key.
	key string
	// taskID is the task an earlier request committed under the key before
	// a crash: the handler answers for it instead of creating one.
	taskID string
	// stored is set by a handler that stored its answer with the key
	// itself, in the transaction that created its task.
	stored bool
	// secret is set by a handler whose answer carries a secret (a pairing
	// code): the answer is not stored, and the key replays
	// idempotency_secret_not_replayed.
	secret bool
}

// heldKeyKey is the context key of a request's *heldKey.
type heldKeyKey struct{}

// heldIdempotencyKey returns the idempotency key r holds, nil if none.
func heldIdempotencyKey(r *http.Request) *heldKey {
	held, _ := r.Context().Value(heldKeyKey{}).(*heldKey)
	return held
}

// secretNotReplayed is the answer stored for a key whose first answer
// carried a secret.
func secretNotReplayed() (int, []byte) {
	msg := "the first answer to this request carried a secret, which is shown once and not stored; " +
		"send a new request with a new Idempotency-Key"
	body, err := encodeJSON(client.ErrorBody{Error: &client.Error{
		Type: errorType(statusOf(codeSecretNotReplayed)), Code: string(codeSecretNotReplayed), Message: msg, Param: "Idempotency-Key",
	}})
	if err != nil {
		panic(err) // a fixed document
	}
	return statusOf(codeSecretNotReplayed), body
}

// readCloser gives a reader a no-op Close.
type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// parseIdempotencyKey validates the Idempotency-Key header: one value, 1 to
// 255 visible ASCII characters, optionally written as a quoted structured
// field string (draft-ietf-httpapi-idempotency-key-header).
func parseIdempotencyKey(values []string) (string, error) {
	if len(values) > 1 {
		return "", errorf(fault.Invalid, "Idempotency-Key", "send one Idempotency-Key header, not %d", len(values))
	}
	key := strings.TrimSpace(values[0])
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if key == "" || len(key) > access.MaxIdempotencyKeyLen {
		return "", errorf(fault.Invalid, "Idempotency-Key", "Idempotency-Key must be 1 to %d characters", access.MaxIdempotencyKeyLen)
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "", errorf(fault.Invalid, "Idempotency-Key", "Idempotency-Key must be visible ASCII characters")
		}
	}
	return key, nil
}

// requestDigest is the idempotency fingerprint of a request: SHA-256 over the
// method, the path and the canonical body. A JSON body is
// canonicalised (members sorted, insignificant whitespace dropped, numbers
// kept as written), so formatting and member order do not matter; any other
// body (a wasm module, or JSON that names a member twice) counts byte for
// byte.
func requestDigest(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(canonicalBody(body))
	return h.Sum(nil)
}

// canonicalBody returns the canonical JSON form of body, or body itself when
// it is not JSON.
func canonicalBody(body []byte) []byte {
	if !json.Valid(body) || checkMemberNames(body, nil) != nil {
		return body // not JSON, or a member named twice: byte for byte
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body
	}
	out, err := json.Marshal(v) // map members come out sorted
	if err != nil {
		return body
	}
	return out
}

// captureWriter writes through to the client and keeps a copy of the status
// and body for the idempotency record.
type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *captureWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the underlying writer (http.ResponseController).
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// taskLocation is the Location of a replayed 202 from POST /v1/tasks.
func taskLocation(_ *http.Request, status int, body []byte) string {
	if status != http.StatusAccepted {
		return ""
	}
	var doc struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.ID == "" {
		return ""
	}
	return "/v1/tasks/" + doc.ID
}

// moduleLocation is the Location of a replayed 201 from PUT /v1/modules/{name}.
func moduleLocation(r *http.Request, status int, _ []byte) string {
	if status != http.StatusCreated {
		return ""
	}
	return "/v1/modules/" + chi.URLParam(r, "name")
}

// scheduleLocation is the Location of a replayed 201 from POST
// /v1/schedules.
func scheduleLocation(_ *http.Request, status int, body []byte) string {
	if status != http.StatusCreated {
		return ""
	}
	var doc struct {
		ID string `json:"schedule_id"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.ID == "" {
		return ""
	}
	return "/v1/schedules/" + doc.ID
}

// triggerLocation is the Location of a replayed 202 from POST
// /v1/schedules/{id}/trigger: its task's.
func triggerLocation(_ *http.Request, status int, body []byte) string {
	if status != http.StatusAccepted {
		return ""
	}
	var doc struct {
		Task *struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Task == nil || doc.Task.ID == "" {
		return ""
	}
	return "/v1/tasks/" + doc.Task.ID
}
