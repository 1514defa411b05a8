//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// mustPairClient pairs a new client named name through the admin's
// POST /v1/pairings and POST /v1/pair, and returns its id and token.
func (d *Daemon) mustPairClient(name string, extra map[string]any) (string, string) {
	d.tb.Helper()
	body := map[string]any{}
	for k, v := range extra {
		body[k] = v
	}
	var pairing struct {
		Code string `json:"code"`
	}
	require.Equal(d.tb, http.StatusCreated, d.MustDo(http.MethodPost, "/v1/pairings", body, &pairing))
	var paired struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	code, err := d.DoToken(d.tb.Context(), "", http.MethodPost, "/v1/pair", map[string]any{"code": pairing.Code, "name": name}, &paired)
	require.NoError(d.tb, err)
	require.Equal(d.tb, http.StatusCreated, code)
	return paired.ClientID, paired.Token
}

// mustSubmitAs starts testkit's function with a JSON input as the client of
// token, with extra request members, and returns the 202 task.
func (d *Daemon) mustSubmitAs(token, function, input string, extra map[string]any) client.Task {
	d.tb.Helper()
	req := taskRequest(d.tb, function, input, "")
	for k, v := range extra {
		req[k] = v
	}
	var t client.Task
	code, err := d.DoToken(d.tb.Context(), token, http.MethodPost, "/v1/tasks", req, &t)
	require.NoError(d.tb, err)
	require.Equal(d.tb, http.StatusAccepted, code)
	return t
}

// TestE2EFairWorkers: client A submits more spin tasks (busy loops) than the
// daemon has workers; client B's echo, submitted after them, still finds a
// worker and completes while every one of A's spins runs or waits, and A
// never holds more workers than the per-client ceiling (workers less a
// reserve).
func TestE2EFairWorkers(t *testing.T) {
	t.Parallel()
	const workers = 4
	d := MustRunMain(t, "--workers", "4")
	d.MustDeployTestkit()
	_, tokenA := d.mustPairClient("client-a", nil)
	_, tokenB := d.mustPairClient("client-b", nil)

	var spins []string
	for range workers + 2 {
		spins = append(spins, d.mustSubmitAs(tokenA, "spin", "null", map[string]any{"timeout_ms": 120_000}).ID)
	}
	// A's spins take what A may take: wait until they settled.
	ceiling := workers - 1
	deadline := time.Now().Add(30 * time.Second)
	for d.countStatus(spins, "running") < ceiling {
		require.True(t, time.Now().Before(deadline), "A's spins did not start")
		time.Sleep(20 * time.Millisecond)
	}

	echo := d.mustSubmitAs(tokenB, "echo", `{"from":"b"}`, nil)
	var done client.Task
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, err := d.DoToken(t.Context(), tokenB, http.MethodGet, "/v1/tasks/"+echo.ID, nil, &done)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		if done.Status == "completed" {
			break
		}
		require.True(t, time.Now().Before(deadline), "B's echo is %s while A's spins hold the workers", done.Status)
		time.Sleep(20 * time.Millisecond)
	}
	require.JSONEq(t, `{"from":"b"}`, string(done.Output))
	running := d.countStatus(spins, "running")
	queued := d.countStatus(spins, "queued")
	require.Equal(t, len(spins), running+queued, "A's spins still run or wait")
	require.LessOrEqual(t, running, ceiling, "A holds at most the per-client ceiling of workers")
	t.Logf("B's echo completed with %d of A's %d spins running on %d workers", running, len(spins), workers)
}

// countStatus counts the tasks of ids in status. It reads them in one
// listing, one snapshot of the store: reading them one by one could see a
// task still running and, later, the task that took its place running too.
func (d *Daemon) countStatus(ids []string, status string) int {
	d.tb.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	page, err := d.Client.TaskList(d.tb.Context(), &client.TaskListParams{Status: status, Limit: 100})
	require.NoError(d.tb, err)
	require.Empty(d.tb, page.NextCursor, "more than one page of %s tasks", status)
	n := 0
	for _, t := range page.Data {
		if want[t.ID] {
			n++
		}
	}
	return n
}

// peakResident resets the peak resident set size of process pid and
// returns a function that reads how far it rose since (VmHWM less the
// VmRSS at the reset, from /proc/PID/status).
func peakResident(tb testing.TB, pid int) func() int64 {
	tb.Helper()
	require.NoError(tb, os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0))
	base := procStatus(tb, pid, "VmRSS:")
	return func() int64 { return procStatus(tb, pid, "VmHWM:") - base }
}

