package backend

import "github.com/weft-run/weft/store"

// RecoverBatch is the number of tasks TaskRecover recovers per
// transaction.
const RecoverBatch = 500

// Recover runs TaskRecover's walk (persistence §11.3): the tasks of each
// unfinished status in id order, queued first, so that a task recovery
// moves back to queued is not visited again. page recovers, in one
// transaction, up to RecoverBatch tasks in status st after cursor,
// records them in part (which it resets first: a retried transaction
// starts over) and returns the cursor to go on from (NextCursor). Each
// page's part is added to res once its transaction committed.
func Recover(res *store.TaskRecoverResult, page func(st store.Status, cursor string, part *store.TaskRecoverResult) (string, error)) error {
	for _, st := range []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning, store.StatusCancelling} {
		for cursor := ""; ; {
			var part store.TaskRecoverResult
			next, err := page(st, cursor, &part)
			if err != nil {
				return err
			}
			res.Add(&part)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return nil
}

// NextCursor returns the id a walk in pages of RecoverBatch goes on after
// tasks, one page, and "" after the last page.
func NextCursor(tasks []*store.Task) string {
	if len(tasks) < RecoverBatch {
		return ""
	}
	return tasks[len(tasks)-1].ID
}
