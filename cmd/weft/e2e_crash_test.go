//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// plannedTask is one task a crash test submits.
type plannedTask struct {
	ID       string
	Function string // sleep or count
	Policy   string // fail, retry or resume
	SleepMS  int64
	CountTo  int64
	Every    int64
	Cancel   bool // cancelled just before the kill
}

func (p plannedTask) input() string {
	if p.Function == "count" {
		return fmt.Sprintf(`{"to":%d,"checkpoint_every":%d}`, p.CountTo, p.Every)
	}
	return fmt.Sprintf(`{"ms":%d}`, p.SleepMS)
}

// storedTask is a task as the database held it when the daemon stopped.
type storedTask struct {
	Status     store.Status
	OnRestart  store.OnRestart
	Attempt    int
	Checkpoint int64 // -1: none
	LastSeq    int64
	Events     []string // event types by sequence number
}

var crashPolicies = []string{"fail", "retry", "resume"}

// TestE2ECrashRecovery submits tasks of every on_restart policy, SIGKILLs
// the daemon while they run, restarts it on the same data directory, and
// checks every task against the persistence §11.3 table applied to the
// state the database held at the kill (read from a copy of the files the
// dead process left): none lost, none finished twice, every log gapless
// with one terminal event, and resume tasks continued from their checkpoint.
func TestE2ECrashRecovery(t *testing.T) {
	n, countTo := 200, int64(4000)
	switch {
	case os.Getenv("WEFT_LONG_TESTS") == "1":
		n, countTo = 600, 8000
	case testing.Short():
		n, countTo = 60, 2000
	}
	d := MustRunMain(t)
	d.MustDeployTestkit()

	// The first six are minute-long sleeps cancelled just before the kill,
	// so that some may be caught in cancelling. The others alternate
	// between sleeps of 50 ms to 3 s (the short ones finish before the
	// kill) and counts that checkpoint every 5 steps.
	plan := make([]plannedTask, n)
	for i := range plan {
		p := plannedTask{Policy: crashPolicies[i%3]}
		switch {
		case i < 6:
			p.Function, p.SleepMS, p.Cancel = "sleep", 60_000, true
		case i%2 == 0:
			p.Function, p.SleepMS = "sleep", 50+int64(i*37)%2950
		default:
			p.Function, p.CountTo, p.Every = "count", countTo, 5
		}
		plan[i] = p
	}
	t0 := time.Now()
	mustSubmitPlan(t, d, plan)
	t.Logf("submitted %d tasks in %s", n, time.Since(t0).Round(time.Millisecond))

	// Kill once resume counts are running (and so checkpointing) and some
	// tasks have finished.
	byID := planByID(plan)
	deadline := time.Now().Add(60 * time.Second)
	for {
		running, completed := 0, 0
		for _, tk := range d.MustListTasks("") {
			p := byID[tk.ID]
			switch {
			case tk.Status == "running" && p.Function == "count" && p.Policy == "resume":
				running++
			case tk.Status == "completed":
				completed++
			}
		}
		if running >= 3 && completed >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no resume count running after 60 s (%d running, %d completed)", running, completed)
		time.Sleep(20 * time.Millisecond)
	}
	// A count checkpoints every 5 steps, so the ones seen running have
	// checkpoints by now; a longer wait would let fast machines finish them.
	time.Sleep(50 * time.Millisecond)
	for _, p := range plan {
		if p.Cancel {
			var tk client.Task
			d.MustDo(http.MethodPost, "/v1/tasks/"+p.ID+"/cancel", nil, &tk)
			require.Contains(t, []string{"cancelling", "cancelled"}, tk.Status)
		}
	}
	d.Kill()
	t.Logf("killed %s after the first submit", time.Since(t0).Round(time.Millisecond))

	atKill := MustReadStore(t, d.DataDir)
	logStates(t, "at the kill", atKill)
	require.Len(t, atKill, n, "every acknowledged task is on disk")
	resumedMidRun, checkpointed, failedByPolicy, requeued, finished := 0, 0, 0, 0, 0
	for _, p := range plan {
		s, ok := atKill[p.ID]
		require.True(t, ok, "task %s acknowledged but not on disk", p.ID)
		switch {
		case s.Status.IsTerminal():
			finished++
		case s.Status == store.StatusCancelling:
		case p.Policy == "fail":
			failedByPolicy++
		case p.Policy == "retry" && s.Status != store.StatusQueued:
			requeued++
		case p.Policy == "resume" && s.Status == store.StatusRunning && p.Function == "count":
			resumedMidRun++
			if s.Checkpoint > 0 {
				checkpointed++
			}
		}
	}
	t.Logf("%d resume counts were running at the kill, %d of them past a checkpoint", resumedMidRun, checkpointed)
	require.Positive(t, finished, "some tasks finished before the kill")
	require.Positive(t, failedByPolicy, "some fail tasks were unfinished at the kill")
	require.Positive(t, requeued, "some retry tasks were running at the kill")
	require.Positive(t, resumedMidRun, "some resume counts were mid-run at the kill")

	t1 := time.Now()
	d.Restart()
	MustWaitAllFinished(t, d, n, 120*time.Second)
	t.Logf("all finished %s after the restart", time.Since(t1).Round(time.Millisecond))
	requireRecovered(t, d, plan, atKill)
}

