package guest

import (
	"fmt"
	"runtime/debug"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// suspendSignal is the panic value that unwinds a workflow whose await the
// host answered with abi.AwaitSuspended.
type suspendSignal struct{}

var suspended = &suspendSignal{}

// Suspend unwinds the running workflow call; weft_call then returns
// abi.StatusSuspended. Code between must not recover it.
func Suspend() { panic(suspended) }

// ContinueAsNew, once set (by the first continue-as-new a workflow asks
// for), hands a workflow's continue-as-new error to the host and returns
// the status to end the call with, and false for any other error. Nil
// before: a module that never continues as new never imports
// continue_as_new.
var ContinueAsNew func(err error) (abi.Status, bool)

// CallSeq numbers the calls of the module, from 1: state a workflow call
// keeps in package variables is the state of call CallSeq.
var CallSeq uint64

// last is the function of the previous call: a plugin usually serves one
// function many times, and comparing a name is cheaper than a map lookup.
var last *function

// out is the reused buffer of encoded outputs and errors: the host copies a
// frame during set_output or set_error, so one buffer serves every call.
var out []byte

// maxKeep is the largest output buffer kept between calls.
const maxKeep = 1 << 20

// Call implements weft_call: it finds the function, decodes the input, runs
// the handler, and hands the output or the error to the host.
func Call(namePacked, inputPacked uint64) (status abi.Status) {
	CallSeq++
	np, nl := abi.Unpack(namePacked)
	ip, il := abi.Unpack(inputPacked)
	name, input, ok := slices(np, nl, ip, il)
	if !ok {
		return fail(&ApplicationError{Type: "weft.bad_call", Message: "weft_call arguments are not in a weft_alloc buffer", NonRetryable: true})
	}
	f := last
	if f == nil || f.name != string(name) {
		if f = registry[string(name)]; f == nil {
			return fail(&ApplicationError{Type: "weft.function_not_found", Message: fmt.Sprintf("no function %q is registered", name), NonRetryable: true})
		}
		last = f
	}
	if f.frame != nil {
		return callFrame(f, input)
	}
	in, err := codec.DecodeFrame(input)
	if err != nil {
		return fail(&ApplicationError{Type: "weft.invalid_input", Message: err.Error(), NonRetryable: true})
	}
	v, susp, err := run(f.handler, in)
	if f.kind == abi.KindWorkflow && answer != nil {
		if status, ok := answer(); ok {
			return status
		}
	}
	switch {
	case susp:
		return abi.StatusSuspended
	case err != nil:
		return failOrContinue(err)
	}
	return output(v)
}

// output encodes v and hands it to the host as the call's result.
func output(v codec.Value) abi.Status {
	var err error
	out, err = codec.AppendFrame(out[:0], v)
	if err != nil {
		return fail(&ApplicationError{Type: "weft.invalid_output", Message: err.Error(), NonRetryable: true})
	}
	hostcall.SetOutput(out)
	trim()
	return abi.StatusOK
}

// callFrame runs the FrameHandler of f.
func callFrame(f *function, input []byte) abi.Status {
	var v Frame
	susp, err := protect(func() (err error) { v, err = f.frame(input); return err })
	if f.kind == abi.KindWorkflow && answer != nil {
		if status, ok := answer(); ok {
			return status
		}
	}
	switch {
	case susp:
		return abi.StatusSuspended
	case err != nil:
		return failOrContinue(err)
	}
	hostcall.SetOutput(v)
	return abi.StatusOK
}

// failOrContinue ends a call whose function returned err: a workflow's
// continue-as-new, or an application error.
func failOrContinue(err error) abi.Status {
	if ContinueAsNew != nil {
		if status, ok := ContinueAsNew(err); ok {
			return status
		}
	}
	return fail(AsApplicationError(err))
}

// protect runs fn, turning a panic into an error of type "panic" and the
// suspension signal into susp.
func protect(fn func() error) (susp bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == suspended {
				susp = true
				return
			}
			err = &ApplicationError{Type: "panic", Message: fmt.Sprint(r), Details: codec.String(string(debug.Stack()))}
		}
	}()
	return false, fn()
}

// run calls h.
func run(h Handler, in codec.Value) (v codec.Value, susp bool, err error) {
	susp, err = protect(func() (err error) { v, err = h(in); return err })
	return v, susp, err
}

// fail hands e to the host and returns abi.StatusError.
func fail(e *ApplicationError) abi.Status {
	var err error
	out, err = codec.AppendFrame(out[:0], e.Value())
	if err != nil {
		// The details could not be encoded: send the error without them.
		e = &ApplicationError{Type: e.Type, Message: e.Message + " (details dropped: " + err.Error() + ")", NonRetryable: e.NonRetryable}
		out, _ = codec.AppendFrame(out[:0], e.Value())
	}
	hostcall.SetError(out)
	trim()
	return abi.StatusError
}

func trim() {
	if cap(out) > maxKeep {
		out = nil
	}
}
