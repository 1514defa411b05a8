package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// foldedEnd is the end of an activity that goes on into the next run of
// its workflow instead of being committed alone: the run replays the
// journal with the activity's outcome added in memory and commits both in
// one transaction (store.WorkflowCommitParams.EndChild). A workflow step
// then costs one commit, not two: the activity's end and the workflow's
// next command reach the disk together.
//
// Nothing is lost when the daemon stops before that commit: the activity
// is still running in the store, and start-up recovery treats it as any
// activity whose end was not written (persistence §11.3).
type foldedEnd struct {
	child *store.Task                 // the activity task, running
	end   *store.TaskTransitionParams // its end, with ParentEvents
	// j is the workflow's journal with ParentEvents applied; lastSeq is the
	// last sequence number of the log it was read from, before them.
	j       *journal.Journal
	lastSeq int64
	at      time.Time // the time of ParentEvents, and of the commit
}

// journal returns the journal of the run that f goes on into; nil for none.
func (f *foldedEnd) journal() *journal.Journal {
	if f == nil {
		return nil
	}
	return f.j
}

// foldEnd hands p, the end of the activity in progress, on to the next run
// of its workflow when the workflow's commit started the activity and
// still waits for it as it left it: that run, on this worker right after,
// commits both. It reports whether it did; false leaves p untouched.
func (w *worker) foldEnd(p *store.TaskTransitionParams) bool {
	child, parent, e := w.task, w.parent, w.e
	if child == nil || parent == nil || child.ID != p.ID || child.ParentTaskID != parent.ID ||
		(p.To != store.StatusCompleted && p.To != store.StatusFailed) || w.next != nil {
		return false
	}
	j := e.jcache.Take(parent.ID, parent.Attempt)
	if j == nil {
		return false
	}
	if j.LastSeq() != parent.LastSeq {
		return false // the journal is read again from the log
	}
	end := *p
	end.ParentEvents = slices.Clip(p.ParentEvents)
	if !e.childOutcome(child, &end) {
		e.jcache.Put(j)
		return false
	}
	// The store writes the events with this time: the run must replay
	// them as a later read of the log will give them.
	at := time.Now().UTC().Truncate(time.Millisecond)
	f := &foldedEnd{child: child, end: &end, j: j, lastSeq: j.LastSeq(), at: at}
	for _, d := range end.ParentEvents[len(p.ParentEvents):] {
		if err := j.Apply(&store.Event{TaskID: parent.ID, Seq: j.LastSeq() + 1, Type: d.Type, Payload: d.Payload, CreatedAt: at}); err != nil {
			e.log.Error("activity outcome event", "task_id", child.ID, "error", err)
			return false // j is dropped: the run reads the log
		}
	}
	w.next = &workItem{task: parent, resumed: true, fresh: true, fold: f}
	return true
}

// unfold writes the end of f's activity alone, for a run that did not
// commit it with its own; nil does nothing. When the workflow was waiting
// it is now claimed and returned, for the caller to run or to end.
func (w *worker) unfold(ctx context.Context, f *foldedEnd) *store.Task {
	if f == nil {
		return nil
	}
	task, parent, next := w.task, w.parent, w.next
	w.task, w.parent, w.next = f.child, nil, nil
	defer func() { w.task, w.parent, w.next = task, parent, next }()
	t, err := w.childEnd(ctx, f.end)
	if err != nil {
		w.lost(ctx, f.child.ID, err, transitionItem(f.child, f.end))
	} else {
		w.e.taskFinished(t)
	}
	if w.next != nil {
		return w.next.task
	}
	return nil
}