// TestE2EGracefulShutdown stops the daemon with SIGTERM while tasks run,
// without a grace period: it must exit with status 0 within 10 s, leave the
// running tasks unfinished (a plugin call stopped by the shutdown is not a
// task failure), and the next start recovers them by their policy.
func TestE2EGracefulShutdown(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 12
	}
	d := MustRunMain(t, "--shutdown-grace", "0s")
	d.MustDeployTestkit()
	plan := make([]plannedTask, n)
	for i := range plan {
		p := plannedTask{Policy: crashPolicies[i%3]}
		if i%2 == 0 {
			p.Function, p.SleepMS = "sleep", 2500+int64(i)*20
		} else {
			p.Function, p.CountTo, p.Every = "count", 10_000, 5
		}
		plan[i] = p
	}
	mustSubmitPlan(t, d, plan)
	deadline := time.Now().Add(30 * time.Second)
	for len(d.MustListTasks("running")) < n {
		require.True(t, time.Now().Before(deadline), "tasks not all running after 30 s")
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)

	took, err := d.Stop()
	require.NoError(t, err, "weft serve exits with status 0 on SIGTERM")
	require.Less(t, took, 10*time.Second, "weft serve exits within 10 s of SIGTERM")
	t.Logf("exited %s after SIGTERM", took.Round(time.Millisecond))

	atStop := MustReadStore(t, d.DataDir)
	logStates(t, "at the stop", atStop)
	resumedMidRun := 0
	for _, p := range plan {
		s := atStop[p.ID]
		require.NotContains(t, []store.Status{store.StatusFailed, store.StatusCancelled, store.StatusCancelling}, s.Status,
			"task %s (%s, %s): the shutdown must leave it to recovery", p.ID, p.Function, p.Policy)
		if p.Policy == "resume" && p.Function == "count" && s.Status == store.StatusRunning && s.Checkpoint > 0 {
			resumedMidRun++
		}
	}
	require.Positive(t, resumedMidRun, "some resume counts were mid-run at the stop")

	d.Restart()
	MustWaitAllFinished(t, d, n, 120*time.Second)
	requireRecovered(t, d, plan, atStop)
}

// mustSubmitPlan submits plan over HTTP (the tasks to cancel first, in
// order, the rest from 8 goroutines) and records the task ids.
func mustSubmitPlan(tb testing.TB, d *Daemon, plan []plannedTask) {
	tb.Helper()
	ctx := tb.Context()
	submit := func(p *plannedTask) error {
		var tk client.Task
		code, err := d.Do(ctx, http.MethodPost, "/v1/tasks", taskRequest(tb, p.Function, p.input(), p.Policy), &tk)
		if err != nil {
			return err
		}
		if code != http.StatusAccepted || !justCreated(tk.Status) || tk.OnRestart != p.Policy {
			return fmt.Errorf("submit: status %d, task %+v", code, tk)
		}
		p.ID = tk.ID
		return nil
	}
	next := 0
	for ; next < len(plan) && plan[next].Cancel; next++ {
		require.NoError(tb, submit(&plan[next]))
	}
	work := make(chan int)
	errs := make(chan error, len(plan))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if err := submit(&plan[i]); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := next; i < len(plan); i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
}

