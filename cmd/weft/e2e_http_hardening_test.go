//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store/sqlite"
)

// keyedAnswer is what one keyed request got back: the task id, or nothing
// when its answer was lost.
type keyedAnswer struct {
	status int
	taskID string
}

// keyedRequest is one idempotent request of the crash test: its endpoint,
// key and body, unique per key so that the task it made can be found.
type keyedRequest struct {
	path string
	key  string
	body []byte
}

// send posts r once and returns the task id of a 2xx answer ("" for
// anything else, such as a connection cut by the kill).
func (r keyedRequest) send(ctx context.Context, d *Daemon) keyedAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL(r.path), bytes.NewReader(r.body))
	if err != nil {
		return keyedAnswer{}
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Idempotency-Key", r.key)
	resp, err := d.http.Do(req)
	if err != nil {
		return keyedAnswer{}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode/100 != 2 {
		return keyedAnswer{status: resp.StatusCode}
	}
	var doc struct {
		ID     string `json:"id"`
		TaskID string `json:"task_id"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return keyedAnswer{status: resp.StatusCode}
	}
	id := doc.TaskID // POST /v1/responses answers the response
	if r.path == "/v1/tasks" {
		id = doc.ID
	}
	return keyedAnswer{status: resp.StatusCode, taskID: id}
}

// TestE2EIdempotencyAcrossKills sends many concurrent keyed requests to
// POST /v1/tasks and POST /v1/responses, SIGKILLs the daemon at random
// moments, and after each restart retries every key, whether its answer
// was lost or not. Every key must map to exactly one task, found by its
// unique input, and every answer to a key must name that task: a key whose
// task committed is never freed by recovery, and a retry of a synchronous
// request whose task outlived the crash waits for that same task.
// WEFT_LONG_TESTS=1 runs 12 kills instead of 4; -short runs 2.
func TestE2EIdempotencyAcrossKills(t *testing.T) {
	kills, senders := 4, 24
	switch {
	case os.Getenv("WEFT_LONG_TESTS") == "1":
		kills = 12
	case testing.Short():
		kills = 2
	}
	d := MustRunMain(t)
	d.MustDeployTestkit()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))

	var (
		mu       sync.Mutex
		requests []keyedRequest
		answers  = map[string][]keyedAnswer{} // by key
		lost     int
	)
	record := func(key string, a keyedAnswer) {
		mu.Lock()
		defer mu.Unlock()
		if a.taskID == "" {
			lost++
			return
		}
		answers[key] = append(answers[key], a)
	}
	newRequest := func(round, sender, n int) keyedRequest {
		key := fmt.Sprintf("k-%d-%d-%d", round, sender, n)
		if n%2 == 0 {
			return keyedRequest{
				path: "/v1/tasks", key: key,
				body: MustJSON(t, taskRequest(t, "echo", fmt.Sprintf(`{"key":%q}`, key), "")),
			}
		}
		// Long enough that some are still running at the kill (rand.IntN is
		// safe for the senders' goroutines).
		return keyedRequest{
			path: "/v1/responses", key: key,
			body: MustJSON(t, taskRequest(t, "sleep", fmt.Sprintf(`{"ms":%d,"key":%q}`, 20+rand.IntN(300), key), "")),
		}
	}

	for round := range kills {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for sender := range senders {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					r := newRequest(round, sender, n)
					mu.Lock()
					requests = append(requests, r)
					mu.Unlock()
					record(r.key, r.send(ctx, d))
				}
			})
		}
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond) // a random moment
		d.Kill()
		cancel()
		wg.Wait()
		d.Restart()

		// Retry every key so far, lost answers and all.
		mu.Lock()
		all := append([]keyedRequest(nil), requests...)
		mu.Unlock()
		MustRetryAll(t, d, all, record)
	}

	tasks := d.MustListTasks("")
	perKey := map[string][]string{}
	for _, tk := range tasks {
		var in struct {
			Key string `json:"key"`
		}
		require.NoError(t, json.Unmarshal(tk.Input, &in), "input of %s", tk.ID)
		perKey[in.Key] = append(perKey[in.Key], tk.ID)
	}
	twice := 0
	for _, r := range requests {
		ids := perKey[r.key]
		if len(ids) != 1 {
			twice++
			t.Errorf("key %s (%s) has %d tasks: %v", r.key, r.path, len(ids), ids)
			continue
		}
		for _, a := range answers[r.key] {
			require.Equal(t, ids[0], a.taskID, "an answer to key %s names another task", r.key)
		}
	}
	require.Zero(t, twice, "keys with more than one task")
	require.Len(t, tasks, len(requests), "one task per key")
	t.Logf("%d keyed requests over %d kills: %d answers lost and retried, %d tasks, none twice",
		len(requests), kills, lost, len(tasks))
}

// MustRetryAll sends every request again until each gets a 2xx answer, a few
// at a time, and records the answers.
func MustRetryAll(tb testing.TB, d *Daemon, all []keyedRequest, record func(string, keyedAnswer)) {
	tb.Helper()
	work := make(chan keyedRequest)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 16 {
		wg.Go(func() {
			for r := range work {
				deadline := time.Now().Add(60 * time.Second)
				for {
					a := r.send(tb.Context(), d)
					if a.taskID != "" {
						record(r.key, a)
						break
					}
					if time.Now().After(deadline) {
						select {
						case errs <- fmt.Errorf("key %s: no answer after 60 s (last status %d)", r.key, a.status):
						default:
						}
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	for _, r := range all {
		work <- r
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		require.NoError(tb, err)
	default:
	}
}

// MustJSON encodes v.
func MustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	return data
}

// MustRawDo sends one request with the admin token and extra headers, and
// returns the answer with its whole body.
func MustRawDo(tb testing.TB, d *Daemon, method, path string, header http.Header, body string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, d.URL(path), strings.NewReader(body))
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := d.http.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp, data
}

// MustAPIError checks an error answer's status, code and param.
func MustAPIError(tb testing.TB, resp *http.Response, body []byte, status int, code, param string) {
	tb.Helper()
	require.Equal(tb, status, resp.StatusCode, "%s", body)
	var doc struct {
		Error struct {
			Code  string  `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	require.NoError(tb, json.Unmarshal(body, &doc), "%s", body)
	require.Equal(tb, code, doc.Error.Code, "%s", body)
	if param != "" {
		require.NotNil(tb, doc.Error.Param, "%s", body)
		require.Equal(tb, param, *doc.Error.Param, "%s", body)
	}
}

// TestE2EMetricsLabelsBounded sends thousands of requests with random
// methods and random paths: /metrics must stay small, since every label
// value set is bounded (unknown methods count as "other", paths as the
// route pattern that matched or "unmatched").
func TestE2EMetricsLabelsBounded(t *testing.T) {
	d := MustRunMain(t)
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	work := make(chan [2]string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for mp := range work {
				resp, _ := MustRawDo(t, d, mp[0], mp[1], nil, "")
				require.Less(t, resp.StatusCode, 500)
			}
		})
	}
	for i := range 4000 {
		method := word(6 + rng.IntN(10))
		path := "/" + word(8)
		switch i % 4 {
		case 1:
			path = "/v1/tasks/task_" + word(20)
		case 2:
			method = http.MethodGet
		case 3:
			path = "/v1/" + word(12) + "/" + word(5)
		}
		work <- [2]string{method, path}
	}
	close(work)
	wg.Wait()
	resp, body := MustRawDo(t, d, http.MethodGet, "/metrics", nil, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Logf("/metrics after 4000 requests with random methods and paths: %d bytes", len(body))
	require.Less(t, len(body), 64<<10, "metrics grow with what clients send")
	require.Contains(t, string(body), `method="other"`)
	require.NotContains(t, string(body), `route="/v1/tasks/task_`, "a raw path became a label")
	require.Equal(t, 2, strings.Count(string(body), "weft_http_requests_total{"), "one series per method, route and status")
}

// TestE2EPairingSecretNotStored creates a pairing code under an
// Idempotency-Key: the code must appear nowhere in the data directory's
// files nor in the idempotency_keys table, a replay must not show it, and
// every answer with a secret carries Cache-Control: no-store.
func TestE2EPairingSecretNotStored(t *testing.T) {
	d := MustRunMain(t)
	key := http.Header{"Idempotency-Key": {"pair-once"}}
	resp, body := MustRawDo(t, d, http.MethodPost, "/v1/pairings", key, `{"scopes":["tasks:read"]}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var pairing struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(body, &pairing))
	require.True(t, strings.HasPrefix(pairing.Code, "weftpair-"), pairing.Code)

	replay, replayBody := MustRawDo(t, d, http.MethodPost, "/v1/pairings", key, `{"scopes":["tasks:read"]}`)
	MustAPIError(t, replay, replayBody, http.StatusConflict, "idempotency_secret_not_replayed", "Idempotency-Key")
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.NotContains(t, string(replayBody), pairing.Code)

	// The token of POST /v1/pair is never cached either.
	pair, pairBody := MustRawDo(t, d, http.MethodPost, "/v1/pair", nil, fmt.Sprintf(`{"code":%q,"name":"reader"}`, pairing.Code))
	require.Equal(t, http.StatusCreated, pair.StatusCode, "%s", pairBody)
	require.Equal(t, "no-store", pair.Header.Get("Cache-Control"))
	var paired struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal(pairBody, &paired))
	require.NotEmpty(t, paired.Token)

	_, err := d.Stop()
	require.NoError(t, err)
	secrets := []string{pairing.Code, strings.TrimPrefix(pairing.Code, "weftpair-"), paired.Token}
	require.NoError(t, filepath.WalkDir(d.DataDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range secrets {
			require.NotContains(t, string(data), secret, "a secret is stored in plain text in %s", path)
		}
		return nil
	}))
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.DataDir, sqlite.FileName)+"?mode=ro")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	var n int
	var stored []byte
	require.NoError(t, db.QueryRowContext(t.Context(),
		"SELECT count(*), coalesce(max(body), x'') FROM idempotency_keys WHERE key = 'pair-once'").Scan(&n, &stored))
	require.Equal(t, 1, n)
	require.NotContains(t, string(stored), pairing.Code)
	require.Contains(t, string(stored), "idempotency_secret_not_replayed")
}

// TestE2EFileModes checks every file and directory the daemon writes under
// its data directory: files 0600, directories 0700, whatever the umask it
// was started with.
func TestE2EFileModes(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	tk := d.MustSubmit("echo", `"hi"`, "")
	d.MustWaitStatus(tk.ID, 30*time.Second, "completed")
	check := func() {
		t.Helper()
		files := 0
		require.NoError(t, filepath.WalkDir(d.DataDir, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			if path == d.DataDir {
				return nil // the test's temporary directory
			}
			if e.IsDir() {
				require.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "directory %s", path)
				return nil
			}
			files++
			require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "file %s", path)
			return nil
		}))
		require.Positive(t, files)
	}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal", sqlite.FileName + "-shm"} {
		_, err := os.Stat(filepath.Join(d.DataDir, name))
		require.NoError(t, err, "the database files are there while the daemon runs")
	}
	check()

	// A file left world-readable, by an earlier version say, is narrowed at
	// the next start.
	_, err := d.Stop()
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(d.DataDir, sqlite.FileName), 0o644))
	d.Restart()
	check()
}

// TestE2EExactMemberNames sends request bodies whose member names differ
// from the API's only in case, nested ones included, and bodies that name a
// member twice: every one is 400 invalid_request naming the member.
func TestE2EExactMemberNames(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	input := string(MustJSON(t, taskRequest(t, "echo", "null", "")["input"]))
	cases := []struct {
		path, body, param string
	}{
		{"/v1/tasks", `{"MODULE":"testkit","function":"echo"}`, "MODULE"},
		{"/v1/tasks", `{"Module":"testkit","function":"echo"}`, "Module"},
		{"/v1/responses", `{"module":"testkit","Function":"echo"}`, "Function"},
		{"/v1/tasks", `{"module":"testkit","function":"echo","retry":{"Maximum_Attempts":3}}`, "retry.Maximum_Attempts"},
		{"/v1/tasks", `{"module":"testkit","module":"testkit","function":"echo"}`, "module"},
		{"/v1/tasks", `{"module":"testkit","function":"echo","retry":{"maximum_attempts":1,"maximum_attempts":3}}`, "retry.maximum_attempts"},
		{"/v1/pairings", `{"Scopes":["tasks:read"]}`, "Scopes"},
		{"/v1/pairings", `{"ttl_seconds":60,"ttl_seconds":600}`, "ttl_seconds"},
		{"/v1/pair", `{"CODE":"weftpair-x","name":"n"}`, "CODE"},
	}
	for _, c := range cases {
		resp, body := MustRawDo(t, d, http.MethodPost, c.path, nil, c.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", c.path, c.body, body)
		var doc struct {
			Error struct {
				Code  string  `json:"code"`
				Param *string `json:"param"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &doc))
		require.Equal(t, "invalid_request", doc.Error.Code, "%s: %s", c.body, body)
		require.NotNil(t, doc.Error.Param, "%s: %s", c.body, body)
		require.Equal(t, c.param, *doc.Error.Param, "%s: %s", c.body, body)
	}
	// The input envelope is parsed by the codec, which checks the codec tag
	// first: a member named in another case is no codec tag.
	resp, body := MustRawDo(t, d, http.MethodPost, "/v1/tasks", nil,
		`{"module":"testkit","function":"echo","input":`+strings.Replace(input, `"codec"`, `"CODEC"`, 1)+`}`)
	MustAPIError(t, resp, body, http.StatusUnprocessableEntity, "unsupported_payload_codec", "input")

	// A signal's body too.
	tk := d.MustSubmit("sleep", `{"ms":10}`, "")
	resp, body = MustRawDo(t, d, http.MethodPost, "/v1/tasks/"+tk.ID+"/signals/go", nil, `{"Input":null}`)
	MustAPIError(t, resp, body, http.StatusBadRequest, "invalid_request", "Input")

	// Exact names are still accepted.
	resp, body = MustRawDo(t, d, http.MethodPost, "/v1/tasks", nil,
		`{"module":"testkit","function":"echo","retry":{"maximum_attempts":3},"input":`+input+`}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", body)
}

// TestE2EStatusHygiene checks the headers that go with some statuses: 405
// lists the route's methods in Allow; 429 and 409 idempotency_key_in_flight
// carry Retry-After in seconds.
func TestE2EStatusHygiene(t *testing.T) {
	d := MustRunMain(t)
	d.MustDeployTestkit()
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/v1/tasks", "GET, POST"},
		{http.MethodPatch, "/v1/modules/testkit", "GET, PUT, DELETE"},
		{http.MethodPost, "/healthz", "GET"},
		{"BREW", "/v1/responses", "POST"},
	} {
		resp, body := MustRawDo(t, d, c.method, c.path, nil, "")
		MustAPIError(t, resp, body, http.StatusMethodNotAllowed, "method_not_allowed", "")
		require.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
	}

	// 409 in flight: a synchronous request holds its key while its task runs.
	body := string(MustJSON(t, taskRequest(t, "sleep", `{"ms":1500}`, "")))
	key := http.Header{"Idempotency-Key": {"slow"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL("/v1/responses"), strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Idempotency-Key", "slow")
		if resp, err := d.http.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return len(d.MustListTasks("")) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the first request's task is created")
	resp, data := MustRawDo(t, d, http.MethodPost, "/v1/responses", key, body)
	MustAPIError(t, resp, data, http.StatusConflict, "idempotency_key_in_flight", "Idempotency-Key")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	<-done

	// 429: pairing attempts are rate-limited.
	limited := false
	for range 200 {
		resp, data := MustRawDo(t, d, http.MethodPost, "/v1/pair", nil, `{"code":"weftpair-AAAA","name":"guess"}`)
		if resp.StatusCode == http.StatusTooManyRequests {
			MustAPIError(t, resp, data, http.StatusTooManyRequests, "rate_limited", "")
			secs := resp.Header.Get("Retry-After")
			require.Regexp(t, `^[1-9][0-9]*$`, secs)
			limited = true
			break
		}
	}
	require.True(t, limited, "no 429 after 200 pairing attempts")
}

// TestE2EShutdownEndsStreams opens 20 SSE streams on a long task and sends
// SIGTERM: the daemon must exit promptly, well within its 10 s shutdown
// bound, and every stream must end cleanly (the chunked body terminated,
// not cut).
func TestE2EShutdownEndsStreams(t *testing.T) {
	// No grace: what is measured is how fast open streams let the daemon go.
	d := MustRunMain(t, "--shutdown-grace", "0s")
	d.MustDeployTestkit()
	tk := d.MustSubmit("sleep", `{"ms":600000}`, "")
	const streams = 20
	ended := make(chan error, streams)
	for range streams {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.URL("/v1/tasks/"+tk.ID+"/events"), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := d.http.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		rd := bufio.NewReader(resp.Body)
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "id: 0\n", line, "the stream is open and delivering")
		go func() {
			defer resp.Body.Close()
			_, err := io.Copy(io.Discard, rd)
			ended <- err
		}()
	}
	// And a synchronous request waiting for a long task under a key.
	syncBody := MustJSON(t, taskRequest(t, "sleep", `{"ms":600000}`, "fail"))
	waiting := keyedRequest{path: "/v1/responses", key: "wait-through-shutdown", body: syncBody}
	waited := make(chan keyedAnswer, 1)
	go func() { waited <- waiting.send(context.Background(), d) }()
	var syncTask string
	require.Eventually(t, func() bool {
		for _, other := range d.MustListTasks("") {
			if other.ID != tk.ID {
				syncTask = other.ID
			}
		}
		return syncTask != ""
	}, 10*time.Second, 10*time.Millisecond)

	took, err := d.Stop()
	require.NoError(t, err, "exit status after SIGTERM")
	t.Logf("SIGTERM with %d open SSE streams and a waiting POST /v1/responses: exited in %s", streams, took.Round(time.Millisecond))
	require.Less(t, took, 5*time.Second, "shutdown waited for the SSE streams")
	for range streams {
		require.NoError(t, <-ended, "a stream was cut instead of ended")
	}
	require.Equal(t, http.StatusServiceUnavailable, (<-waited).status, "the waiting request is told the daemon stops")

	// After the restart the same key answers for the same task, which
	// recovery failed (on_restart fail): no second task.
	d.Restart()
	again := waiting.send(t.Context(), d)
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, syncTask, again.taskID)
	require.Len(t, d.MustListTasks(""), 2)
}
