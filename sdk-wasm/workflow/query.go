package workflow

import (
	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
)

// SetQueryHandler registers handler as the query handler called name for
// the rest of the workflow's run, replacing one of the same name. A query
// (GET /v1/tasks/{id}/queries/{name}) replays the workflow in a fresh
// call, up to where it waits or ends, and then calls the handler with the
// query's input converted into In; its result, converted from Out, is the
// answer, and its error fails the query with query_failed. The handler
// must only read the workflow's state: it may call Now, Random and the
// logger, while an activity, a timer, a signal wait or a Future.Get fails
// the query with query_command. A query is never journaled and changes
// nothing, so a handler registered late answers only once the workflow got
// there. It returns an error for a name that is empty, longer than 256
// bytes or not UTF-8, and for a nil handler.
func SetQueryHandler[In, Out any](_ Context, name string, handler func(In) (Out, error)) error {
	if handler == nil {
		return guest.SetQuery(name, nil)
	}
	return guest.SetQuery(name, func(v codec.Value) (codec.Value, error) {
		var in In
		if err := convert.FromValue(v, &in); err != nil {
			return codec.Value{}, &ApplicationError{Type: "weft.invalid_input", Message: err.Error(), NonRetryable: true}
		}
		out, err := handler(in)
		if err != nil {
			return codec.Value{}, err
		}
		ov, err := convert.ToValue(out)
		if err != nil {
			return codec.Value{}, &ApplicationError{Type: "weft.invalid_output", Message: err.Error(), NonRetryable: true}
		}
		return ov, nil
	})
}
