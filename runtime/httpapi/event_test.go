package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
)

// sseFrame is one block of an SSE stream: an event, or a comment.
type sseFrame struct {
	id, event, comment string
	data               []string
}

// sseStream reads the frames of an SSE response in the background.
type sseStream struct {
	resp   *http.Response
	frames chan sseFrame
	cancel context.CancelFunc
}

// openSSE sends GET …/events with Accept: text/event-stream and header, and
// starts reading frames. The stream is closed at cleanup.
func openSSE(t *testing.T, token, url string, header http.Header) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	s := &sseStream{resp: resp, frames: make(chan sseFrame, 64), cancel: cancel}
	go func() {
		defer close(s.frames)
		br := bufio.NewReader(resp.Body)
		var f sseFrame
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				s.frames <- f
				f = sseFrame{}
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(strings.TrimPrefix(line, ":"))
			case strings.HasPrefix(line, "id: "):
				f.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = append(f.data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return s
}

// next returns the next frame, or fails after timeout. ok is false when the
// stream ended.
func (s *sseStream) next(t *testing.T, timeout time.Duration) (sseFrame, bool) {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		return f, ok
	case <-time.After(timeout):
		t.Fatalf("no SSE frame within %s", timeout)
		return sseFrame{}, false
	}
}

// nextEvent skips comments and returns the next event with its decoded data.
func (s *sseStream) nextEvent(t *testing.T) (sseFrame, eventJSON) {
	t.Helper()
	for {
		f, ok := s.next(t, 10*time.Second)
		require.True(t, ok, "the stream ended early")
		if f.comment != "" && f.event == "" {
			continue
		}
		require.Len(t, f.data, 1, "one data line per event")
		var e eventJSON
		require.NoError(t, json.Unmarshal([]byte(f.data[0]), &e))
		require.Equal(t, strconv.FormatInt(e.SequenceNumber, 10), f.id, "id: is the sequence number")
		require.Equal(t, e.Type, f.event)
		return f, e
	}
}

// requireEnd checks that the server closes the stream.
func (s *sseStream) requireEnd(t *testing.T) {
	t.Helper()
	for {
		f, ok := s.next(t, 10*time.Second)
		if !ok {
			return
		}
		require.Empty(t, f.event, "no event after the terminal one")
	}
}

// statusOfEvent returns the status an event's data names.
func statusOfEvent(t *testing.T, e eventJSON) string {
	t.Helper()
	var d struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d.Status
}

// TestEventStream covers SSE against the real engine.
func TestEventStream(t *testing.T) {
	t.Parallel()

	t.Run("Live", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "block")
		s := openSSE(t, b.admin, b.url+"/v1/tasks/"+tk.ID+"/events", nil)
		require.Equal(t, 200, s.resp.StatusCode)
		require.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
		require.Equal(t, "no-cache", s.resp.Header.Get("Cache-Control"))

		// Events arrive while the task is still running: nothing waits for
		// the end.
		var seq int64 = -1
		for {
			_, e := s.nextEvent(t)
			require.Equal(t, seq+1, e.SequenceNumber, "gapless, in order")
			seq = e.SequenceNumber
			if seq == 0 {
				require.Equal(t, "response.created", e.Type)
			}
			if statusOfEvent(t, e) == "running" {
				break
			}
		}
		require.Equal(t, "running", MustDecode[task](t, b.do(t, "GET", "/v1/tasks/"+tk.ID, "", nil), 200).Status)
		b.release()
		for {
			_, e := s.nextEvent(t)
			require.Equal(t, seq+1, e.SequenceNumber)
			seq = e.SequenceNumber
			if e.Type == "response.completed" {
				var resp map[string]any
				require.NoError(t, json.Unmarshal(e.Data, &resp))
				require.Equal(t, "completed", resp["status"])
				require.EqualValues(t, 7, resp["output"])
				break
			}
		}
		s.requireEnd(t)
	})

	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "echo")
		done := b.waitStatus(t, tk.ID, "completed")
		last := done.LastSequenceNumber
		require.GreaterOrEqual(t, last, int64(3))

		tests := []struct {
			name   string
			query  string
			header http.Header
			first  int64
		}{
			{name: "from the start", first: 0},
			{name: "Last-Event-ID", header: hdr("Last-Event-ID", "1"), first: 2},
			{name: "after", query: "?after=1", first: 2},
			{name: "header wins", query: "?after=0", header: hdr("Last-Event-ID", "2"), first: 3},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s := openSSE(t, b.admin, b.url+"/v1/tasks/"+tk.ID+"/events"+tc.query, tc.header)
				for want := tc.first; want <= last; want++ {
					_, e := s.nextEvent(t)
					require.Equal(t, want, e.SequenceNumber)
				}
				s.requireEnd(t)
			})
		}
		t.Run("after the terminal event", func(t *testing.T) {
			s := openSSE(t, b.admin, b.url+"/v1/tasks/"+tk.ID+"/events", hdr("Last-Event-ID", strconv.FormatInt(last, 10)))
			require.Equal(t, 200, s.resp.StatusCode)
			s.requireEnd(t)
		})
		t.Run("bad Last-Event-ID", func(t *testing.T) {
			resp := doToken(t, b.admin, "GET", b.url+"/v1/tasks/"+tk.ID+"/events", "", hdr("Accept", "text/event-stream", "Last-Event-ID", "x"))
			e := MustError(t, resp, 400, "invalid_request")
			require.Equal(t, "Last-Event-ID", e.param())
		})
	})

	t.Run("KeepAlive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{KeepAlive: 20 * time.Millisecond})
		tk := b.createTask(t, "block")
		b.waitStarted(t, tk.ID)
		s := openSSE(t, b.admin, b.url+"/v1/tasks/"+tk.ID+"/events", nil)
		keepAlives := 0
		for keepAlives < 3 {
			f, ok := s.next(t, 5*time.Second)
			require.True(t, ok)
			if f.comment == "keep-alive" {
				keepAlives++
			}
		}
	})

	t.Run("ClientGoneTaskRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tk := b.createTask(t, "block")
		b.waitStarted(t, tk.ID)
		s := openSSE(t, b.admin, b.url+"/v1/tasks/"+tk.ID+"/events", nil)
		_, e := s.nextEvent(t)
		require.Equal(t, "response.created", e.Type)
		s.cancel() // the client drops the connection
		for range s.frames {
		}
		time.Sleep(50 * time.Millisecond)
		require.Equal(t, "running", MustDecode[task](t, b.do(t, "GET", "/v1/tasks/"+tk.ID, "", nil), 200).Status)
		b.release()
		b.waitStatus(t, tk.ID, "completed")
	})
}

