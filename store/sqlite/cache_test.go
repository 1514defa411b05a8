package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest"
)

// TestCacheStaysExact changes task rows behind the store's back, as no
// process should, and requires the store's next writes to notice instead of
// writing over them: the compare-and-set on status and last_seq catches a
// stale cached row.
func TestCacheStaysExact(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	db := MustOpen(t, path)
	task := storetest.MustRunning(t, db, nil) // the writer now holds its row
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer func() { _ = raw.Close() }()

	// Another writer appends event 3.
	_, err = raw.ExecContext(ctx, `INSERT INTO task_events (task_id, seq, type, payload, created_at) VALUES (?, 3, 'task.log', '{}', 0)`, task.ID)
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, `UPDATE tasks SET last_seq = 3 WHERE id = ?`, task.ID)
	require.NoError(t, err)
	evs, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: store.EventLog}}})
	require.NoError(t, err)
	require.Equal(t, int64(4), evs[0].Seq, "the append saw the hidden event")

	// Another writer moves the task to cancelling.
	payload, err := json.Marshal(store.StatusEvent{Status: store.StatusCancelling, From: store.StatusRunning, Attempt: 1})
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, `INSERT INTO task_events (task_id, seq, type, payload, created_at) VALUES (?, 5, ?, ?, 0)`,
		task.ID, store.EventStatusChanged, string(payload))
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, `UPDATE tasks SET last_seq = 5, status = 'cancelling' WHERE id = ?`, task.ID)
	require.NoError(t, err)
	cur, err := db.TaskTransition(ctx, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
	require.ErrorIs(t, err, store.ErrConflict, "the completion saw the hidden cancel")
	require.Equal(t, store.StatusCancelling, cur.Status)
	storetest.MustTransition(t, db, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusCancelling}, To: store.StatusCancelled})
	storetest.MustCheckLog(t, db, task.ID)
}

// TestFailedJobLeavesNoTrace fails a job after it wrote (a child insert
// whose id is taken, after the parent's journal event) and requires the
// parent's log to be as if the job never ran.
func TestFailedJobLeavesNoTrace(t *testing.T) {
	ctx := t.Context()
	db := MustOpen(t, filepath.Join(t.TempDir(), "weft.db"))
	parent := storetest.MustRunning(t, db, &store.TaskInsertParams{Kind: store.KindWorkflow})
	taken := storetest.MustInsertTask(t, db, nil)
	for range 3 {
		_, err := db.TaskInsert(ctx, &store.TaskInsertParams{
			ID: taken.ID, Module: "m", ModuleDigest: storetest.Digest, Function: "f",
			ParentTaskID: parent.ID, ParentEvents: []store.EventDraft{{Type: "activity.scheduled"}},
		})
		require.ErrorIs(t, err, store.ErrExists)
	}
	evs, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: parent.ID, Events: []store.EventDraft{{Type: store.EventLog}}})
	require.NoError(t, err)
	require.Equal(t, parent.LastSeq+1, evs[0].Seq)
	got := storetest.MustCheckLog(t, db, parent.ID)
	require.Equal(t, parent.LastSeq+1, got.LastSeq)
}