func planByID(plan []plannedTask) map[string]plannedTask {
	m := make(map[string]plannedTask, len(plan))
	for _, p := range plan {
		m[p.ID] = p
	}
	return m
}

// MustReadStore reads every task and its event log from a copy of the
// database files in dataDir, taken while no daemon runs: the exact state
// the last process left.
func MustReadStore(tb testing.TB, dataDir string) map[string]storedTask {
	tb.Helper()
	dir := tb.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		src, err := os.Open(filepath.Join(dataDir, sqlite.FileName+suffix))
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		require.NoError(tb, err)
		dst, err := os.Create(filepath.Join(dir, sqlite.FileName+suffix))
		require.NoError(tb, err)
		_, err = io.Copy(dst, src)
		require.NoError(tb, err)
		require.NoError(tb, src.Close())
		require.NoError(tb, dst.Close())
	}
	ctx := tb.Context()
	db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, sqlite.FileName)})
	require.NoError(tb, err)
	defer func() { _ = db.Close(context.Background()) }()

	out := map[string]storedTask{}
	cursor := ""
	for {
		tasks, err := db.TaskList(ctx, &store.TaskListParams{Cursor: cursor, Limit: 1000})
		require.NoError(tb, err)
		for _, task := range tasks {
			s := storedTask{Status: task.Status, OnRestart: task.OnRestart, Attempt: task.Attempt, Checkpoint: -1, LastSeq: task.LastSeq}
			if !task.Checkpoint.IsZero() {
				v, err := codec.DecodeFrame(task.Checkpoint.Data)
				require.NoError(tb, err)
				n, ok := v.AsLong()
				require.True(tb, ok, "count checkpoints a long, not %v", v.Kind())
				s.Checkpoint = n
			}
			events, err := db.EventList(ctx, &store.EventListParams{TaskID: task.ID, Limit: 10000})
			require.NoError(tb, err)
			for i, ev := range events {
				require.Equal(tb, int64(i), ev.Seq, "task %s: gapless log on disk", task.ID)
				s.Events = append(s.Events, ev.Type)
			}
			require.Equal(tb, task.LastSeq, int64(len(events)-1), "task %s: last_seq is the last event", task.ID)
			out[task.ID] = s
		}
		if len(tasks) < 1000 {
			return out
		}
		cursor = tasks[len(tasks)-1].ID
	}
}

// logStates logs how many tasks were in each status, by policy.
func logStates(tb testing.TB, when string, tasks map[string]storedTask) {
	tb.Helper()
	counts := map[string]int{}
	for _, s := range tasks {
		counts[fmt.Sprintf("%s/%s", s.Status, s.OnRestart)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, counts[k])
	}
	tb.Logf("tasks %s (status/on_restart): %s", when, strings.Join(parts, " "))
}

