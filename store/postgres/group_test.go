package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/storetest"
)

// batchCounter records the largest group commit a store reported.
type batchCounter struct {
	commits, writes, largest atomic.Int64
}

func (c *batchCounter) observe(writes int, _ time.Duration) {
	c.commits.Add(1)
	c.writes.Add(int64(writes))
	for {
		l := c.largest.Load()
		if int64(writes) <= l || c.largest.CompareAndSwap(l, int64(writes)) {
			return
		}
	}
}

// mustOpenCounted opens a store whose commits c counts.
func mustOpenCounted(tb testing.TB, dsn string, c *batchCounter, maxBatch int) *postgres.DB {
	tb.Helper()
	return mustOpenWith(tb, dsn, postgres.Options{ObserveCommit: c.observe, MaxBatch: maxBatch})
}

// In one group commit, each write succeeds or fails on its own: writes
// that fail (a status the task is not in, an id that exists, a lease that
// is not held) change nothing and leave the other writes of their batch
// committed, with every log gapless; writes that are not row-wise (a
// lease extension over many rows) mix with the rest.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	var c batchCounter
	db := mustOpenCounted(t, NewSchema(t, NewDatabase(t)), &c, 0)
	ctx := t.Context()
	const tasks, appends = 48, 4
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = storetest.MustInsertTask(t, db, &store.TaskInsertParams{}).ID
	}
	running := make([]*store.Task, 8)
	for i := range running {
		running[i] = storetest.MustClaim(t, db, "host-a", time.Minute, nil, true)
	}

	var (
		wg                           sync.WaitGroup
		conflicts, exists, leaseLost atomic.Int64
		unexpected                   = make(chan error, tasks*(appends+4))
	)
	start := make(chan struct{})
	for round := range 3 {
		for i, id := range ids {
			for a := range appends {
				wg.Go(func() {
					<-start
					payload := json.RawMessage(fmt.Sprintf(`{"round":%d,"n":%d}`, round, a))
					if _, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: id, Events: []store.EventDraft{{Type: "test.note", Payload: payload}, {Type: "test.note"}}}); err != nil {
						unexpected <- err
					}
				})
			}
			wg.Go(func() {
				<-start
				_, err := db.TaskTransition(ctx, &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
				if !errors.Is(err, store.ErrConflict) {
					unexpected <- fmt.Errorf("transition from running of a queued task: %v", err)
					return
				}
				conflicts.Add(1)
			})
			wg.Go(func() {
				<-start
				_, err := db.TaskInsert(ctx, &store.TaskInsertParams{ID: id, Module: "echo", ModuleDigest: storetest.Digest, Function: "echo"})
				if !errors.Is(err, store.ErrExists) {
					unexpected <- fmt.Errorf("insert of a taken id: %v", err)
					return
				}
				exists.Add(1)
			})
			r := running[i%len(running)]
			wg.Go(func() {
				<-start
				_, err := db.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: r.ID, Checkpoint: storetest.Frame("cp"), Lease: r.Lease.Token + 100})
				if !errors.Is(err, store.ErrLeaseLost) {
					unexpected <- fmt.Errorf("checkpoint with a lease not held: %v", err)
					return
				}
				leaseLost.Add(1)
			})
			if i%8 == 0 {
				wg.Go(func() {
					<-start
					held := make([]store.LeaseHeld, len(running))
					for k, r := range running {
						held[k] = store.LeaseHeld{TaskID: r.ID, Token: r.Lease.Token}
					}
					if _, err := db.LeaseExtend(ctx, &store.LeaseExtendParams{Host: running[0].Lease.Host, Held: held}); err != nil {
						unexpected <- fmt.Errorf("lease extend: %v", err)
					}
				})
			}
		}
	}
	close(start)
	wg.Wait()
	close(unexpected)
	for err := range unexpected {
		t.Error(err)
	}
	require.EqualValues(t, 3*tasks, conflicts.Load())
	require.EqualValues(t, 3*tasks, exists.Load())
	require.EqualValues(t, 3*tasks, leaseLost.Load())
	require.Greater(t, c.largest.Load(), int64(1), "the writes went in group commits")

	for _, id := range ids {
		task := storetest.MustCheckLog(t, db, id)
		require.Equal(t, store.StatusQueued, task.Status)
		events := storetest.MustEvents(t, db, id)
		require.Len(t, events, 1+3*appends*2, "the queued event and every append, nothing of the failed writes")
	}
	for _, r := range running {
		task := storetest.MustCheckLog(t, db, r.ID)
		require.Equal(t, store.StatusRunning, task.Status)
		require.Empty(t, task.Checkpoint.Data, "no checkpoint without the lease")
	}
}

// Many writes to one task in one batch take their turns: the row read
// ahead goes to the first, the others read it as the first left it.
func TestGroupCommitOneTask(t *testing.T) {
	var c batchCounter
	db := mustOpenCounted(t, NewSchema(t, NewDatabase(t)), &c, 0)
	ctx := t.Context()
	task := storetest.MustClaim(t, db, "host-a", time.Minute, nil, true)
	const writers = 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := db.EventAppend(ctx, &store.EventAppendParams{TaskID: task.ID, Events: []store.EventDraft{{Type: "test.note"}}, Lease: task.Lease.Token})
				errs <- err
				return
			}
			_, err := db.TaskCheckpoint(ctx, &store.TaskCheckpointParams{
				ID: task.ID, Checkpoint: storetest.Frame(fmt.Sprint(i)), Lease: task.Lease.Token,
				Events: []store.EventDraft{{Type: "test.checkpoint"}},
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Greater(t, c.largest.Load(), int64(1), "the writes went in group commits")
	got := storetest.MustCheckLog(t, db, task.ID)
	require.Equal(t, task.LastSeq+writers, got.LastSeq)
	require.Len(t, storetest.MustEvents(t, db, task.ID), int(got.LastSeq)+1)
}

// A caller that gave up before its write was taken gets its context's
// error and the write never happens.
func TestGroupCommitCancelledCaller(t *testing.T) {
	db := MustOpen(t, NewSchema(t, NewDatabase(t)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	id := store.NewID(store.TaskIDPrefix)
	_, err := db.TaskInsert(ctx, &store.TaskInsertParams{ID: id, Module: "echo", ModuleDigest: storetest.Digest, Function: "echo"})
	require.ErrorIs(t, err, context.Canceled)
	_, err = db.TaskGet(t.Context(), id)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// MaxBatch is bounded by the subtransactions a session caches.
func TestGroupCommitMaxBatchOption(t *testing.T) {
	dsn := NewSchema(t, NewDatabase(t))
	for _, n := range []int{-1, 65} {
		_, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxBatch: n})
		require.ErrorIs(t, err, store.ErrInvalid, "MaxBatch %d", n)
	}
}

// The conformance suite passes with every write alone too (MaxBatch 1).
func TestConformanceUnbatched(t *testing.T) {
	dsn := NewDatabase(t)
	storetest.Run(t, func(tb testing.TB) store.Store {
		var c batchCounter
		db := mustOpenCounted(tb, NewSchema(tb, dsn), &c, 1)
		tb.Cleanup(func() {
			if c.commits.Load() > 0 && c.largest.Load() != 1 {
				tb.Errorf("a batch of %d writes with MaxBatch 1", c.largest.Load())
			}
		})
		return db
	})
}
