package backend

import (
	"errors"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

func TestWatchers(t *testing.T) {
	w := NewWatchers()
	ch, stop := w.Add("a")
	other, stopOther := w.Add("b")
	defer stopOther()
	w.Notify([]string{"a"})
	w.Notify([]string{"a"}) // a pending signal stands for this one too
	select {
	case <-ch:
	default:
		t.Fatal("watcher of a not signalled")
	}
	select {
	case <-ch:
		t.Fatal("two signals pending")
	case <-other:
		t.Fatal("watcher of b signalled for a")
	default:
	}
	w.NotifyAll()
	<-other
	<-ch
	stop()
	stop()
	w.Notify([]string{"a"})
	select {
	case <-ch:
		t.Fatal("stopped watcher signalled")
	default:
	}
}

func TestChangeApply(t *testing.T) {
	n := time.UnixMilli(1000).UTC()
	task := &store.Task{ID: "t", Status: store.StatusQueued, Checkpoint: store.Payload{Codec: "c"}}
	c := &Change{To: store.StatusRunning, ClearCheckpoint: true}
	if err := c.CheckTransition(task); err != nil {
		t.Fatal(err)
	}
	c.Apply(task, n)
	if task.Status != store.StatusRunning || task.Attempt != 1 || !task.StartedAt.Equal(n) || !task.Checkpoint.IsZero() {
		t.Fatalf("after the move: %+v", task)
	}
	done := &Change{To: store.StatusQueued}
	if err := done.CheckTransition(&store.Task{Status: store.StatusCompleted}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("completed → queued: %v", err)
	}
}

func TestCheckFrom(t *testing.T) {
	task := &store.Task{ID: "t", Status: store.StatusRunning, Lease: store.Lease{Host: "h", Token: 3, ExpiresAt: time.Now().Add(time.Hour)}}
	if err := CheckFrom(task, []store.Status{store.StatusQueued, store.StatusLoading}, 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("from queued|loading: %v", err)
	}
	if err := CheckFrom(task, []store.Status{store.StatusRunning}, 2); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token: %v", err)
	}
	if err := CheckFrom(task, []store.Status{store.StatusRunning}, 3); err != nil {
		t.Fatalf("held lease: %v", err)
	}
}

func TestAppend(t *testing.T) {
	n := time.UnixMilli(5000).UTC()
	task := &store.Task{ID: "t", Status: store.StatusQueued, LastSeq: 4, NotBefore: n.Add(time.Hour)}
	a, err := Append(task, 2, n, true, &store.TaskProgress{Done: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Prev != 4 || !a.WorkAppeared || a.WakeWorkflow || task.LastSeq != 6 || !task.NotBefore.Equal(n) ||
		task.Progress == nil || !task.Progress.UpdatedAt.Equal(n) {
		t.Fatalf("append: %+v, task %+v", a, task)
	}
	if _, err := Append(&store.Task{ID: "t", Status: store.StatusFailed}, 1, n, false, nil, 0); !errors.Is(err, store.ErrTaskFinished) {
		t.Fatalf("append to a finished task: %v", err)
	}
}

func TestPurge(t *testing.T) {
	batches := []int64{2, 2, 1}
	var keys int
	res, err := Purge(&store.RetentionPurgeParams{OlderThan: time.Now(), Batch: 2}, func(batch int) (PurgeBatch, error) {
		b := batches[0]
		batches = batches[1:]
		return PurgeBatch{Tasks: b, Events: 3 * b}, nil
	}, func(int) (PurgeBatch, error) {
		keys++
		return PurgeBatch{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches != 3 || res.Tasks != 5 || res.Events != 15 || keys != 1 || len(batches) != 0 {
		t.Fatalf("purge: %+v, key batches %d", res, keys)
	}
}