// procStatus reads one size field of /proc/PID/status, in bytes.
func procStatus(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(tb, err)
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// bigInput is the envelope of a string of n bytes.
func bigInput(tb testing.TB, n int) codec.Envelope {
	tb.Helper()
	env, err := codec.EncodeEnvelope(codec.String(strings.Repeat("x", n)))
	require.NoError(tb, err)
	return env
}

// TestE2EReadMemory stores tasks with 2.5 MiB inputs (and outputs: echo)
// and reads them back over the real binary: a list page carries no
// payloads unless asked, a page with payloads ends early at the byte
// budget and its cursors still reach every task once, a single GET omits
// the projection of a large payload but keeps its envelope, and the
// daemon's peak resident memory (VmHWM) stays bounded for a full list, one
// GET and 64 concurrent GETs.
func TestE2EReadMemory(t *testing.T) {
	t.Parallel()
	const n, size = 12, 5 << 19 // 2.5 MiB
	d := MustRunMain(t)
	d.MustDeployTestkit()
	env := bigInput(t, size)
	var ids []string
	for range n {
		var tk client.Task
		req := map[string]any{"module": "testkit", "function": "echo", "input": env}
		require.Equal(t, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", req, &tk))
		ids = append(ids, tk.ID)
	}
	for _, id := range ids {
		d.MustWaitStatus(id, 60*time.Second, "completed")
	}
	pid := d.cmd.Process.Pid

	// A page without payloads reads none.
	peak := peakResident(t, pid)
	var bare struct {
		Data    []map[string]json.RawMessage `json:"data"`
		HasMore bool                         `json:"has_more"`
	}
	d.MustDo(http.MethodGet, "/v1/tasks?limit=1000", nil, &bare)
	require.Len(t, bare.Data, n)
	require.False(t, bare.HasMore)
	for _, item := range bare.Data {
		for _, member := range []string{"input_envelope", "input", "output_envelope", "output"} {
			_, has := item[member]
			require.False(t, has, "a task of a page without payloads has no %s", member)
		}
		_, has := item["status"]
		require.True(t, has)
	}
	listPeak := peak()

	// With payloads, pages end at the byte budget (4 MiB: one or two
	// tasks of 5 MiB of payloads each) and the cursors reach every task.
	seen := map[string]int{}
	pages := 0
	cursor := ""
	for {
		path := "/v1/tasks?limit=1000&include=payloads"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page struct {
			Data []struct {
				ID            string          `json:"id"`
				InputEnvelope codec.Envelope  `json:"input_envelope"`
				Omitted       bool            `json:"input_projection_omitted"`
				Input         json.RawMessage `json:"input"`
			} `json:"data"`
			HasMore    bool   `json:"has_more"`
			NextCursor string `json:"next_cursor"`
		}
		d.MustDo(http.MethodGet, path, nil, &page)
		pages++
		require.NotEmpty(t, page.Data)
		require.LessOrEqual(t, len(page.Data), 1, "a page stops once it passes 4 MiB")
		for _, item := range page.Data {
			seen[item.ID]++
			require.Equal(t, env, item.InputEnvelope, "the envelope is whole")
			require.True(t, item.Omitted)
			require.JSONEq(t, "null", string(item.Input))
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	require.Len(t, seen, n)
	for id, c := range seen {
		require.Equal(t, 1, c, "task %s listed once", id)
	}

	// One GET: the envelope, no projection of 2.5 MiB.
	peak = peakResident(t, pid)
	var one map[string]json.RawMessage
	d.MustDo(http.MethodGet, "/v1/tasks/"+ids[0], nil, &one)
	onePeak := peak()
	var gotEnv codec.Envelope
	require.NoError(t, json.Unmarshal(one["input_envelope"], &gotEnv))
	require.Equal(t, env, gotEnv)
	require.NoError(t, json.Unmarshal(one["output_envelope"], &gotEnv))
	require.Equal(t, env, gotEnv)
	require.JSONEq(t, "true", string(one["input_projection_omitted"]))
	require.JSONEq(t, "true", string(one["output_projection_omitted"]))
	require.JSONEq(t, "null", string(one["input"]))

	// 64 concurrent GETs: each answers whole, or 503 server_busy with
	// Retry-After when too many bytes are in flight.
	peak = peakResident(t, pid)
	var wg sync.WaitGroup
	var ok, busy atomic.Int64
	for i := range 64 {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.URL("/v1/tasks/"+ids[i%n]), nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+d.Token)
			resp, err := d.http.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Error(err)
				return
			}
			switch resp.StatusCode {
			case http.StatusOK:
				var doc struct {
					InputEnvelope codec.Envelope `json:"input_envelope"`
				}
				if err := json.Unmarshal(body, &doc); err != nil || doc.InputEnvelope != env {
					t.Errorf("GET %d: a whole document: %v", i, err)
				}
				ok.Add(1)
			case http.StatusServiceUnavailable:
				if !strings.Contains(string(body), `"server_busy"`) || resp.Header.Get("Retry-After") == "" {
					t.Errorf("GET %d: 503 %s", i, body)
				}
				busy.Add(1)
			default:
				t.Errorf("GET %d: %d %s", i, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	manyPeak := peak()
	require.Positive(t, ok.Load())
	t.Logf("stored payloads per task %d MiB; VmHWM rise: list %d MiB, one GET %d MiB, 64 concurrent GETs %d MiB (%d ok, %d busy)",
		2*size>>20, listPeak>>20, onePeak>>20, manyPeak>>20, ok.Load(), busy.Load())
	require.Less(t, manyPeak, int64(1<<30), "64 concurrent GETs of 5 MiB tasks stay well under 1 GiB")
	require.Less(t, onePeak, int64(64<<20), "one GET of a 5 MiB task costs a small multiple of it")
	require.Less(t, listPeak, int64(64<<20), "a list without payloads reads none")
}

// TestE2EMemoryCeilings: a non-admin client may not ask for more memory than
// the client ceiling (422 memory_limit_too_high), nobody may ask for more
// than the whole memory budget, and tasks whose limits do not fit the
// budget together wait in the queue instead of starting.
func TestE2EMemoryCeilings(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--memory-budget", strconv.Itoa(192<<20), "--client-memory-limit", strconv.Itoa(128<<20))
	d.MustDeployTestkit()
	clientID, token := d.mustPairClient("small", nil)

	refused := func(tok string, limit int64, want string) {
		t.Helper()
		req := taskRequest(t, "echo", "null", "")
		req["memory_limit_bytes"] = limit
		var raw json.RawMessage
		code, err := d.DoToken(t.Context(), tok, http.MethodPost, "/v1/tasks", req, &raw)
		require.Equal(t, http.StatusUnprocessableEntity, code)
		require.ErrorContains(t, err, `"code":"memory_limit_too_high"`)
		require.ErrorContains(t, err, `"param":"memory_limit_bytes"`)
		require.ErrorContains(t, err, want)
	}
	refused(token, 256<<20, "ceiling of 134217728 bytes")
	refused(d.Token, 256<<20, "memory budget of 201326592 bytes")
	ok := d.mustSubmitAs(token, "echo", `"fits"`, map[string]any{"memory_limit_bytes": 128 << 20})
	require.Equal(t, "completed", d.MustWaitStatus(ok.ID, 30*time.Second, "completed").Status)

	// The admin raises this client's ceiling: PATCH /v1/clients/{id}.
	var client struct {
		MaxMemoryLimitBytes int64 `json:"max_memory_limit_bytes"`
	}
	d.MustDo(http.MethodPatch, "/v1/clients/"+clientID, map[string]any{"max_memory_limit_bytes": 160 << 20}, &client)
	require.Equal(t, int64(160<<20), client.MaxMemoryLimitBytes)
	code, err := d.DoToken(t.Context(), token, http.MethodPatch, "/v1/clients/"+clientID, map[string]any{"max_memory_limit_bytes": 1 << 30}, nil)
	require.Equal(t, http.StatusForbidden, code, "only an admin sets ceilings")
	require.Error(t, err)
	raised := d.mustSubmitAs(token, "echo", `"raised"`, map[string]any{"memory_limit_bytes": 150 << 20})
	require.Equal(t, "completed", d.MustWaitStatus(raised.ID, 30*time.Second, "completed").Status)
	refused(token, 170<<20, "ceiling of 167772160 bytes")

	// Three tasks of 96 MiB: two fit the 192 MiB budget at once.
	var ids []string
	for range 3 {
		ids = append(ids, d.mustSubmitAs(d.Token, "sleep", `{"ms":1500}`, map[string]any{"memory_limit_bytes": 96 << 20}).ID)
	}
	maxRunning := 0
	deadline := time.Now().Add(60 * time.Second)
	for d.countStatus(ids, "completed") < len(ids) {
		maxRunning = max(maxRunning, d.countStatus(ids, "running"))
		require.True(t, time.Now().Before(deadline), "the tasks did not finish")
		time.Sleep(20 * time.Millisecond)
	}
	require.LessOrEqual(t, maxRunning, 2, "at most two 96 MiB tasks run within a 192 MiB budget")
	require.Positive(t, maxRunning)
}

// signalAs sends signal name with a JSON value to task id and returns the
// status, the error body and the Retry-After header.
func (d *Daemon) signalAs(id, name string, value codec.Value) (int, string, string) {
	d.tb.Helper()
	env, err := codec.EncodeEnvelope(value)
	require.NoError(d.tb, err)
	body, err := json.Marshal(map[string]any{"input": env})
	require.NoError(d.tb, err)
	req, err := http.NewRequestWithContext(d.tb.Context(), http.MethodPost, d.URL("/v1/tasks/"+id+"/signals/"+name), strings.NewReader(string(body)))
	require.NoError(d.tb, err)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := d.http.Do(req)
	require.NoError(d.tb, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(d.tb, err)
	return resp.StatusCode, string(data), resp.Header.Get("Retry-After")
}

// countEvents counts the events of type typ in task id's log.
func (d *Daemon) countEvents(id, typ string) int {
	d.tb.Helper()
	n := 0
	for _, ev := range d.MustEvents(id) {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// TestE2EPendingSignals: a workflow that waits for "done" gets signals of
// another name, which stay pending: past the count or byte bound they are
// refused with 429 signal_limit_exceeded and Retry-After, and the daemon's
// memory does not grow with the refused ones. A workflow that consumes its
// signals gets every one a client retries, each delivered once.
func TestE2EPendingSignals(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t, "--max-pending-signals", "3", "--max-pending-signal-bytes", strconv.Itoa(2<<20))
	wasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/wfbench", wasm, nil))

	start := func(fn, input string) string {
		v, err := codec.ParseProjection([]byte(input))
		require.NoError(t, err)
		env, err := codec.EncodeEnvelope(v)
		require.NoError(t, err)
		var tk client.Task
		require.Equal(t, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", map[string]any{"module": "wfbench", "function": fn, "input": env}, &tk))
		return tk.ID
	}
	id := start("wait", "null")
	d.MustWaitEvent(id, "signal.waiting", 1, 30*time.Second)

	big := codec.String(strings.Repeat("s", 900<<10))
	code, body, _ := d.signalAs(id, "other", big)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body, _ = d.signalAs(id, "other", big)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body, retry := d.signalAs(id, "other", big)
	require.Equal(t, http.StatusTooManyRequests, code, "a third 900 KiB signal passes 2 MiB pending")
	require.Contains(t, body, `"code":"signal_limit_exceeded"`)
	require.NotEmpty(t, retry)
	code, body, _ = d.signalAs(id, "other", codec.Long(1))
	require.Equal(t, http.StatusAccepted, code, body)
	code, body, _ = d.signalAs(id, "other", codec.Long(2))
	require.Equal(t, http.StatusTooManyRequests, code, "a fourth signal passes 3 pending")
	require.Contains(t, body, "3 signals")

	rss := procStatus(t, d.cmd.Process.Pid, "VmRSS:")
	for range 30 {
		code, _, _ := d.signalAs(id, "other", big)
		require.Equal(t, http.StatusTooManyRequests, code)
	}
	grown := procStatus(t, d.cmd.Process.Pid, "VmRSS:") - rss
	t.Logf("30 refused signals of 900 KiB: VmRSS grew %d MiB", grown>>20)
	require.Less(t, grown, int64(64<<20), "refused signals cost the daemon nothing to keep")
	require.Equal(t, 3, d.countEvents(id, "signal.received"), "exactly the accepted signals are in the log")

	// A workflow that consumes each tick makes room for the next.
	wf := start("fanout_wait", "1")
	d.MustWaitEvent(wf, "signal.waiting", 1, 30*time.Second)
	const ticks = 12
	sent := 0
	deadline := time.Now().Add(60 * time.Second)
	for sent < ticks+1 {
		v := codec.String("tick")
		if sent == ticks {
			v = codec.String("stop")
		}
		code, body, _ := d.signalAs(wf, "tick", v)
		switch code {
		case http.StatusAccepted:
			sent++
		case http.StatusTooManyRequests:
			require.True(t, time.Now().Before(deadline), "ticks refused for a minute")
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("signal: %d %s", code, body)
		}
	}
	d.MustWaitStatus(wf, 60*time.Second, "completed")
	require.Equal(t, ticks+1, d.countEvents(wf, "signal.received"), "every accepted signal delivered once")
}
