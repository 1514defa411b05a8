//go:build linux

package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkWaitingWorkflowsMemory compares the resident memory of a daemon
// (the real binary) holding 10,000 workflows that wait for a signal with
// that of one that ran 10,000 tasks to completion, both with module wfbench
// and the same submission path: a waiting workflow costs its rows, not its
// memory. It runs once whatever b.N is.
//
//	go test ./cmd/weft -run '^$' -bench BenchmarkWaitingWorkflowsMemory -benchtime 1x
func BenchmarkWaitingWorkflowsMemory(b *testing.B) {
	const n = 10_000
	waiting := residentAfter(b, "wait", n, func(db *sql.DB) (bool, error) {
		var c int
		err := db.QueryRow("SELECT count(*) FROM workflow_waits").Scan(&c)
		return c == n, err
	})
	finished := residentAfter(b, "echo", n, func(db *sql.DB) (bool, error) {
		var c int
		err := db.QueryRow("SELECT count(*) FROM tasks WHERE status = 'completed'").Scan(&c)
		return c == n, err
	})
	b.ReportMetric(float64(waiting.base)/(1<<20), "MiB-idle-daemon")
	b.ReportMetric(float64(waiting.rss)/(1<<20), "MiB-10k-waiting")
	b.ReportMetric(float64(finished.rss)/(1<<20), "MiB-10k-finished")
	b.ReportMetric(float64(waiting.rss-waiting.base)/n, "B/waiting-workflow")
	b.ReportMetric(float64(finished.rss-finished.base)/n, "B/finished-task")
	b.ReportMetric(0, "ns/op")
}

// rss is what residentAfter measured.
type rss struct{ base, rss int64 }

// residentAfter starts a daemon, deploys wfbench, measures its resident
// memory, submits n tasks of function fn from 16 clients, waits until done
// reports true on the database, lets the daemon settle, and measures again.
func residentAfter(b *testing.B, fn string, n int, done func(*sql.DB) (bool, error)) rss {
	b.Helper()
	d := MustRunMain(b)
	wasm, err := os.ReadFile(wfbenchWasm)
	require.NoError(b, err)
	require.Equal(b, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/wfbench", wasm, nil))
	settle := func() { time.Sleep(3 * time.Second) }
	settle()
	var out rss
	out.base = residentOf(b, d.cmd.Process.Pid)

	body := map[string]any{"module": "wfbench", "function": fn, "input": mustEnvelopeJSON(b, "1")}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				code, err := d.Do(context.Background(), http.MethodPost, "/v1/tasks", body, nil)
				if err != nil || code != http.StatusAccepted {
					b.Errorf("submit: %d %v", code, err)
					return
				}
			}
		})
	}
	wg.Wait()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.DataDir, "weft.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	require.NoError(b, err)
	defer func() { _ = db.Close() }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ok, err := done(db)
		require.NoError(b, err)
		if ok {
			break
		}
		require.True(b, time.Now().Before(deadline), "%s tasks did not settle", fn)
		time.Sleep(200 * time.Millisecond)
	}
	settle()
	out.rss = residentOf(b, d.cmd.Process.Pid)
	_, err = d.Stop()
	require.NoError(b, err)
	return out
}

// residentOf reads the resident set size of process pid from /proc.
func residentOf(tb testing.TB, pid int) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(tb, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
