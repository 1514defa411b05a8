package guest

import (
	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
)

// RegisterFunc registers a typed function of one argument under name. A
// function on Frame in both directions runs on the raw frames; one on
// codec.Value in both directions is called without conversion; any other
// has its input converted into In and its result from Out (package
// convert). It panics like Register.
func RegisterFunc[C, In, Out any](name string, kind abi.Kind, c C, fn func(C, In) (Out, error)) {
	if raw, ok := any(fn).(func(C, Frame) (Frame, error)); ok {
		RegisterFrame(name, kind, func(in Frame) (Frame, error) { return raw(c, in) })
		return
	}
	if raw, ok := any(fn).(func(C, codec.Value) (codec.Value, error)); ok {
		Register(name, kind, func(v codec.Value) (codec.Value, error) { return raw(c, v) })
		return
	}
	Register(name, kind, func(v codec.Value) (codec.Value, error) {
		var in In
		if err := convert.FromValue(v, &in); err != nil {
			return codec.Value{}, &ApplicationError{Type: "weft.invalid_input", Message: err.Error(), NonRetryable: true}
		}
		out, err := fn(c, in)
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
