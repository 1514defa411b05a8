package store_test

import (
	"encoding/json"
	"testing"

	"github.com/weft-run/weft/store"
)

func TestRecoveryOf(t *testing.T) {
	cases := []struct {
		status store.Status
		policy store.OnRestart
		want   store.Recovery
		list   func(*store.TaskRecoverResult) int
	}{
		{store.StatusQueued, store.OnRestartRetry, store.Recovery{To: store.StatusQueued, Stay: true}, func(r *store.TaskRecoverResult) int { return r.Queued }},
		{store.StatusLoading, store.OnRestartRetry, store.Recovery{To: store.StatusQueued, ClearCheckpoint: true}, func(r *store.TaskRecoverResult) int { return len(r.Requeued) }},
		{store.StatusRunning, store.OnRestartResume, store.Recovery{To: store.StatusRunning, Resume: true}, func(r *store.TaskRecoverResult) int { return len(r.Resumed) }},
		{store.StatusLoading, store.OnRestartResume, store.Recovery{To: store.StatusQueued}, func(r *store.TaskRecoverResult) int { return len(r.Requeued) }},
		{store.StatusCancelling, store.OnRestartFail, store.Recovery{To: store.StatusCancelled}, func(r *store.TaskRecoverResult) int { return len(r.Cancelled) }},
	}
	for _, c := range cases {
		var res store.TaskRecoverResult
		got, ok := store.RecoveryOf(&store.Task{ID: "t", Status: c.status, OnRestart: c.policy}, &res)
		if !ok || got != c.want || c.list(&res) != 1 {
			t.Errorf("%s/%s: %+v %v, result %+v", c.status, c.policy, got, ok, res)
		}
	}
	var res store.TaskRecoverResult
	got, ok := store.RecoveryOf(&store.Task{ID: "t", Status: store.StatusRunning, OnRestart: store.OnRestartFail}, &res)
	if !ok || got.To != store.StatusFailed || got.Error == nil || got.Error.Code != store.CodeServerRestarted || len(res.Failed) != 1 {
		t.Errorf("running/fail: %+v %v, result %+v", got, ok, res)
	}
	if _, ok := store.RecoveryOf(&store.Task{Status: store.StatusCompleted}, &res); ok {
		t.Error("a finished task is recovered")
	}
}

func TestStatusEventOf(t *testing.T) {
	task := &store.Task{ID: "01J0000000000000000000000T", Status: store.StatusCompleted, Attempt: 1}
	typ, payload, err := store.StatusEventOf(task, store.StatusRunning, "")
	if err != nil || typ != store.EventResponseCompleted {
		t.Fatalf("completed: %s, %v", typ, err)
	}
	var resp store.Response
	if err := json.Unmarshal(payload, &resp); err != nil || resp.TaskID != task.ID || resp.Status != store.StatusCompleted {
		t.Fatalf("completed payload %s: %v", payload, err)
	}
	task.Status = store.StatusLoading
	typ, payload, _ = store.StatusEventOf(task, store.StatusQueued, "why")
	var ev store.StatusEvent
	if err := json.Unmarshal(payload, &ev); err != nil || typ != store.EventStatusChanged ||
		ev != (store.StatusEvent{Status: store.StatusLoading, From: store.StatusQueued, Attempt: 1, Reason: "why"}) {
		t.Fatalf("loading: %s %s: %v", typ, payload, err)
	}
}
