package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// mustCreateSchedule creates a schedule of testkit's function with the
// admin token and returns it.
func (d *Daemon) mustCreateSchedule(id string, spec map[string]any, function, input string, extra map[string]any) client.Schedule {
	d.tb.Helper()
	req := map[string]any{
		"schedule_id": id, "spec": spec,
		"action": taskRequest(d.tb, function, input, ""),
	}
	for k, v := range extra {
		req[k] = v
	}
	var sc client.Schedule
	require.Equal(d.tb, http.StatusCreated, d.MustDo(http.MethodPost, "/v1/schedules", req, &sc))
	return sc
}

// mustSchedule reads a schedule.
func (d *Daemon) mustSchedule(id string) client.Schedule {
	d.tb.Helper()
	var sc client.Schedule
	d.MustDo(http.MethodGet, "/v1/schedules/"+id, nil, &sc)
	return sc
}

// waitCursor waits until the schedule's cursor reaches at.
func (d *Daemon) waitCursor(id string, at time.Time, timeout time.Duration) client.Schedule {
	d.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sc := d.mustSchedule(id)
		if !sc.LastTickAt.Before(at) {
			return sc
		}
		if time.Now().After(deadline) {
			d.tb.Fatalf("schedule %s: cursor %s after %s, want %s", id, sc.LastTickAt, timeout, at)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ticksAfter lists the nominal ticks of a 1 s interval after from up to
// to, both in whole seconds.
func ticksAfter(from, to time.Time) []string {
	var out []string
	for t := from.Truncate(time.Second).Add(time.Second); !t.After(to); t = t.Add(time.Second) {
		out = append(out, t.UTC().Format(time.RFC3339Nano))
	}
	return out
}

// TestE2EScheduleEverySecondAcrossSIGKILL runs schedules every second
// across a SIGKILL of the daemon: with a catch-up window longer than the
// downtime every nominal tick has exactly one task (each tick's workflow
// id names it: none lost, none doubled); with a shorter window the ticks
// older than it are counted missed and started by no task, and the others
// have one task each. An activity schedule is counted the same way.
func TestE2EScheduleEverySecondAcrossSIGKILL(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	every := map[string]any{"interval_ms": 1000}
	chain := `{"runs":1,"done":0}`
	wide := d.mustCreateSchedule("wide", every, "chain", chain, map[string]any{"overlap_policy": "allow_all", "catchup_window_ms": 60000})
	narrow := d.mustCreateSchedule("narrow", every, "chain", chain, map[string]any{"overlap_policy": "allow_all", "catchup_window_ms": 2000})
	act := d.mustCreateSchedule("act", every, "echo", `"tick"`, map[string]any{"overlap_policy": "allow_all"})

	d.waitCursor("wide", wide.LastTickAt.Add(3*time.Second), 15*time.Second)
	d.Kill()
	killedAt := time.Now()
	time.Sleep(5 * time.Second)
	d.Restart()
	restartedAt := time.Now()
	d.waitCursor("wide", restartedAt.Add(4*time.Second), 20*time.Second)
	for _, id := range []string{"wide", "narrow", "act"} {
		d.MustCLI("schedules", "pause", id)
	}
	final := map[string]client.Schedule{}
	for _, id := range []string{"wide", "narrow", "act"} {
		final[id] = d.mustSchedule(id)
		require.True(t, final[id].Paused)
	}

	runs := map[string]map[string]int{"wide": {}, "narrow": {}}
	echoes := 0
	for _, task := range d.MustListTasks("") {
		if id, tick, ok := strings.Cut(task.WorkflowID, "@"); ok {
			require.Contains(t, runs, id, task.WorkflowID)
			runs[id][tick]++
		}
		if task.Function == "echo" && task.ParentTaskID == "" {
			echoes++
		}
	}

	wantWide := ticksAfter(wide.LastTickAt, final["wide"].LastTickAt)
	require.GreaterOrEqual(t, len(wantWide), 7, "ticks before and after the kill")
	for _, tick := range wantWide {
		require.Equal(t, 1, runs["wide"][tick], "wide: tick %s has exactly one run (killed %s, restarted %s)", tick, killedAt, restartedAt)
	}
	require.Len(t, runs["wide"], len(wantWide), "wide: no run outside the ticks")
	require.Zero(t, final["wide"].Missed)

	wantNarrow := ticksAfter(narrow.LastTickAt, final["narrow"].LastTickAt)
	started := 0
	for _, tick := range wantNarrow {
		require.LessOrEqual(t, runs["narrow"][tick], 1, "narrow: tick %s doubled", tick)
		started += runs["narrow"][tick]
	}
	require.Len(t, runs["narrow"], started, "narrow: no run outside the ticks")
	require.Equal(t, int64(len(wantNarrow)-started), final["narrow"].Missed, "narrow: every tick without a run is counted missed")
	require.GreaterOrEqual(t, final["narrow"].Missed, int64(2), "narrow: the downtime was longer than the window")
	for _, tick := range wantNarrow {
		at, err := time.Parse(time.RFC3339, tick)
		require.NoError(t, err)
		if at.Before(killedAt.Add(-time.Second)) || at.After(restartedAt.Add(2*time.Second)) {
			require.Equal(t, 1, runs["narrow"][tick], "narrow: tick %s, while the daemon ran, has its run", tick)
		}
	}

	wantAct := ticksAfter(act.LastTickAt, final["act"].LastTickAt)
	require.Equal(t, len(wantAct), echoes, "act: one activity task per tick")
	require.Zero(t, final["act"].Missed)
	require.Len(t, final["act"].LastRuns, min(10, len(wantAct)), "the latest runs are kept")
	for _, r := range final["act"].LastRuns {
		require.NotEmpty(t, r.Status)
	}
}

// TestE2EScheduleOverlap runs a slow function every second under skip and
// under allow_all: skip starts a run only once the last one ended and
// counts the ticks it skipped; allow_all starts every tick.
func TestE2EScheduleOverlap(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	every := map[string]any{"interval_ms": 1000}
	skip := d.mustCreateSchedule("skip", every, "sleep", `{"ms":2500}`, nil)
	all := d.mustCreateSchedule("all", every, "sleep", `{"ms":2500}`, map[string]any{"overlap_policy": "allow_all"})
	require.Equal(t, "skip", skip.OverlapPolicy, "the default")
	d.waitCursor("skip", skip.LastTickAt.Add(5*time.Second), 15*time.Second)
	d.waitCursor("all", all.LastTickAt.Add(5*time.Second), 15*time.Second)
	d.MustCLI("schedules", "pause", "skip")
	d.MustCLI("schedules", "pause", "all")
	s, a := d.mustSchedule("skip"), d.mustSchedule("all")
	ticks := int64(len(ticksAfter(skip.LastTickAt, s.LastTickAt)))
	require.GreaterOrEqual(t, s.Skipped, int64(2))
	require.Equal(t, ticks, int64(len(s.LastRuns))+s.Skipped, "skip: every tick started or skipped")
	require.LessOrEqual(t, len(s.LastRuns), 3)
	for i := 1; i < len(s.LastRuns); i++ {
		require.GreaterOrEqual(t, s.LastRuns[i-1].StartedAt.Sub(s.LastRuns[i].StartedAt), 2500*time.Millisecond,
			"skip: no run starts while the last one is open")
	}
	require.Zero(t, a.Skipped)
	require.Len(t, a.LastRuns, len(ticksAfter(all.LastTickAt, a.LastTickAt)), "allow_all: every tick started")
	// Runs overlap: one started (its task was created) before the one
	// ticked before it ended, whatever their statuses are by now.
	overlaps := 0
	for i := 1; i < len(a.LastRuns); i++ { // newest first
		prev := d.MustTask(a.LastRuns[i].TaskID)
		if prev.FinishedAt == nil || a.LastRuns[i-1].StartedAt.Before(*prev.FinishedAt) {
			overlaps++
		}
	}
	require.GreaterOrEqual(t, overlaps, 1, "allow_all: runs overlap")
}

// TestE2EScheduleCLI drives a schedule through the CLI: create (cron in a
// time zone), list, get, pause, trigger, resume and delete.
func TestE2EScheduleCLI(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	out := d.MustCLI("schedules", "create", "testkit", "echo", "--id", "nightly", "--cron", "30 2 * * *",
		"--timezone", "Europe/Paris", "--jitter", "1m", "--input", `{"n":1}`, "--overlap", "buffer_one", "--catchup-window", "0")
	require.Contains(t, out, "nightly")
	require.Contains(t, out, `cron "30 2 * * *" Europe/Paris jitter 1m0s`)
	require.Contains(t, out, "buffer_one")

	var sc client.Schedule
	require.NoError(t, json.Unmarshal([]byte(d.MustCLI("schedules", "get", "nightly", "--json")), &sc))
	require.Equal(t, "Europe/Paris", sc.Spec.Timezone)
	require.Zero(t, sc.CatchupWindowMS)
	require.Len(t, sc.NextRuns, 5)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	for _, n := range sc.NextRuns {
		local := n.In(paris)
		require.Equal(t, 2, local.Hour(), "%s", n)
		require.GreaterOrEqual(t, local.Minute(), 30)
		require.LessOrEqual(t, local.Minute(), 31)
	}

	list := d.MustCLI("schedules", "list")
	require.Contains(t, list, "nightly")
	require.Contains(t, list, "testkit echo")
	require.Contains(t, list, "active")

	out = d.MustCLI("schedules", "pause", "nightly", "--note", "maintenance")
	require.Contains(t, out, "paused")
	require.Contains(t, out, "maintenance")

	taskID := strings.TrimSpace(d.MustCLI("schedules", "trigger", "nightly"))
	require.True(t, strings.HasPrefix(taskID, "task_"), taskID)
	done := d.MustWaitStatus(taskID, 30*time.Second, "completed")
	require.Equal(t, "testkit", done.Module)

	out = d.MustCLI("schedules", "get", "nightly")
	require.Contains(t, out, taskID)
	require.Contains(t, out, "completed")
	require.Contains(t, out, "trigger-")

	// A trigger under an Idempotency-Key is replayed, not started again.
	h := http.Header{"Idempotency-Key": {"trigger-1"}}
	first, b1 := MustRawDo(t, d, http.MethodPost, "/v1/schedules/nightly/trigger", h, "")
	require.Equal(t, http.StatusAccepted, first.StatusCode, "%s", b1)
	again, b2 := MustRawDo(t, d, http.MethodPost, "/v1/schedules/nightly/trigger", h, "")
	require.Equal(t, http.StatusAccepted, again.StatusCode, "%s", b2)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(b1), string(b2))
	require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
	require.NotEmpty(t, again.Header.Get("Location"))

	out = d.MustCLI("schedules", "resume", "nightly")
	require.Contains(t, out, "active")
	require.Contains(t, d.MustCLI("schedules", "delete", "nightly"), "deleted nightly")
	res := d.CLI("schedules", "get", "nightly")
	require.Equal(t, 1, res.Code)
	require.Contains(t, res.Stderr, "not_found")
	res = d.CLI("schedules", "create", "testkit", "echo", "--cron", "@every 1s")
	require.Equal(t, 1, res.Code)
	require.Contains(t, res.Stderr, "spec.cron")
}

// TestE2EScheduleHostileInput sends bad requests to /v1/schedules: each
// gets its code and param and creates nothing.
func TestE2EScheduleHostileInput(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()
	action := `"action":{"module":"testkit","function":"echo"}`
	for _, tc := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"malformed", `{"spec":`, 400, "invalid_request", ""},
		{"not an object", `[1]`, 400, "invalid_request", ""},
		{"wrong type", `{"spec":{"interval_ms":"1s"},` + action + `}`, 400, "invalid_request", "spec.interval_ms"},
		{"unknown field", `{"spec":{"interval_ms":1000},"every":1,` + action + `}`, 400, "invalid_request", "every"},
		{"no spec", `{` + action + `}`, 400, "invalid_request", "spec"},
		{"no action", `{"spec":{"interval_ms":1000}}`, 400, "invalid_request", "action"},
		{"both", `{"spec":{"interval_ms":1000,"cron":"* * * * *"},` + action + `}`, 400, "invalid_request", "spec"},
		{"bad cron", `{"spec":{"cron":"every day"},` + action + `}`, 400, "invalid_request", "spec.cron"},
		{"unknown zone", `{"spec":{"cron":"@daily","timezone":"Moon/Base"},` + action + `}`, 400, "invalid_request", "spec.timezone"},
		{"short interval", `{"spec":{"interval_ms":999},` + action + `}`, 400, "invalid_request", "spec.interval_ms"},
		{"jitter", `{"spec":{"interval_ms":1000,"jitter_ms":5000},` + action + `}`, 400, "invalid_request", "spec.jitter_ms"},
		{"overlap", `{"spec":{"interval_ms":1000},"overlap_policy":"queue",` + action + `}`, 400, "invalid_request", "overlap_policy"},
		{"window", `{"spec":{"interval_ms":1000},"catchup_window_ms":-1,` + action + `}`, 400, "invalid_request", "catchup_window_ms"},
		{"id", `{"schedule_id":"a\u0001b","spec":{"interval_ms":1000},` + action + `}`, 400, "invalid_request", "schedule_id"},
		{"long id", `{"schedule_id":"` + strings.Repeat("x", 201) + `","spec":{"interval_ms":1000},` + action + `}`, 400, "invalid_request", "schedule_id"},
		{"workflow id", `{"spec":{"interval_ms":1000},"action":{"module":"testkit","function":"echo","workflow_id":"w"}}`, 400, "invalid_request", "action.workflow_id"},
		{"no module", `{"spec":{"interval_ms":1000},"action":{"module":"nope","function":"echo"}}`, 404, "module_not_found", ""},
		{"bad input", `{"spec":{"interval_ms":1000},"action":{"module":"testkit","function":"echo","input":{"codec":"json","blob":""}}}`, 422, "unsupported_payload_codec", "action.input"},
		{"start time", `{"spec":{"interval_ms":1000,"start_at":"yesterday"},` + action + `}`, 400, "invalid_request", "spec.start_at"},
		{"oversized", `{"note":"` + strings.Repeat("x", 5<<20) + `"}`, 413, "payload_too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := MustRawDo(t, d, http.MethodPost, "/v1/schedules", nil, tc.body)
			MustAPIError(t, resp, body, tc.status, tc.code, tc.param)
		})
	}
	var list client.List[client.Schedule]
	d.MustDo(http.MethodGet, "/v1/schedules", nil, &list)
	require.Empty(t, list.Data, "no bad request created a schedule")

	d.mustCreateSchedule("mine", map[string]any{"cron": "@daily"}, "echo", `1`, nil)
	resp, body := MustRawDo(t, d, http.MethodPost, "/v1/schedules", nil, `{"schedule_id":"mine","spec":{"cron":"@daily"},`+action+`}`)
	MustAPIError(t, resp, body, 409, "schedule_exists", "schedule_id")

	// Idempotent create: the same key and body replay the 201.
	h := http.Header{"Idempotency-Key": {"k1"}}
	req := `{"schedule_id":"idem","spec":{"cron":"@daily"},` + action + `}`
	first, b1 := MustRawDo(t, d, http.MethodPost, "/v1/schedules", h, req)
	require.Equal(t, 201, first.StatusCode, "%s", b1)
	again, b2 := MustRawDo(t, d, http.MethodPost, "/v1/schedules", h, req)
	require.Equal(t, 201, again.StatusCode, "%s", b2)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(b1), string(b2))
	require.Equal(t, "/v1/schedules/idem", again.Header.Get("Location"))

	// Another client sees none of the admin's schedules; a read-only
	// token may read but not write; no token is 401.
	_, other := d.mustPairClient("other", map[string]any{"scopes": []string{"tasks:read", "tasks:write", "modules:read"}})
	_, reader := d.mustPairClient("reader", map[string]any{"scopes": []string{"tasks:read"}})
	for _, path := range []string{"/v1/schedules/mine", "/v1/schedules/mine/pause", "/v1/schedules/mine/trigger"} {
		method := http.MethodGet
		if strings.Count(path, "/") == 4 {
			method = http.MethodPost
		}
		code, err := d.DoToken(t.Context(), other, method, path, nil, nil)
		require.Error(t, err)
		require.Equal(t, 404, code, "%s %s: %v", method, path, err)
	}
	code, err := d.DoToken(t.Context(), other, http.MethodDelete, "/v1/schedules/mine", nil, nil)
	require.Equal(t, 404, code, "%v", err)
	var otherList client.List[client.Schedule]
	_, err = d.DoToken(t.Context(), other, http.MethodGet, "/v1/schedules", nil, &otherList)
	require.NoError(t, err)
	require.Empty(t, otherList.Data)
	// The other client may take the same id for its own schedule.
	code, err = d.DoToken(t.Context(), other, http.MethodPost, "/v1/schedules", []byte(`{"schedule_id":"mine","spec":{"cron":"@daily"},`+action+`}`), nil)
	require.NoError(t, err)
	require.Equal(t, 201, code)

	code, _ = d.DoToken(t.Context(), reader, http.MethodPost, "/v1/schedules", []byte(`{"spec":{"cron":"@daily"},`+action+`}`), nil)
	require.Equal(t, 403, code)
	code, _ = d.DoToken(t.Context(), reader, http.MethodPost, "/v1/schedules/mine/pause", nil, nil)
	require.Equal(t, 403, code)
	code, _ = d.DoToken(t.Context(), reader, http.MethodDelete, "/v1/schedules/mine", nil, nil)
	require.Equal(t, 403, code)
	code, err = d.DoToken(t.Context(), reader, http.MethodGet, "/v1/schedules", nil, nil)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, _ = d.DoToken(t.Context(), "", m, "/v1/schedules", nil, nil)
		require.Equal(t, 401, code)
	}

	// Pages.
	for i := range 3 {
		d.mustCreateSchedule(fmt.Sprintf("p%d", i), map[string]any{"cron": "@daily"}, "echo", `1`, nil)
	}
	var page client.List[client.Schedule]
	d.MustDo(http.MethodGet, "/v1/schedules?limit=2", nil, &page)
	require.Len(t, page.Data, 2)
	require.True(t, page.HasMore)
	d.MustDo(http.MethodGet, "/v1/schedules?limit=2&cursor="+page.NextCursor, nil, &page)
	require.Len(t, page.Data, 2)
	resp, body = MustRawDo(t, d, http.MethodGet, "/v1/schedules?limit=0", nil, "")
	MustAPIError(t, resp, body, 400, "invalid_request", "limit")
}

