package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/backend"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// openBatchDB opens a store for the white-box tests of the group commit,
// which build batches in a known order and run them with runBatch.
func openBatchDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), pgtest.NewSchema(t, pgtest.NewDatabase(t)), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}

// runJobs runs ws as one batch, in order, and returns each one's error.
func runJobs(t *testing.T, db *DB, ws ...*writeFn) []error {
	t.Helper()
	jobs := make([]*groupJob, len(ws))
	for i, w := range ws {
		jobs[i] = backend.NewJob(t.Context(), w)
	}
	db.group.runBatch(jobs)
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		_, errs[i] = j.Wait()
	}
	return errs
}

func mustRunningTask(t *testing.T, db *DB) *store.Task {
	t.Helper()
	task, err := db.TaskInsert(t.Context(), &store.TaskInsertParams{
		Module: "echo", ModuleDigest: "sha256:" + strings.Repeat("0", 64),
		Function: "echo", Start: true, Host: "host-a", LeaseTTL: time.Minute,
	})
	require.NoError(t, err)
	return task
}

// A job that is not row-wise may change any row, so the rows read ahead
// before it are not handed to the jobs after it: they read them again.
func TestBatchReadAheadDroppedByOtherWrites(t *testing.T) {
	db := openBatchDB(t)
	x, y := mustRunningTask(t, db), mustRunningTask(t, db)
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	var seen *store.Task
	errs := runJobs(t, db,
		// Two row-wise jobs: their rows are read ahead together; neither
		// locks x itself.
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(*tx) error { return nil }},
		&writeFn{rowWise: true, ids: []string{y.ID}, fn: func(t *tx) error { _, err := t.getTask(y.ID); return err }},
		// A write over rows it does not lock first.
		&writeFn{fn: func(t *tx) error {
			_, err := t.exec("UPDATE tasks SET lease_expires_at = $1 WHERE id = $2", later, x.ID)
			return err
		}},
		&writeFn{rowWise: true, fn: func(t *tx) error {
			var err error
			seen, err = t.getTask(x.ID)
			return err
		}},
	)
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.True(t, later.Equal(seen.Lease.ExpiresAt), "the row as the write before left it: %v, want %v", seen.Lease.ExpiresAt, later)
}

// A row read ahead goes to the first job that locks it; a second job
// reads it as the first left it.
func TestBatchReadAheadHandedOutOnce(t *testing.T) {
	db := openBatchDB(t)
	x := mustRunningTask(t, db)
	var first, second *store.Task
	errs := runJobs(t, db,
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			var err error
			if first, err = t.getTask(x.ID); err != nil {
				return err
			}
			// A change that leaves the Go row behind.
			_, err = t.exec("UPDATE tasks SET progress = '{\"done\":7}' WHERE id = $1", x.ID)
			return err
		}},
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			var err error
			second, err = t.getTask(x.ID)
			return err
		}},
	)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.NotSame(t, first, second)
	require.NotNil(t, second.Progress)
	require.EqualValues(t, 7, second.Progress.Done)
}

// A job that fails after its statements went out is rolled back to its
// savepoint: the jobs before and after it commit, its writes do not.
func TestBatchFailedJobRolledBack(t *testing.T) {
	db := openBatchDB(t)
	x := mustRunningTask(t, db)
	boom := errors.New("boom")
	note := []store.EventDraft{{Type: "test.note"}}
	errs := runJobs(t, db,
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			_, err := t.appendEvents(x.ID, note, now(), false, nil, 0)
			return err
		}},
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			if _, err := t.appendEvents(x.ID, []store.EventDraft{{Type: "test.lost"}}, now(), false, nil, 0); err != nil {
				return err
			}
			if _, err := t.exec("SELECT 1"); err != nil { // the append goes out
				return err
			}
			return boom
		}},
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			_, err := t.appendEvents(x.ID, note, now(), false, nil, 0)
			return err
		}},
	)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], boom)
	require.NoError(t, errs[2])
	events, err := db.EventList(t.Context(), &store.EventListParams{TaskID: x.ID})
	require.NoError(t, err)
	for i, e := range events {
		require.EqualValues(t, i, e.Seq)
		require.NotEqual(t, "test.lost", e.Type)
	}
	got, err := db.TaskGet(t.Context(), x.ID)
	require.NoError(t, err)
	require.Equal(t, x.LastSeq+2, got.LastSeq)
	require.Len(t, events, int(got.LastSeq)+1)
}

// A write queued by one job that fails while a later job's statement
// goes out voids the batch: each job then runs alone, and only the
// failing one fails.
func TestBatchVoidRunsJobsAlone(t *testing.T) {
	db := openBatchDB(t)
	x := mustRunningTask(t, db)
	ran := 0
	errs := runJobs(t, db,
		&writeFn{fn: func(t *tx) error {
			// Changes no row, which laterOne checks when it goes out.
			t.laterOne("UPDATE tasks SET updated_at = now() WHERE id = 'task_none'")
			return nil
		}},
		&writeFn{rowWise: true, ids: []string{x.ID}, fn: func(t *tx) error {
			ran++
			_, err := t.appendEvents(x.ID, []store.EventDraft{{Type: "test.note"}}, now(), false, nil, 0)
			return err
		}},
	)
	require.ErrorContains(t, errs[0], "changed 0 rows")
	require.NoError(t, errs[1])
	require.Equal(t, 2, ran, "in the batch, then alone")
	got, err := db.TaskGet(t.Context(), x.ID)
	require.NoError(t, err)
	require.Equal(t, x.LastSeq+1, got.LastSeq, "appended once")
}
