//go:build linux

package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// withFileSizeLimit runs fn while every file write of this process fails
// with EFBIG (RLIMIT_FSIZE 0), as when a disk is full, and restores the
// limit after.
func withFileSizeLimit(t *testing.T, fn func()) {
	t.Helper()
	signal.Ignore(syscall.SIGXFSZ)
	var old unix.Rlimit
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, nil, &old))
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: old.Max}, nil))
	defer func() {
		require.NoError(t, unix.Prlimit(0, unix.RLIMIT_FSIZE, &old, nil))
	}()
	fn()
}

// TestWriteFailureRollsBack fills the "disk" under a running store: every
// file write fails with EFBIG. The writes of that time fail, alone and in
// batches, and change nothing; the writer goroutine survives, and once
// writes succeed again the same transitions commit, each task's log
// gapless with one terminal event, and the database passes its
// integrity check after a reopen.
func TestWriteFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	db := MustOpen(t, path)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		task, err := db.TaskInsert(ctx, &store.TaskInsertParams{
			Module: "echo", ModuleDigest: storetest.Digest, Function: "echo",
			OnRestart: store.OnRestartRetry, Input: storetest.Frame("in"),
		})
		require.NoError(t, err)
		for _, to := range []store.Status{store.StatusLoading, store.StatusRunning} {
			_, err = db.TaskTransition(ctx, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{task.Status}, To: to})
			require.NoError(t, err)
			task.Status = to
		}
		ids[i] = task.ID
	}
	complete := func(id string) error {
		_, err := db.TaskTransition(ctx, &store.TaskTransitionParams{
			ID: id, From: []store.Status{store.StatusRunning},
			To: store.StatusCompleted, Output: storetest.Frame("out"),
		})
		return err
	}
	// Enough log lines to spill out of SQLite's page cache into the WAL.
	lines := make([]store.EventDraft, 200)
	for i := range lines {
		lines[i] = store.EventDraft{Type: store.EventLog, Payload: json.RawMessage(`{"message":"a line with some text to fill pages"}`)}
	}

	withFileSizeLimit(t, func() {
		// One at a time, then many at once (one group commit).
		require.Error(t, complete(ids[0]))
		_, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: ids[1], Events: lines})
		require.Error(t, err)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, id := range ids {
			wg.Go(func() { errs[i] = complete(id) })
		}
		wg.Wait()
		for i, err := range errs {
			require.Error(t, err, "task %d committed while writes fail", i)
		}
	})

	for _, id := range ids {
		task, err := db.TaskGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, task.Status, "a failed commit changed nothing")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Go(func() { errs[i] = complete(id) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "task %d after writes succeed again", i)
	}
	_, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: ids[0], Events: lines[:1]})
	require.ErrorIs(t, err, store.ErrTaskFinished)
	for _, id := range ids {
		evs, err := db.EventList(ctx, &store.EventListParams{TaskID: id, Limit: 1000})
		require.NoError(t, err)
		terminal := 0
		for i, ev := range evs {
			require.Equal(t, int64(i), ev.Seq, "task %s: gapless log", id)
			if ev.Type == store.EventResponseCompleted || ev.Type == store.EventResponseFailed || ev.Type == store.EventResponseCancelled {
				terminal++
			}
		}
		require.Equal(t, 1, terminal, "task %s: one terminal event", id)
		require.Equal(t, store.EventResponseCompleted, evs[len(evs)-1].Type)
	}
	require.NoError(t, db.Close(ctx))

	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer func() { _ = raw.Close() }()
	var check string
	require.NoError(t, raw.QueryRow("PRAGMA integrity_check").Scan(&check))
	require.Equal(t, "ok", check)
	db2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	require.NoError(t, err)
	defer func() { _ = db2.Close(ctx) }()
	for _, id := range ids {
		task, err := db2.TaskGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, task.Status)
	}
}