// MustWaitAllFinished polls the task list until n tasks exist and all are
// finished.
func MustWaitAllFinished(tb testing.TB, d *Daemon, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tasks := d.MustListTasks("")
		unfinished := map[string]int{}
		for _, tk := range tasks {
			if !store.Status(tk.Status).IsTerminal() {
				unfinished[tk.Status]++
			}
		}
		if len(unfinished) == 0 {
			require.Len(tb, tasks, n, "no task lost, none added")
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("tasks still unfinished after %s: %v", timeout, unfinished)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requireRecovered checks every planned task after the restart against the
// persistence §11.3 table applied to its state at the stop.
func requireRecovered(t testing.TB, d *Daemon, plan []plannedTask, before map[string]storedTask) {
	t.Helper()
	continued := 0
	for _, p := range plan {
		s := before[p.ID]
		task := d.MustTask(p.ID)
		events := d.MustEvents(p.ID)
		what := fmt.Sprintf("task %s (%s %s, on_restart %s, %s at the stop with checkpoint %d)",
			p.ID, p.Function, p.input(), p.Policy, s.Status, s.Checkpoint)

		// One log, gapless from 0, response.created first, exactly one
		// terminal event at its end, agreeing with the task.
		require.NotEmpty(t, events, what)
		require.Equal(t, "response.created", events[0].Type, what)
		terminals := 0
		for i, ev := range events {
			require.Equal(t, int64(i), ev.SequenceNumber, "%s: gapless", what)
			if client.IsTerminalEvent(ev.Type) {
				terminals++
			}
		}
		require.Equal(t, 1, terminals, "%s: exactly one terminal event", what)
		last := events[len(events)-1]
		require.Equal(t, "response."+task.Status, last.Type, "%s: status agrees with the terminal event", what)
		require.Equal(t, last.SequenceNumber, task.LastSequenceNumber, what)
		var resp client.Response
		require.NoError(t, json.Unmarshal(last.Data, &resp), what)
		require.Equal(t, task.Status, resp.Status, "%s: the terminal event carries the response", what)

		// What was written before the stop is never rewritten.
		require.GreaterOrEqual(t, len(events), len(s.Events), what)
		for i, typ := range s.Events {
			require.Equal(t, typ, events[i].Type, "%s: event %d kept", what, i)
		}

		switch {
		case s.Status.IsTerminal():
			require.Equal(t, string(s.Status), task.Status, "%s: finished before the stop, unchanged", what)
			require.Len(t, events, len(s.Events), "%s: no event after its end", what)
		case s.Status == store.StatusCancelling:
			require.Equal(t, "cancelled", task.Status, what)
			require.Len(t, events, len(s.Events)+1, what)
		case p.Policy == "fail":
			require.Equal(t, "failed", task.Status, what)
			require.NotNil(t, task.Error, what)
			require.Equal(t, store.CodeServerRestarted, task.Error.Code, what)
			require.Len(t, events, len(s.Events)+1, "%s: failed by recovery, nothing ran again", what)
		default:
			require.Equal(t, "completed", task.Status, "%s: %+v", what, task.Error)
			next := events[len(s.Events)]
			switch {
			case s.Status == store.StatusQueued:
			case p.Policy == "retry":
				require.Equal(t, "task.status_changed", next.Type, what)
				require.JSONEq(t, `"queued"`, string(jsonField(t, next.Data, "status")), what)
				require.JSONEq(t, `"server_restarted"`, string(jsonField(t, next.Data, "reason")), what)
				require.Greater(t, task.Attempt, s.Attempt, "%s: a new attempt", what)
			case s.Status == store.StatusRunning:
				require.Equal(t, "task.recovered", next.Type, what)
				require.Equal(t, s.Attempt, task.Attempt, "%s: the same attempt continues", what)
			}
		}

		if task.Status == "completed" {
			if p.Function == "sleep" {
				require.JSONEq(t, "null", string(task.Output), what)
				continue
			}
			var out struct {
				Count       int64 `json:"count"`
				ResumedFrom int64 `json:"resumed_from"`
			}
			require.NoError(t, json.Unmarshal(task.Output, &out), what)
			require.Equal(t, p.CountTo, out.Count, what)
			switch {
			case s.Status.IsTerminal() || p.Policy == "retry":
				require.Zero(t, out.ResumedFrom, "%s: from scratch", what)
			case p.Policy == "resume":
				require.Equal(t, max(s.Checkpoint, 0), out.ResumedFrom, "%s: continued from its checkpoint", what)
				if out.ResumedFrom > 0 {
					continued++
				}
			}
		}
	}
	require.Positive(t, continued, "some resume tasks continued from a checkpoint")
	t.Logf("%d tasks checked; %d resume counts continued from their checkpoint", len(plan), continued)
}

// jsonField returns member name of the JSON object data.
func jsonField(tb testing.TB, data json.RawMessage, name string) json.RawMessage {
	tb.Helper()
	var m map[string]json.RawMessage
	require.NoError(tb, json.Unmarshal(data, &m))
	return m[name]
}
