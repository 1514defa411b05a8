package loadbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/httpapi/client"
)

// deployModule deploys the testkit module from file as "testkit". A
// missing file is fine when the daemon already has the module.
func deployModule(ctx context.Context, c *client.Client, file string) error {
	return deployAs(ctx, c, moduleName, file)
}

// deployAs deploys the module in file as name; a missing file is fine when
// the daemon already has the module.
func deployAs(ctx context.Context, c *client.Client, name, file string) error {
	wasm, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := c.ModuleGet(ctx, name); err == nil {
			return nil
		}
		return fmt.Errorf("read module: %w (run from the repository root, or pass --wasm)", err)
	}
	if err != nil {
		return fmt.Errorf("read module: %w", err)
	}
	_, err = c.ModuleDeploy(ctx, name, wasm, nil)
	return err
}

// taskBody is the body of every submit: a background echo of a small
// map, with the default policy.
func taskBody() ([]byte, error) {
	env, err := codec.EncodeEnvelope(codec.Map(codec.Entry{Key: "hello", Value: codec.String("world")}))
	if err != nil {
		return nil, err
	}
	return json.Marshal(&client.TaskRequest{Module: moduleName, Function: "echo", Input: client.InputOf(env)})
}

// submitTask posts one task and returns its id once the daemon answered
// 202 (the task is committed).
func submitTask(ctx context.Context, c *client.Client, body []byte) (string, error) {
	var t client.Task
	if err := c.Do(ctx, &client.Request{Method: http.MethodPost, Path: "/v1/tasks", Body: body}, &t); err != nil {
		return "", err
	}
	if t.ID == "" {
		return "", fmt.Errorf("decode task: no id")
	}
	return t.ID, nil
}

// tallyTasks lists the daemon's tasks, newest first, until it has seen
// every id, counts them into rep by status, and returns the latest finish
// time among them.
func tallyTasks(ctx context.Context, c *client.Client, ids []string, rep *Report) (time.Time, error) {
	want := make(map[string]bool, len(ids))
	oldest := ""
	for _, id := range ids {
		if id == "" {
			continue
		}
		want[id] = true
		if oldest == "" || id < oldest {
			oldest = id
		}
	}
	var last time.Time
	seen := 0
	cursor := ""
	for seen < len(want) {
		page, err := c.TaskList(ctx, &client.TaskListParams{Limit: listPage, Cursor: cursor})
		if err != nil {
			return time.Time{}, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range page.Data {
			if !want[t.ID] {
				continue
			}
			seen++
			switch t.Status {
			case "completed":
				rep.Completed++
			case "failed", "cancelled":
				rep.Failed++
			default:
				rep.Unfinished++
			}
			if t.FinishedAt != nil && t.FinishedAt.After(last) {
				last = *t.FinishedAt
			}
		}
		if !page.HasMore || len(page.Data) == 0 || page.Data[len(page.Data)-1].ID < oldest {
			break
		}
		cursor = page.NextCursor
	}
	rep.Lost = len(want) - seen
	return last, nil
}
