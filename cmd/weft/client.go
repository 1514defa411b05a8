package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// Defaults shared by the daemon and the client commands (BRIEF §3.3).
const (
	defaultDataDir = daemon.DefaultDataDir
	defaultAddr    = daemon.DefaultAddr
	adminTokenFile = daemon.AdminTokenFile
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
	cfg, noToken, err := o.config()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	return &apiClient{api: c, noToken: noToken}, nil
}

// config is the client configuration o resolves to, and, when no token was
// found, where the client looked.
func (o *clientOptions) config() (cfg client.Config, noToken string, err error) {
	addr := firstNonEmpty(o.addr, os.Getenv("WEFT_ADDR"), defaultAddr)
	token := firstNonEmpty(o.token, os.Getenv("WEFT_TOKEN"))
	if token == "" {
		dir := firstNonEmpty(o.dataDir, os.Getenv("WEFT_DATA"), defaultDataDir)
		path := filepath.Join(dir, adminTokenFile)
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return client.Config{}, "", fmt.Errorf("read token: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			noToken = fmt.Sprintf("no token: %s not found and WEFT_TOKEN is not set; use --data DIR (the daemon's data directory), --token or WEFT_TOKEN", path)
		}
	}
	return client.Config{BaseURL: addr, Token: token}, noToken, nil
}

// fetch sends r to the daemon found by o and returns the JSON answer.
func (o *clientOptions) fetch(cmd *cobra.Command, r *client.Request) (json.RawMessage, error) {
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

// apiClient is the API client of the client commands. The commands print
// the daemon's documents as they came (--json), so most calls go through
// do with a json.RawMessage.
type apiClient struct {
	api *client.Client
	// noToken, when no token was found, says where the client looked; it
	// replaces the daemon's missing_credential answer.
	noToken string
}

// do sends r and decodes the answer into out (see client.Client.Do).
func (c *apiClient) do(ctx context.Context, r *client.Request, out any) error {
	return c.explain(c.api.Do(ctx, r, out))
}

// stream follows the events of task id after lastID ("" from the first).
func (c *apiClient) stream(ctx context.Context, id, lastID string, fn func(ev *client.StreamEvent) (stop bool, err error)) error {
	return c.explain(c.api.EventStream(ctx, id, client.EventStreamParams{LastEventID: lastID}, fn))
}

// explain replaces a missing_credential answer to a client that found no
// token with where it looked.
func (c *apiClient) explain(err error) error {
	if c.noToken != "" && client.IsCode(err, "missing_credential") {
		return errors.New(c.noToken)
	}
	return err
}

// jsonBody marshals v as a request body.
func jsonBody(v any) ([]byte, error) {
	return json.Marshal(v)
}

// rfc3339 is a time as the API writes it.
func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }

// rfc3339p is rfc3339 of a time that may be absent ("").
func rfc3339p(t *time.Time) string {
	if t == nil {
		return ""
	}
	return rfc3339(*t)
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
