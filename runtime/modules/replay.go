package modules

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// Divergence is a running workflow whose journal a new version of its
// module does not replay.
type Divergence struct {
	// TaskID is the workflow task.
	TaskID string `json:"task_id"`
	// Function is the workflow function.
	Function string `json:"function"`
	// Reason says where and how the replay diverged: the step, what the
	// journal recorded and what the new version asked, or why it could not
	// run.
	Reason string `json:"reason"`
}

// ReplayCheck replays the journal of every running workflow of module name
// against wasm, a new version of the module, and returns those that
// diverge: a command that differs from the journal at the same step, a run
// that ends without asking for every recorded command, a workflow function
// the new version no longer exports, or a failure of the new version's
// code. Nothing is recorded and no activity runs: new commands beyond a
// journal are left pending. Running workflows stay pinned to their own
// digest whatever this finds. It returns fault.Invalid for a bad name or an
// empty module, fault.ModuleInvalid for a module the Executor rejects,
// fault.Internal when the store fails, and ctx's error once ctx ends.
func (r *Registry) ReplayCheck(ctx context.Context, name string, wasm []byte) ([]Divergence, error) {
	if err := checkParams(name, wasm); err != nil {
		return nil, err
	}
	fns, err := r.compileFunctions(ctx, wasm)
	if err != nil {
		return nil, err
	}
	workflows := map[string]bool{}
	for _, f := range fns {
		if f.Kind == store.KindWorkflow {
			workflows[f.Name] = true
		}
	}
	digest := Digest(wasm)
	var out []Divergence
	cursor := ""
	for {
		ts, err := r.store.TaskList(ctx, &store.TaskListParams{
			Module: name, Statuses: []store.Status{store.StatusRunning}, Cursor: cursor, Limit: 1000,
		})
		if err != nil {
			return nil, fault.Wrap("list running workflows", err)
		}
		for _, t := range ts {
			if t.Kind != store.KindWorkflow || t.ModuleDigest == digest {
				continue
			}
			reason, err := r.replayOne(ctx, t, digest, wasm, workflows[t.Function])
			if err != nil {
				return nil, err
			}
			if reason != "" {
				out = append(out, Divergence{TaskID: t.ID, Function: t.Function, Reason: reason})
			}
		}
		if len(ts) < 1000 {
			return out, nil
		}
		cursor = ts[len(ts)-1].ID
	}
}

// replayOne replays workflow t against the module digest and returns why
// it diverges, or "" when it does not.
func (r *Registry) replayOne(ctx context.Context, t *store.Task, digest string, wasm []byte, exported bool) (string, error) {
	if !exported {
		return fmt.Sprintf("the new version exports no workflow %q", t.Function), nil
	}
	j, err := journal.Read(ctx, r.store, t)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil // finished and purged meanwhile
	}
	if err != nil {
		return "", fault.Wrap("read journal", err)
	}
	rp := journal.NewReplay(t, j, r.now(), journal.Check, nil)
	suspended, err := r.exec.Replay(ctx, t, digest, wasm, rp)
	var nd *journal.NondeterminismError
	switch {
	case errors.As(rp.Err(), &nd):
		return fmt.Sprintf("step %d: the journal recorded %s, but the new version %s", nd.Step, nd.Recorded, nd.Asked), nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		return fmt.Sprintf("the new version failed: %s: %s", fault.CodeOf(err), fault.Message(err)), nil
	}
	how := "returned"
	if suspended {
		how = "suspended"
	}
	if err := rp.Ended(how); errors.As(err, &nd) {
		return fmt.Sprintf("step %d: the journal recorded %s, but the new version %s", nd.Step, nd.Recorded, nd.Asked), nil
	}
	return "", nil
}

// DeployCheckReplay deploys a module like Deploy, after ReplayCheck found
// no running workflow of name that the new version would not replay.
// Otherwise it deploys nothing and returns fault.ReplayDivergence with a
// message that lists the diverging tasks. It returns the codes of Deploy
// and ReplayCheck too.
func (r *Registry) DeployCheckReplay(ctx context.Context, name string, wasm []byte) (*store.Module, error) {
	div, err := r.ReplayCheck(ctx, name, wasm)
	if err != nil {
		return nil, err
	}
	if len(div) > 0 {
		parts := make([]string, len(div))
		for i, d := range div {
			parts[i] = fmt.Sprintf("%s (%s): %s", d.TaskID, d.Function, d.Reason)
		}
		return nil, fault.Errorf(fault.ReplayDivergence, "the new version of %q would not replay %d running workflow(s); not deployed: %s",
			name, len(div), strings.Join(parts, "; "))
	}
	return r.Deploy(ctx, name, wasm)
}