// TestE2EScheduleTwoHostsPostgres runs a schedule every second on two
// hosts of one PostgreSQL store, both running their schedule loops, and
// kills one of them with SIGKILL mid-way: every nominal tick has exactly
// one run (the tick's compare-and-set lets one host start it), before and
// after the kill.
func TestE2EScheduleTwoHostsPostgres(t *testing.T) {
	t.Parallel()
	dsn := MustOwnedDatabase(t)
	hosts := MustRunHosts(t, 2, dsn)
	hosts[0].MustDeployTestkit()
	sc := hosts[0].mustCreateSchedule("pg", map[string]any{"interval_ms": 1000}, "chain", `{"runs":1,"done":0}`,
		map[string]any{"overlap_policy": "allow_all"})
	hosts[1].waitCursor("pg", sc.LastTickAt.Add(4*time.Second), 20*time.Second)
	hosts[0].Kill()
	killedAt := time.Now()
	hosts[1].waitCursor("pg", killedAt.Add(3*time.Second), 20*time.Second)
	hosts[1].MustCLI("schedules", "pause", "pg")
	final := hosts[1].mustSchedule("pg")

	runs := map[string]int{}
	for _, task := range hosts[1].MustListTasks("") {
		if _, tick, ok := strings.Cut(task.WorkflowID, "pg@"); ok {
			runs[tick]++
		}
	}
	want := ticksAfter(sc.LastTickAt, final.LastTickAt)
	require.GreaterOrEqual(t, len(want), 7)
	for _, tick := range want {
		require.Equal(t, 1, runs[tick], "tick %s has exactly one run (host 1 killed at %s)", tick, killedAt)
	}
	require.Len(t, runs, len(want))
	require.Zero(t, final.Missed)
}
