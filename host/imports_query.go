package host

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// workflowQueryRequest is query_request() -> i64. In a call that answers no
// query it returns abi.NoQuery and changes nothing. In a query call
// (CallRequest.Query) it makes the query frame, the map {name: string,
// input: Value}, the pending blob for blob_read and returns its length;
// from then on the call answers the query: whatever the workflow set as
// its output or error, and a suspension, are dropped, the guest may call
// no workflow import but now and random (others fail with query_command),
// and it must return the answer with StatusOK or StatusError. It may be
// called once per call; it may follow an await that answered suspended.
func workflowQueryRequest(ctx context.Context, _ api.Module, stack []uint64) {
	cs := stateOf(ctx)
	cs.need(abi.KindWorkflow, abi.ModuleWorkflow+"."+abi.ImportQueryRequest)
	q := cs.req.Query
	if q == nil {
		stack[0] = api.EncodeI64(abi.NoQuery)
		return
	}
	if cs.querying {
		cs.failf(abi.CodeABIViolation, "%s called query_request twice", cs.function())
	}
	frame, err := queryFrame(q, cs.inst.h.cfg.Limits)
	if err != nil {
		cs.fail(err)
	}
	cs.querying, cs.suspended = true, false
	cs.output, cs.hasOutput, cs.appErr, cs.continued = nil, false, nil, false
	cs.setBlob(frame)
	stack[0] = uint64(len(frame))
}

// queryFrame encodes the query frame of q.
func queryFrame(q *Query, limits codec.Limits) ([]byte, *Error) {
	input := codec.Null()
	if len(q.Input) > 0 {
		v, err := codec.DecodeFrameLimits(q.Input, limits)
		if err != nil {
			return nil, wrapf(abi.CodeInvalidInput, err, "query %q input", q.Name)
		}
		input = v
	}
	frame, err := codec.EncodeFrame(codec.Map(
		codec.Entry{Key: abi.QueryName, Value: codec.String(q.Name)},
		codec.Entry{Key: abi.QueryInput, Value: input},
	))
	if err != nil {
		return nil, wrapf(abi.CodeInvalidInput, err, "query %q", q.Name)
	}
	return frame, nil
}
