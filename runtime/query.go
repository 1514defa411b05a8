package runtime

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// querySlotWait is how long a query waits for a slot (Config.MaxQueries)
// before it is refused with fault.QueryLimitExceeded.
const querySlotWait = 500 * time.Millisecond

// queryNotFoundType is the error type a guest SDK returns for a query it
// has no handler for (docs/abi.md, "Queries").
const queryNotFoundType = "weft.query_not_found"

// QueryAnswer is the answer of a query.
type QueryAnswer struct {
	// Task is the workflow as it was read for the query.
	Task *store.Task
	// Output is the handler's result, a single-object Avro frame.
	Output store.Payload
}

// TaskQuery answers the query name of a workflow task the caller may see,
// with input as the handler's argument: it replays the task's journal in
// a call of its own, up to where the workflow waits or ends, without
// recording anything or running any activity, and returns what the
// workflow's handler for name answers. A query changes nothing: no event,
// no state, no wake. It works on a workflow in any status, as of the last
// committed run (a signal not yet consumed is not seen).
//
// It returns fault.NotFound for a task the caller may not see,
// fault.Invalid for a bad name, a codec code for a bad input,
// fault.QueryNotSupported for an activity or a workflow that registered no
// query handler, fault.QueryNotFound for a workflow without a handler of
// that name, fault.QueryCommand for a handler that called a workflow
// command, fault.QueryFailed when the handler returned an error or the
// replay failed (a trap, say), fault.Nondeterminism when the module no
// longer replays the journal, fault.QueryLimitExceeded when
// Config.MaxQueries queries run already, fault.Timeout past
// Config.QueryTimeout, and fault.Unavailable when the engine is not open.
func (e *Engine) TaskQuery(ctx context.Context, who Caller, id, name string, input codec.Envelope) (*QueryAnswer, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if name == "" || len(name) > 256 || !utf8.ValidString(name) {
		return nil, fault.ParamErrorf("name", "query name must be 1 to 256 bytes of UTF-8")
	}
	in, err := inputPayload(input)
	if err != nil {
		return nil, err
	}
	t, err := e.visibleTask(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if t.Kind != store.KindWorkflow {
		return nil, fault.Errorf(fault.QueryNotSupported, "task %s is an activity; only workflows answer queries", id)
	}
	release, err := e.querySlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	qctx, cancel := context.WithTimeout(ctx, e.cfg.QueryTimeout)
	defer cancel()
	out, err := e.query(qctx, t, name, in.Data)
	if err != nil {
		if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
			return nil, fault.Errorf(fault.Timeout, "query %q of task %s ran past its timeout of %s", name, id, e.cfg.QueryTimeout)
		}
		return nil, err
	}
	return &QueryAnswer{Task: t, Output: store.Payload{Codec: codec.CodecAvro, Data: out}}, nil
}

// querySlot takes one of the Config.MaxQueries slots, waiting at most
// querySlotWait, and returns its release.
func (e *Engine) querySlot(ctx context.Context) (func(), error) {
	release := func() { <-e.queries }
	select {
	case e.queries <- struct{}{}:
		return release, nil
	default:
	}
	wait := time.NewTimer(querySlotWait)
	defer wait.Stop()
	select {
	case e.queries <- struct{}{}:
		return release, nil
	case <-wait.C:
		return nil, &fault.Error{
			Code:    fault.QueryLimitExceeded,
			Message: "as many queries run as the daemon allows; retry shortly",
			Err:     fault.RetryAfter(time.Second),
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// query replays workflow t over a fresh copy of its journal, recording
// nothing, and returns the answer of its handler for name.
func (e *Engine) query(ctx context.Context, t *store.Task, name string, input []byte) ([]byte, error) {
	j, err := journal.Read(ctx, e.store, t)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Errorf(fault.NotFound, "task %q not found", t.ID)
		}
		return nil, fault.Wrap("read journal", err)
	}
	r := journal.NewReplay(t, j, e.now(), journal.Check, nil)
	res, err := e.exec.Call(ctx, &Call{
		TaskID: t.ID, Attempt: t.Attempt, Module: t.Module, Digest: t.ModuleDigest, Function: t.Function,
		Wasm:  func(ctx context.Context) ([]byte, error) { return e.mods.Bytes(ctx, t.ModuleDigest) },
		Input: t.Input.Data, MemoryLimit: t.MemoryLimit, Timeout: e.cfg.QueryTimeout,
		Log:   func(string, string) {},
		Query: &Query{Name: name, Input: input}, Workflow: r,
	})
	var nd *journal.NondeterminismError
	switch {
	case errors.As(r.Err(), &nd):
		return nil, fault.Errorf(fault.Nondeterminism, "the query could not replay the workflow: %s", nd.Error())
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		switch code := fault.CodeOf(err); code {
		case fault.QueryCommand, fault.QueryNotSupported:
			return nil, err
		case fault.Internal:
			return nil, fault.Wrap("query", err)
		default:
			return nil, &fault.Error{Code: fault.QueryFailed, Message: "the query's replay failed: " + string(code) + ": " + fault.Message(err), Err: err}
		}
	case res.Error != nil && res.Error.Type == queryNotFoundType:
		return nil, fault.Errorf(fault.QueryNotFound, "%s", res.Error.Message)
	case res.Error != nil:
		msg := res.Error.Type
		if res.Error.Message != "" {
			msg += ": " + res.Error.Message
		}
		return nil, fault.Errorf(fault.QueryFailed, "query %q failed: %s", name, msg)
	}
	return res.Output, nil
}
