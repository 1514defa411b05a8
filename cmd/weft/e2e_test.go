//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// taskIDPattern matches a task id as the CLI prints it.
var taskIDPattern = regexp.MustCompile(`^task_[0-9A-Z]{26}$`)

// TestE2ESmoke drives the real binary through the CLI against a real daemon
// over loopback: deploy, run, background and watch, cancel, listings, exit
// statuses, pairing and revocation, and the value converter.
func TestE2ESmoke(t *testing.T) {
	d := MustRunMain(t)

	// Health needs no token.
	code, err := d.DoToken(t.Context(), "", http.MethodGet, "/readyz", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	// Deploy with the CLI.
	out := d.MustCLI("deploy", testkitWasm)
	require.Regexp(t, `^deployed testkit sha256:[0-9a-f]{64} \(\d+ bytes, version 1\)\n`, out)
	for _, fn := range []string{"echo", "sleep", "count", "fail", "trap", "spin", "grow"} {
		require.Regexp(t, `(?m)^  activity\s+`+fn+`$`, out)
	}
	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(out)

	var modules struct {
		Data []client.Module `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(d.MustCLI("modules", "list", "--json")), &modules))
	require.Len(t, modules.Data, 1)
	require.Equal(t, "testkit", modules.Data[0].Name)
	require.Equal(t, digest, modules.Data[0].Digest)
	out = d.MustCLI("modules", "list")
	require.Regexp(t, `(?m)^NAME\s+DIGEST\s+SIZE\s+FUNCTIONS$`, out)
	require.Regexp(t, `(?m)^testkit\s+`+digest+`\s+\d+\s+\S*echo\S*$`, out)

	t.Run("RunPrintsTheOutputProjection", func(t *testing.T) {
		input := `{"a":1,"b":[true,null,"x"],"c":1.5,"d":{"$type":"bytes","base64":"AAEC"}}`
		out := d.MustCLI("run", "testkit", "echo", "--input", input)
		require.True(t, strings.HasSuffix(out, "\n") && strings.Count(out, "\n") == 1, "one line: %q", out)
		require.JSONEq(t, input, out)

		var resp client.Response
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("run", "testkit", "echo", "--input", "7", "--json")), &resp))
		require.Equal(t, "completed", resp.Status)
		require.JSONEq(t, "7", string(resp.Output))
		require.Equal(t, "completed", d.MustTask(resp.TaskID).Status)
	})

	t.Run("ExitStatuses", func(t *testing.T) {
		tests := []struct {
			name   string
			args   []string
			code   int
			stderr string
		}{
			{name: "FailedTask", args: []string{"run", "testkit", "fail", "--input", `{"type":"Boom","message":"it broke","non_retryable":true}`}, code: 1, stderr: "failed: Boom: it broke"},
			{name: "TrappedTask", args: []string{"run", "testkit", "trap"}, code: 1, stderr: "failed: trap"},
			{name: "UnknownModule", args: []string{"run", "nosuch", "echo"}, code: 1, stderr: "module_not_found"},
			{name: "UnknownFunction", args: []string{"run", "testkit", "nosuch"}, code: 1, stderr: "function_not_found"},
			{name: "BadProjection", args: []string{"run", "testkit", "echo", "--input", "{"}, code: 1, stderr: "invalid_projection"},
			{name: "NoDaemon", args: []string{"tasks", "list", "--addr", "127.0.0.1:1"}, code: 1, stderr: "connect to weft at http://127.0.0.1:1"},
			{name: "UnknownTask", args: []string{"tasks", "get", "task_01J0000000000000000000000"}, code: 1, stderr: "not_found"},
			{name: "MissingArgument", args: []string{"run", "testkit"}, code: 2, stderr: "accepts 2 arg(s)"},
			{name: "BadPolicy", args: []string{"run", "testkit", "echo", "--on-restart", "never"}, code: 2, stderr: "--on-restart must be fail, retry or resume"},
			{name: "UnknownSubcommand", args: []string{"tasks", "frobnicate"}, code: 2, stderr: "unknown command"},
			{name: "UnknownFlag", args: []string{"tasks", "list", "--frobnicate"}, code: 2, stderr: "unknown flag"},
			{name: "WrongToken", args: []string{"tasks", "list", "--token", "not-a-token"}, code: 1, stderr: "invalid_credential"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				res := d.CLI(tc.args...)
				require.Equal(t, tc.code, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
				require.Contains(t, res.Stderr, tc.stderr)
			})
		}
	})

	t.Run("BackgroundAndWatch", func(t *testing.T) {
		id := strings.TrimSpace(d.MustCLI("run", "testkit", "sleep", "--input", `{"ms":300}`, "--background", "--on-restart", "retry"))
		require.Regexp(t, taskIDPattern, id)
		task := d.MustTask(id)
		require.Equal(t, "retry", task.OnRestart)

		out := d.MustCLI("tasks", "watch", id)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		require.GreaterOrEqual(t, len(lines), 5, out)
		require.Regexp(t, `^\s*0\s+response\.created\s`, lines[0])
		require.Regexp(t, `^\s*\d+\s+response\.completed\s`, lines[len(lines)-2])
		require.Equal(t, "task "+id+" completed", lines[len(lines)-1])

		// --json prints every event document, gapless, ending with the
		// terminal one that carries the whole response.
		out = d.MustCLI("tasks", "watch", id, "--json")
		events := parseEventLines(t, out)
		requireGaplessLog(t, events, "response.completed")
		require.Equal(t, d.MustTask(id).LastSequenceNumber, events[len(events)-1].SequenceNumber)

		// --after resumes the log.
		out = d.MustCLI("tasks", "watch", id, "--json", "--after", "1")
		require.Equal(t, events[2:], parseEventLines(t, out))
	})

	t.Run("CancelASleep", func(t *testing.T) {
		id := strings.TrimSpace(d.MustCLI("run", "testkit", "sleep", "--input", `{"ms":60000}`, "--background"))
		d.MustWaitStatus(id, 30*time.Second, "running")
		out := d.MustCLI("tasks", "cancel", id)
		require.Regexp(t, `^`+id+` (cancelling|cancelled)\n$`, out)

		start := time.Now()
		res := d.CLI("tasks", "watch", id)
		require.Equal(t, 1, res.Code, "a cancelled task makes watch exit 1: %q", res.Stderr)
		require.Less(t, time.Since(start), 20*time.Second)
		require.True(t, strings.HasSuffix(res.Stdout, "task "+id+" cancelled\n"), res.Stdout)
		task := d.MustTask(id)
		require.Equal(t, "cancelled", task.Status)
		requireGaplessLog(t, d.MustEvents(id), "response.cancelled")

		// Cancelling a finished task succeeds and changes nothing.
		out = d.MustCLI("tasks", "cancel", id, "--json")
		var again client.Task
		require.NoError(t, json.Unmarshal([]byte(out), &again))
		require.Equal(t, "cancelled", again.Status)
		require.Equal(t, task.LastSequenceNumber, again.LastSequenceNumber)
	})

	t.Run("TasksList", func(t *testing.T) {
		var page struct {
			Object string        `json:"object"`
			Data   []client.Task `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("tasks", "list", "--json")), &page))
		require.Equal(t, "list", page.Object)
		require.NotEmpty(t, page.Data)
		statuses := map[string]int{}
		for i, tk := range page.Data {
			require.Regexp(t, taskIDPattern, tk.ID)
			statuses[tk.Status]++
			if i > 0 {
				require.Greater(t, page.Data[i-1].ID, tk.ID, "newest first")
			}
		}
		require.Positive(t, statuses["completed"])
		require.Positive(t, statuses["failed"])
		require.Positive(t, statuses["cancelled"])

		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("tasks", "list", "--json", "--status", "cancelled")), &page))
		require.Len(t, page.Data, statuses["cancelled"])
		for _, tk := range page.Data {
			require.Equal(t, "cancelled", tk.Status)
		}

		out := d.MustCLI("tasks", "list", "--limit", "1")
		require.Regexp(t, `(?m)^ID\s+STATUS\s+MODULE\s+FUNCTION\s+CREATED$`, out)
		require.Regexp(t, `(?m)^more: weft tasks list --cursor task_`, out)
	})

	t.Run("PairUseRevoke", func(t *testing.T) {
		var pairing struct {
			Code      string   `json:"code"`
			Scopes    []string `json:"scopes"`
			ExpiresAt string   `json:"expires_at"`
		}
		out := d.MustCLI("clients", "pair", "--json", "--expires-in", "5m", "--scope", "tasks:read", "--scope", "tasks:write", "--scope", "modules:read")
		require.NoError(t, json.Unmarshal([]byte(out), &pairing))
		require.NotEmpty(t, pairing.Code)
		require.ElementsMatch(t, []string{"tasks:read", "tasks:write", "modules:read"}, pairing.Scopes)
		expires, err := time.Parse(time.RFC3339Nano, pairing.ExpiresAt)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(5*time.Minute), expires, time.Minute)

		var redeemed struct {
			ClientID string   `json:"client_id"`
			Token    string   `json:"token"`
			Scopes   []string `json:"scopes"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("clients", "pair", "--redeem", pairing.Code, "--name", "laptop", "--json")), &redeemed))
		require.NotEmpty(t, redeemed.Token)
		require.NotEqual(t, d.Token, redeemed.Token)
		require.ElementsMatch(t, pairing.Scopes, redeemed.Scopes)

		res := d.CLI("clients", "pair", "--redeem", pairing.Code, "--name", "again")
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "pairing_code_used")

		// The new client runs tasks with its own token, sees only its own
		// tasks, and may not deploy.
		require.JSONEq(t, `{"mine":true}`, d.MustCLI("run", "testkit", "echo", "--input", `{"mine":true}`, "--token", redeemed.Token))
		var page struct {
			Data []client.Task `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("tasks", "list", "--json", "--token", redeemed.Token)), &page))
		require.Len(t, page.Data, 1)
		require.JSONEq(t, `{"mine":true}`, string(page.Data[0].Output))
		adminTasks := d.MustListTasks("")
		require.Greater(t, len(adminTasks), 1)
		res = d.CLI("tasks", "get", adminTasks[len(adminTasks)-1].ID, "--token", redeemed.Token)
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "not_found")
		res = d.CLI("deploy", testkitWasm, "--token", redeemed.Token)
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "insufficient_scope")
		require.Contains(t, d.MustCLI("modules", "list", "--token", redeemed.Token), "testkit")

		out = d.MustCLI("clients", "list")
		require.Regexp(t, `(?m)^`+redeemed.ClientID+`\s+laptop\s`, out)

		require.Equal(t, "revoked "+redeemed.ClientID+"\n", d.MustCLI("clients", "revoke", redeemed.ClientID))
		res = d.CLI("tasks", "list", "--token", redeemed.Token)
		require.Equal(t, 1, res.Code)
		require.Contains(t, res.Stderr, "invalid_credential")

		var clients struct {
			Data []struct {
				ID        string  `json:"id"`
				RevokedAt *string `json:"revoked_at"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.MustCLI("clients", "list", "--json")), &clients))
		found := false
		for _, c := range clients.Data {
			if c.ID == redeemed.ClientID {
				found = true
				require.NotNil(t, c.RevokedAt)
			}
		}
		require.True(t, found)
	})

	t.Run("ValueEncodeDecode", func(t *testing.T) {
		input := `{"n":-3,"f":0.25,"s":"héllo","l":[1,[2]],"b":{"$type":"bytes","base64":"/w=="}}`
		null := d.CLIStdin("null", "value", "encode")
		require.Equal(t, 0, null.Code, null.Stderr)
		require.JSONEq(t, `{"codec":"avro","blob":"wwHioz3/VYAiNwA="}`, null.Stdout)
		res := d.CLIStdin(input, "value", "encode")
		require.Equal(t, 0, res.Code, res.Stderr)
		require.Regexp(t, `^\{"codec":"avro","blob":"[A-Za-z0-9+/=]+"\}\n$`, res.Stdout)
		back := d.CLIStdin(res.Stdout, "value", "decode")
		require.Equal(t, 0, back.Code, back.Stderr)
		require.JSONEq(t, input, back.Stdout)

		bad := d.CLIStdin(`{"codec":"json","blob":""}`, "value", "decode")
		require.Equal(t, 1, bad.Code)
		require.Contains(t, bad.Stderr, "unsupported_payload_codec")
	})
}

// parseEventLines parses one event document per line.
func parseEventLines(tb testing.TB, out string) []client.Event {
	tb.Helper()
	var events []client.Event
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var ev client.Event
		require.NoError(tb, json.Unmarshal([]byte(line), &ev), line)
		events = append(events, ev)
	}
	return events
}

// requireGaplessLog checks a whole event log: sequence numbers 0, 1, 2, …,
// response.created first, and exactly one terminal event, of type terminal,
// at the end.
func requireGaplessLog(tb testing.TB, events []client.Event, terminal string) {
	tb.Helper()
	require.NotEmpty(tb, events)
	require.Equal(tb, "response.created", events[0].Type)
	for i, ev := range events {
		require.Equal(tb, int64(i), ev.SequenceNumber, "gapless sequence numbers")
		if i < len(events)-1 {
			require.False(tb, client.IsTerminalEvent(ev.Type), "terminal event %s at %d of %d", ev.Type, i, len(events))
		}
	}
	require.Equal(tb, terminal, events[len(events)-1].Type)
}
