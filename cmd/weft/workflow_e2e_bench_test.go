//go:build unix

package main

import (
	"context"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// BenchmarkWorkflowEndToEnd measures workflows through the real daemon over
// loopback HTTP, the way perf-anchors.md measured Temporal's dev server on
// this machine class (1-activity workflows/s, 1,000 from 32 goroutines;
// p50 and p99 of a workflow of 10 sequential activities): each workflow is
// started with POST /v1/responses, which answers once it finished, with
// durable commits (WAL, synchronous=FULL). It runs once whatever b.N is.
//
//	go test ./cmd/weft -run '^$' -bench BenchmarkWorkflowEndToEnd -benchtime 1x
func BenchmarkWorkflowEndToEnd(b *testing.B) {
	d := MustRunMain(b)
	wasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(b, err)
	require.Equal(b, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/wfbench", wasm, nil))
	run := func(n string) {
		var resp client.Response
		code, err := d.Do(context.Background(), http.MethodPost, "/v1/responses",
			map[string]any{"module": "wfbench", "function": "sequential", "input": mustEnvelopeJSON(b, n)}, &resp)
		if err != nil || code != http.StatusOK || resp.Status != "completed" {
			b.Errorf("workflow: %d %v %s", code, err, resp.Status)
		}
	}
	for range 20 {
		run("1") // warm the instance pool and the caches
	}

	const total, clients = 1000, 32
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= total {
				run("1")
			}
		})
	}
	wg.Wait()
	perSec := total / time.Since(start).Seconds()

	lat := make([]time.Duration, 50)
	for i := range lat {
		s := time.Now()
		run("10")
		lat[i] = time.Since(s)
	}
	slices.Sort(lat)
	b.ReportMetric(perSec, "1-activity-workflows/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50-10-activities")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99-10-activities")
	b.ReportMetric(0, "ns/op")
}
