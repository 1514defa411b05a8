package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// A task's life through the store: persisted with its first event, claimed,
// run and completed, each status change with its event.
func Example() {
	dir, err := os.MkdirTemp("", "weft-example")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, sqlite.FileName)})
	if err != nil {
		panic(err)
	}
	defer func() { _ = db.Close(ctx) }()

	task, err := db.TaskInsert(ctx, &store.TaskInsertParams{
		Module: "echo", Function: "echo",
		ModuleDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	})
	if err != nil {
		panic(err)
	}
	claimed, err := db.TaskClaim(ctx, &store.TaskClaimParams{Limit: 10})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed", len(claimed), "attempt", claimed[0].Attempt)
	_, err = db.TaskTransition(ctx, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
	if err != nil {
		panic(err)
	}
	_, err = db.TaskTransition(ctx, &store.TaskTransitionParams{ID: task.ID, From: []store.Status{store.StatusRunning}, To: store.StatusCompleted})
	if err != nil {
		panic(err)
	}
	events, err := db.EventList(ctx, &store.EventListParams{TaskID: task.ID})
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// claimed 1 attempt 1
	// 0 response.created
	// 1 task.status_changed
	// 2 response.in_progress
	// 3 response.completed
}
