//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
// WEFT_LONG_TESTS=1 runs more kills.
func TestE2EIdempotencyAcrossKills(t *testing.T) {
	kills, senders := 4, 24
	if os.Getenv("WEFT_LONG_TESTS") == "1" {
		kills = 12
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
			return keyedRequest{path: "/v1/tasks", key: key,
				body: mustJSON(t, taskRequest(t, "echo", fmt.Sprintf(`{"key":%q}`, key), ""))}
		}
		// Long enough that some are still running at the kill.
		return keyedRequest{path: "/v1/responses", key: key,
			body: mustJSON(t, taskRequest(t, "sleep", fmt.Sprintf(`{"ms":%d,"key":%q}`, 20+rng.IntN(300), key), ""))}
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
		retryAll(t, d, all, record)
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

// retryAll sends every request again until each gets a 2xx answer, a few
// at a time, and records the answers.
func retryAll(t *testing.T, d *Daemon, all []keyedRequest, record func(string, keyedAnswer)) {
	t.Helper()
	work := make(chan keyedRequest)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 16 {
		wg.Go(func() {
			for r := range work {
				deadline := time.Now().Add(60 * time.Second)
				for {
					a := r.send(t.Context(), d)
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
		require.NoError(t, err)
	default:
	}
}

// mustJSON encodes v.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	return data
}
