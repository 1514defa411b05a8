package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Defaults shared by the daemon and the client commands (BRIEF §3.3).
const (
	defaultDataDir = "./weft-data"
	defaultAddr    = "127.0.0.1:7700"
	adminTokenFile = "admin.token"
)

// clientOptions are the flags every client command takes to find the daemon.
type clientOptions struct {
	addr    string
	token   string
	dataDir string
	json    bool
}

// addClientFlags registers --addr, --token, --data and --json on cmd.
func addClientFlags(cmd *cobra.Command, o *clientOptions) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.addr, "addr", "", "daemon address HOST:PORT (default $WEFT_ADDR or "+defaultAddr+")")
	f.StringVar(&o.token, "token", "", "bearer token (default $WEFT_TOKEN or DATA/"+adminTokenFile+")")
	f.StringVar(&o.dataDir, "data", "", "data directory holding "+adminTokenFile+" (default $WEFT_DATA or "+defaultDataDir+")")
	f.BoolVar(&o.json, "json", false, "print JSON for scripts")
}

// client resolves the daemon address and token: flags first, then WEFT_ADDR and
// WEFT_TOKEN, then DATA/admin.token.
func (o *clientOptions) client() (*apiClient, error) {
	addr := firstNonEmpty(o.addr, os.Getenv("WEFT_ADDR"), defaultAddr)
	token := firstNonEmpty(o.token, os.Getenv("WEFT_TOKEN"))
	var noToken string
	if token == "" {
		dir := firstNonEmpty(o.dataDir, os.Getenv("WEFT_DATA"), defaultDataDir)
		path := filepath.Join(dir, adminTokenFile)
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read token: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			noToken = fmt.Sprintf("no token: %s not found and WEFT_TOKEN is not set; use --data DIR (the daemon's data directory), --token or WEFT_TOKEN", path)
		}
	}
	base := addr
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, noToken: noToken, http: &http.Client{}}, nil
}

// fetch sends r to the daemon found by o and returns the JSON answer.
func (o *clientOptions) fetch(cmd *cobra.Command, r request) (json.RawMessage, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(cmd.Context(), r, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// apiClient speaks the daemon's HTTP JSON API.
type apiClient struct {
	base  string
	token string
	// noToken, when no token was found, says where the client looked; it
	// replaces the daemon's missing_credential answer.
	noToken string
	http    *http.Client
}

// apiError is an error document returned by the daemon.
type apiError struct {
	Status  int
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param"`
}

func (e *apiError) Error() string {
	msg := e.Code + ": " + e.Message
	if e.Param != "" {
		msg += " (param " + e.Param + ")"
	}
	return msg
}

// request is one API call.
type request struct {
	method      string
	path        string
	body        io.Reader
	contentType string
	header      http.Header
}

func (c *apiClient) newRequest(ctx context.Context, r request) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, r.body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req, nil
}

// do sends r and decodes a JSON answer into out (if non-nil). A non-2xx
// answer becomes an *apiError.
func (c *apiClient) do(ctx context.Context, r request, out any) error {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("connect to weft at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return c.apiError(resp.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], body...)
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// apiError decodes a non-2xx answer; a missing_credential answer to a
// client that found no token says where it looked instead.
func (c *apiClient) apiError(status int, body []byte) error {
	err := decodeAPIError(status, body)
	if ae, ok := err.(*apiError); ok && ae.Code == "missing_credential" && c.noToken != "" {
		return errors.New(c.noToken)
	}
	return err
}

func decodeAPIError(status int, body []byte) error {
	var doc struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error != nil {
		doc.Error.Status = status
		return doc.Error
	}
	return &apiError{Status: status, Code: "http_" + strconv.Itoa(status), Message: strings.TrimSpace(string(body))}
}

// jsonBody marshals v as a request body.
func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// sseEvent is one server-sent event.
type sseEvent struct {
	ID    string
	Event string
	Data  []byte
}

// stream opens path as an SSE stream and calls fn for each event until fn
// returns stop=true, the stream ends, or ctx is done.
func (c *apiClient) stream(ctx context.Context, path string, lastID string, fn func(ev sseEvent) (stop bool, err error)) error {
	h := http.Header{"Accept": {"text/event-stream"}}
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	req, err := c.newRequest(ctx, request{method: http.MethodGet, path: path, header: h})
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("connect to weft at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return c.apiError(resp.StatusCode, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Data == nil && ev.Event == "" {
				continue
			}
			stop, err := fn(ev)
			if err != nil || stop {
				return err
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			// comment: keep-alive
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Event = value
			case "data":
				if ev.Data != nil {
					ev.Data = append(ev.Data, '\n')
				}
				ev.Data = append(ev.Data, value...)
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("read event stream: %w", err)
	}
	return ctx.Err()
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseDuration accepts Go durations with a unit ("30s", "1m", "500ms"). A
// bare number is a usage error: it would be ambiguous between seconds and
// milliseconds.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, usageError{fmt.Errorf("duration %q needs a unit, e.g. %ss or %sms", s, s, s)}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, usageError{fmt.Errorf("invalid duration %q (use a unit, e.g. 30s, 1m or 500ms)", s)}
	}
	if d <= 0 {
		return 0, usageError{fmt.Errorf("duration %q must be positive", s)}
	}
	return d, nil
}
