package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

// sseWriteTimeout bounds each write to an SSE client: a client that stops
// reading is dropped instead of holding the stream forever.
const sseWriteTimeout = 30 * time.Second

func (s *Server) eventDoc(e *store.Event) (*client.Event, error) {
	d := &client.Event{
		Object:         "event",
		Type:           e.Type,
		SequenceNumber: e.Seq,
		TaskID:         e.TaskID,
		CreatedAt:      e.CreatedAt.UTC(),
		Data:           e.Payload,
	}
	if len(d.Data) == 0 {
		d.Data = json.RawMessage("{}")
	}
	if store.IsTerminalEvent(e.Type) {
		// The stored response holds envelopes only; show it as
		// GET /v1/responses/{id} does, with the projections.
		var resp store.Response
		if err := json.Unmarshal(e.Payload, &resp); err != nil {
			return nil, fmt.Errorf("decode terminal event payload: %w", err)
		}
		data, err := json.Marshal(s.responseDoc(&resp))
		if err != nil {
			return nil, fmt.Errorf("encode terminal event response: %w", err)
		}
		d.Data = data
	}
	return d, nil
}

// handleEventList serves GET /v1/tasks/{id}/events: a JSON page of the events
// after ?after=N (all of them without it), or, with Accept: text/event-stream,
// a live SSE stream (streamEvents).
func (s *Server) handleEventList(w http.ResponseWriter, r *http.Request) {
	after, err := eventCursor(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	if acceptsEventStream(r) {
		s.streamEvents(w, r, id, after)
		return
	}
	limit, err := pageSize(r.URL.Query().Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The events are read a few at a time, and the page ends early once
	// it passes MaxPageBytes: events carry payloads.
	page := s.newPage()
	for left := limit; ; {
		batch := min(left, eventBatch)
		events, err := s.events.EventList(r.Context(), caller(r), id, after, batch+1)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		more := len(events) > batch
		if more {
			events = events[:batch]
		}
		for i, e := range events {
			d, err := s.eventDoc(e)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			item, err := marshalHead(d)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			after = e.Seq
			left--
			if !page.add(item) {
				page.write(w, "", i < len(events)-1 || more)
				return
			}
		}
		if !more || left == 0 {
			page.write(w, "", more)
			return
		}
	}
}

// eventBatch is how many events a JSON page reads from the store at a
// time.
const eventBatch = 64

// eventCursor returns the sequence number after which events are wanted: the
// Last-Event-ID header (an EventSource reconnecting) wins over ?after=N; -1,
// meaning from the first event, when neither is given.
func eventCursor(r *http.Request) (int64, error) {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, errorf(fault.Invalid, "Last-Event-ID", "Last-Event-ID must be a sequence number")
		}
		return n, nil
	}
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return 0, errorf(fault.Invalid, "after", "after must be a sequence number")
		}
		return n, nil
	}
	return -1, nil
}

// acceptsEventStream reports whether the client asks for SSE.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// streamEvents streams a task's events as server-sent events (api-conventions
// §6): each event is written and flushed as soon as it commits, with
// "id: <sequence_number>", "event: <type>" and "data: <event JSON>"; an idle
// stream gets ": keep-alive" comments every KeepAlive; the stream ends after
// the terminal event, or at once when the server shuts down (CloseStreams). The client going away ends only the subscription, never
// the task.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, id string, after int64) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events, err := s.events.EventSubscribe(ctx, caller(r), id, after)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	// The stream lives as long as the task: no server-wide read deadline
	// may cut it (write deadlines are set per write below).
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.log.Debug("clear read deadline", "error", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !s.flushSSE(rc) {
		return
	}

	keepAlive := time.NewTicker(s.cfg.KeepAlive)
	defer keepAlive.Stop()
	var buf bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.streamsDone:
			return // the server shuts down
		case <-keepAlive.C:
			if !s.writeSSE(w, rc, []byte(": keep-alive\n\n")) {
				return
			}
		case e, ok := <-events:
			if !ok {
				return
			}
			buf.Reset()
			if err := s.appendSSE(&buf, e); err != nil {
				s.log.Error("encode event", "task_id", id, "sequence_number", e.Seq, "error", err)
				return
			}
			if !s.writeSSE(w, rc, buf.Bytes()) {
				return
			}
			keepAlive.Reset(s.cfg.KeepAlive)
			if store.IsTerminalEvent(e.Type) {
				return
			}
		}
	}
}

// appendSSE writes one event in the SSE wire format.
func (s *Server) appendSSE(buf *bytes.Buffer, e *store.Event) error {
	d, err := s.eventDoc(e)
	if err != nil {
		return err
	}
	var enc bytes.Buffer
	je := json.NewEncoder(&enc)
	je.SetEscapeHTML(false) // as writeJSON: the same bytes as the JSON page
	if err := je.Encode(d); err != nil {
		return err
	}
	data := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
	buf.WriteString("id: ")
	buf.WriteString(strconv.FormatInt(e.Seq, 10))
	buf.WriteString("\nevent: ")
	buf.WriteString(e.Type)
	buf.WriteByte('\n')
	// json.Marshal output has no raw newlines; split anyway so that the
	// format holds whatever the encoder does.
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		buf.WriteString("data: ")
		buf.Write(line)
		buf.WriteByte('\n')
	}
	buf.WriteByte('\n')
	return nil
}

// writeSSE writes p under a fresh write deadline and flushes it. It reports
// false when the client is gone.
func (s *Server) writeSSE(w http.ResponseWriter, rc *http.ResponseController, p []byte) bool {
	if err := rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if _, err := w.Write(p); err != nil {
		return false
	}
	return s.flushSSE(rc)
}

func (s *Server) flushSSE(rc *http.ResponseController) bool {
	err := rc.Flush()
	return err == nil || errors.Is(err, http.ErrNotSupported)
}