// TestEventStreamPush checks with a scripted subscription that each event is
// flushed as soon as the engine hands it over, one at a time, and that a
// client going away ends the subscription.
func TestEventStreamPush(t *testing.T) {
	t.Parallel()
	events := make(chan *store.Event)
	subscriptionDone := make(chan struct{})
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksRead),
		EventSubscribeFunc: func(ctx context.Context, _ runtime.Caller, id string, after int64) (<-chan *store.Event, error) {
			require.Equal(t, "task_x", id)
			require.EqualValues(t, 4, after)
			go func() {
				<-ctx.Done()
				close(subscriptionDone)
			}()
			return events, nil
		},
	}
	ts := MustFakeServer(t, f, Config{KeepAlive: time.Hour})
	s := openSSE(t, fakeToken, ts.URL+"/v1/tasks/task_x/events?after=4", nil)
	for seq := int64(5); seq < 8; seq++ {
		payload := `{"status":"running"}`
		if seq == 6 {
			payload = "{\n  \"line\": \"multi\\nline\"\n}" // stored JSON may be indented
		}
		select {
		case events <- &store.Event{TaskID: "task_x", Seq: seq, Type: "task.log", Payload: json.RawMessage(payload), CreatedAt: time.Now()}:
		case <-time.After(5 * time.Second):
			t.Fatal("the server stopped reading the subscription")
		}
		fr, e := s.nextEvent(t)
		require.Equal(t, seq, e.SequenceNumber, "event %d arrives before the next is sent", seq)
		require.NotContains(t, fr.data[0], "\n")
	}
	s.cancel()
	select {
	case <-subscriptionDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription outlived the client")
	}
	_, _ = io.Copy(io.Discard, s.resp.Body)
}

// TestEventStreamOutlivesServerTimeouts checks that an SSE stream survives an
// http.Server whose read and write timeouts are far shorter than the stream.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	events := make(chan *store.Event)
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeTasksRead),
		EventSubscribeFunc: func(context.Context, runtime.Caller, string, int64) (<-chan *store.Event, error) {
			return events, nil
		},
	}
	s, err := New(Config{Engine: f, Modules: f, Access: f, Logger: testLogger(t), KeepAlive: 50 * time.Millisecond})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.ReadTimeout = 150 * time.Millisecond
	ts.Config.WriteTimeout = 150 * time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)

	st := openSSE(t, fakeToken, ts.URL+"/v1/tasks/task_x/events", nil)
	send := func(seq int64, typ, payload string) {
		select {
		case events <- &store.Event{TaskID: "task_x", Seq: seq, Type: typ, Payload: json.RawMessage(payload), CreatedAt: time.Now()}:
		case <-time.After(5 * time.Second):
			t.Fatal("the server stopped reading the subscription")
		}
	}
	send(0, "response.created", `{"status":"queued"}`)
	_, e := st.nextEvent(t)
	require.EqualValues(t, 0, e.SequenceNumber)
	time.Sleep(600 * time.Millisecond) // four times both server timeouts
	send(1, "response.completed", `{"id":"resp_x","object":"response","task_id":"task_x","status":"completed","created_at":"2025-01-02T15:04:05Z","finished_at":"2025-01-02T15:04:06Z"}`)
	_, e = st.nextEvent(t)
	require.EqualValues(t, 1, e.SequenceNumber)
	require.Equal(t, "response.completed", e.Type)
	st.requireEnd(t)
}
