package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
)

// Defaults of the memory bounds of Config (docs/operations.md, "Memory and
// fairness").
const (
	DefaultMaxPageBytes       = 4 << 20
	DefaultMaxProjectionBytes = 1 << 20
	DefaultMaxReadBytes       = 64 << 20
	DefaultReadWait           = 2 * time.Second
)

// includePayloads reports whether a list request asks for payloads
// (?include=payloads).
func includePayloads(r *http.Request) bool {
	for _, v := range r.URL.Query()["include"] {
		for _, part := range bytes.Split([]byte(v), []byte(",")) {
			if string(bytes.TrimSpace(part)) == "payloads" {
				return true
			}
		}
	}
	return false
}

// readGate bounds the bytes of payloads that reads are writing out at once.
// A read weighs the stored bytes of the payloads it shows; one that finds
// the gate full waits up to ReadWait, then is answered 503 server_busy with
// Retry-After. A read heavier than the whole gate runs alone.
type readGate struct {
	capacity int64
	wait     time.Duration

	mu       sync.Mutex
	inFlight int64
	changed  chan struct{} // closed and replaced at every release
}

func newReadGate(capacity int64, wait time.Duration) *readGate {
	return &readGate{capacity: capacity, wait: wait, changed: make(chan struct{})}
}

// acquire takes n bytes of the gate and returns the function that gives
// them back.
func (g *readGate) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 0), g.capacity)
	if n == 0 {
		return func() {}, nil
	}
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		if g.inFlight+n <= g.capacity {
			g.inFlight += n
			g.mu.Unlock()
			return func() { g.release(n) }, nil
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, errorf(codeServerBusy, "", "the daemon is writing %d bytes of payloads to other clients; retry shortly", g.capacity)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (g *readGate) release(n int64) {
	g.mu.Lock()
	g.inFlight -= n
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// payloadBytes is the stored size of the payloads a task document shows.
func payloadBytes(t *store.Task) int64 {
	n := int64(len(t.Input.Data) + len(t.Output.Data))
	if t.Error != nil {
		n += int64(len(t.Error.Details.Data))
	}
	return n
}

// payloadMember is one payload of a document written by writeDoc: the
// envelope under Name+"_envelope", the projection under Name.
type payloadMember struct {
	Name    string
	Payload store.Payload
}

// writeDoc writes a JSON document with payloads straight to w, without
// building it in memory: head is the document without its payload members
// (a JSON object), then each payload's envelope is written with its base64
// blob streamed from the stored frame, and its typed projection beside it.
// A frame larger than MaxProjectionBytes gets no projection (null) and the
// member Name+"_projection_omitted": true instead; the envelope is the
// authoritative form anyway.
func (s *Server) writeDoc(bw *bufio.Writer, head []byte, payloads []payloadMember) error {
	head = bytes.TrimRight(head, " \n")
	if len(head) < 2 || head[len(head)-1] != '}' {
		return fmt.Errorf("document head is not a JSON object")
	}
	body := head[:len(head)-1]
	bw.Write(body)
	empty := len(bytes.TrimSpace(body)) == 1 // "{"
	for _, m := range payloads {
		if !empty {
			bw.WriteByte(',')
		}
		empty = false
		s.writePayload(bw, m)
	}
	bw.WriteByte('}')
	return nil
}

// writePayload writes the members of one payload.
func (s *Server) writePayload(bw *bufio.Writer, m payloadMember) {
	fmt.Fprintf(bw, "%q:", m.Name+"_envelope")
	p := m.Payload
	if p.IsZero() {
		bw.WriteString("null")
	} else {
		codecTag, _ := json.Marshal(p.Codec)
		bw.WriteString(`{"codec":`)
		bw.Write(codecTag)
		bw.WriteString(`,"blob":"`)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		_, _ = enc.Write(p.Data)
		_ = enc.Close()
		bw.WriteString(`"}`)
	}
	fmt.Fprintf(bw, ",%q:", m.Name)
	if len(p.Data) > int(s.cfg.MaxProjectionBytes) {
		bw.WriteString("null")
		fmt.Fprintf(bw, ",%q:true", m.Name+"_projection_omitted")
		return
	}
	bw.Write(s.projection(envelopeOf(p)))
}

// writeStream starts a 200 JSON answer and returns a buffered writer on it;
// the caller writes the body and flushes.
func writeStream(w http.ResponseWriter, status int) *bufio.Writer {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	return bufio.NewWriterSize(w, 32<<10)
}

// marshalHead encodes v (a document whose payload members are left out) as
// writeJSON would, without the trailing newline.
func marshalHead(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// taskHead is a task document without its payload members: the shallower
// fields hide client.Task's, and omitempty drops them.
type taskHead struct {
	*client.Task
	InputEnvelope  *codec.Envelope `json:"input_envelope,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	OutputEnvelope *codec.Envelope `json:"output_envelope,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Error          *errorHead      `json:"error"`
}

// errorHead is an error document without its details payload.
type errorHead struct {
	*client.TaskError
	DetailsEnvelope *codec.Envelope `json:"details_envelope,omitempty"`
	Details         json.RawMessage `json:"details,omitempty"`
}

// taskSummary is the task document of a list page without payloads: every
// field but the input, output and error details.
func (s *Server) taskSummary(t *store.Task) *taskHead {
	d := s.taskMeta(t)
	h := &taskHead{Task: d}
	if d.Error != nil {
		h.Error = &errorHead{TaskError: d.Error}
	}
	return h
}

// taskMeta is the task document without the payloads filled in.
func (s *Server) taskMeta(t *store.Task) *client.Task {
	bare := *t
	bare.Input, bare.Output = store.Payload{}, store.Payload{}
	if t.Error != nil {
		e := *t.Error
		e.Details = store.Payload{}
		bare.Error = &e
	}
	return s.taskDoc(&bare)
}

// encodeTask writes the whole task document, payloads included, to bw.
func (s *Server) encodeTask(bw *bufio.Writer, t *store.Task) error {
	head, err := marshalHead(s.taskSummary(t))
	if err != nil {
		return err
	}
	payloads := []payloadMember{{"input", t.Input}, {"output", t.Output}}
	if t.Error == nil || t.Error.Details.IsZero() {
		return s.writeDoc(bw, head, payloads)
	}
	// The error's details sit inside the error member: write the error
	// last, by hand.
	errHead, err := marshalHead(&errorHead{TaskError: s.errorDoc(&store.TaskError{
		Code: t.Error.Code, Message: t.Error.Message, Type: t.Error.Type, NonRetryable: t.Error.NonRetryable,
	})})
	if err != nil {
		return err
	}
	head = removeMember(head, "error")
	head = bytes.TrimRight(head, " \n")
	bw.Write(head[:len(head)-1])
	for _, m := range payloads {
		bw.WriteByte(',')
		s.writePayload(bw, m)
	}
	bw.WriteString(`,"error":`)
	if err := s.writeDoc(bw, errHead, []payloadMember{{"details", t.Error.Details}}); err != nil {
		return err
	}
	bw.WriteByte('}')
	return nil
}

// removeMember drops the top-level member name from a small JSON object
// encoded by marshalHead, keeping the order of the others.
func removeMember(obj []byte, name string) []byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return obj
	}
	var out bytes.Buffer
	out.WriteByte('{')
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return obj
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return obj
		}
		if key == name {
			continue
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(raw)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// writeTask answers one task document with its payloads, streamed, within
// the read gate.
func (s *Server) writeTask(w http.ResponseWriter, r *http.Request, status int, t *store.Task) {
	done, err := s.reads.acquire(r.Context(), payloadBytes(t))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer done()
	bw := writeStream(w, status)
	if err := s.encodeTask(bw, t); err != nil {
		s.log.Error("encode task", "task_id", t.ID, "error", err)
		return
	}
	bw.WriteByte('\n')
	_ = bw.Flush()
}

// responseHead is a response document without its payload members.
type responseHead struct {
	*client.Response
	OutputEnvelope *codec.Envelope `json:"output_envelope,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Error          *errorHead      `json:"error"`
}

// writeResponse answers one response document, streamed, within the read
// gate.
func (s *Server) writeResponse(w http.ResponseWriter, r *http.Request, status int, resp *store.Response) {
	size := int64(len(resp.Output.Data))
	if resp.Error != nil {
		size += int64(len(resp.Error.Details.Data))
	}
	done, err := s.reads.acquire(r.Context(), size)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer done()
	bw := writeStream(w, status)
	if err := s.encodeResponse(bw, resp); err != nil {
		s.log.Error("encode response", "response_id", resp.ID, "error", err)
		return
	}
	bw.WriteByte('\n')
	_ = bw.Flush()
}

// encodeResponse writes a response document to bw.
func (s *Server) encodeResponse(bw *bufio.Writer, resp *store.Response) error {
	bare := *resp
	bare.Output = store.Payload{}
	var details store.Payload
	if resp.Error != nil {
		e := *resp.Error
		details, e.Details = e.Details, store.Payload{}
		bare.Error = &e
	}
	d := s.responseDoc(&bare)
	h := &responseHead{Response: d}
	if d.Error != nil {
		h.Error = &errorHead{TaskError: d.Error}
	}
	head, err := marshalHead(h)
	if err != nil {
		return err
	}
	if details.IsZero() {
		return s.writeDoc(bw, head, []payloadMember{{"output", resp.Output}})
	}
	errHead, err := marshalHead(h.Error)
	if err != nil {
		return err
	}
	head = bytes.TrimRight(removeMember(head, "error"), " \n")
	bw.Write(head[:len(head)-1])
	bw.WriteByte(',')
	s.writePayload(bw, payloadMember{"output", resp.Output})
	bw.WriteString(`,"error":`)
	if err := s.writeDoc(bw, errHead, []payloadMember{{"details", details}}); err != nil {
		return err
	}
	bw.WriteByte('}')
	return nil
}

// pageWriter writes a list page item by item: the page ends early, with
// has_more, once its encoded size passes MaxPageBytes (at least one item
// is always written).
type pageWriter struct {
	buf   bytes.Buffer
	limit int
	n     int
	full  bool
}

func (s *Server) newPage() *pageWriter {
	p := &pageWriter{limit: int(s.cfg.MaxPageBytes)}
	p.buf.WriteString(`{"object":"list","data":[`)
	return p
}

// add appends one encoded item and reports whether another fits.
func (p *pageWriter) add(item []byte) bool {
	if p.n > 0 {
		p.buf.WriteByte(',')
	}
	p.buf.Write(item)
	p.n++
	p.full = p.buf.Len() >= p.limit
	return !p.full
}

// write ends the page with its cursor and sends it.
func (p *pageWriter) write(w http.ResponseWriter, next string, hasMore bool) {
	p.buf.WriteString(`]`)
	if next != "" {
		c, _ := json.Marshal(next)
		p.buf.WriteString(`,"next_cursor":`)
		p.buf.Write(c)
	}
	if hasMore {
		p.buf.WriteString(`,"has_more":true}`)
	} else {
		p.buf.WriteString(`,"has_more":false}`)
	}
	p.buf.WriteByte('\n')
	bw := writeStream(w, http.StatusOK)
	_, _ = bw.Write(p.buf.Bytes())
	_ = bw.Flush()
}

// writeKeyedPage answers a list whose items are sorted by a unique key
// (modules by name, clients by id): the items after ?cursor=, in a page
// that ends early once it passes MaxPageBytes, with next_cursor the key of
// the last item shown.
func writeKeyedPage[T any](s *Server, w http.ResponseWriter, r *http.Request, items []T, key func(T) string, doc func(T) any) {
	cursor := r.URL.Query().Get("cursor")
	page := s.newPage()
	for i, it := range items {
		k := key(it)
		if cursor != "" && k <= cursor {
			continue
		}
		b, err := marshalHead(doc(it))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !page.add(b) && i < len(items)-1 {
			page.write(w, k, true)
			return
		}
	}
	page.write(w, "", false)
}
