package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// StreamEvent is one server-sent event of a task's event stream.
type StreamEvent struct {
	// ID is the event's sequence number as sent ("id:"); pass it back as
	// EventStreamParams.LastEventID to resume after this event.
	ID string
	// Type is the event type ("event:"), e.g. task.started.
	Type string
	// Data is the Event document as sent ("data:").
	Data []byte
}

// Event decodes the event document.
func (e *StreamEvent) Event() (*Event, error) {
	var ev Event
	if err := json.Unmarshal(e.Data, &ev); err != nil {
		return nil, &DecodeError{What: "event", Err: err}
	}
	return &ev, nil
}

// EventStreamParams say where a stream starts.
type EventStreamParams struct {
	// LastEventID resumes a stream after the event with this id (a
	// StreamEvent.ID); "" starts at the first event.
	LastEventID string
}

// ResumeAfter returns the LastEventID of the event with sequence number
// seq.
func ResumeAfter(seq int64) string { return strconv.FormatInt(seq, 10) }

// EventStream follows task taskID's events as server-sent events (GET
// /v1/tasks/{id}/events with Accept: text/event-stream), calling fn for
// each, until fn returns stop or an error, the stream ends (the daemon ends
// it after the terminal event, and when it shuts down), or ctx is done. It
// returns fn's error, ctx's, or why the stream broke; nil when it simply
// ended. A stream that broke resumes with the last StreamEvent.ID seen.
func (c *Client) EventStream(ctx context.Context, taskID string, p EventStreamParams, fn func(ev *StreamEvent) (stop bool, err error)) error {
	h := http.Header{"Accept": {"text/event-stream"}}
	if p.LastEventID != "" {
		h.Set("Last-Event-ID", p.LastEventID)
	}
	resp, err := c.send(ctx, &Request{Method: http.MethodGet, Path: "/v1/tasks/" + esc(taskID) + "/events", Header: h})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return &DecodeError{What: "event stream", Err: fmt.Errorf("content type %q, not text/event-stream", ct)}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), int(min(c.max, 1<<30)))
	var ev StreamEvent
	var size int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Data == nil && ev.Type == "" {
				continue
			}
			stop, err := fn(&ev)
			if err != nil || stop {
				return err
			}
			ev, size = StreamEvent{}, 0
		case strings.HasPrefix(line, ":"):
			// a comment: keep-alive
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Type = value
			case "data":
				if size += int64(len(value)) + 1; size > c.max {
					return fmt.Errorf("%w: an event of more than %d bytes", ErrResponseTooLarge, c.max)
				}
				if ev.Data != nil {
					ev.Data = append(ev.Data, '\n')
				}
				ev.Data = append(ev.Data, value...)
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: an event line of more than %d bytes", ErrResponseTooLarge, c.max)
		}
		return fmt.Errorf("read event stream: %w", err)
	}
	return ctx.Err()
}
