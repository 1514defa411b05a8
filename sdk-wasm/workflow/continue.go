package workflow

import (
	"errors"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// ContinueAsNewError is what a workflow returns to continue as new (see
// NewContinueAsNewError).
type ContinueAsNewError struct {
	input codec.Value
}

// Error describes the continue-as-new.
func (e *ContinueAsNewError) Error() string { return "workflow: continue as new" }

// NewContinueAsNewError returns the error a workflow returns to end its
// run and start again, as a new run of the same workflow id, with input
// (converted like a workflow's input) and a journal that starts over. The
// daemon commits the end of this run and the start of the next in one
// transaction; the next run gets the same options and execution deadline.
// A workflow that runs for long (a loop over signals, a poller) continues
// as new before its history grows too long: see HistoryLength and
// HistorySize. An input that does not convert is an error of type
// "weft.invalid_input" instead.
func NewContinueAsNewError(_ Context, input any) error {
	v, err := convert.ToValue(input)
	if err != nil {
		return &ApplicationError{Type: "weft.invalid_input", Message: "continue as new: " + err.Error(), NonRetryable: true}
	}
	guest.ContinueAsNew = continueAsNew
	return &ContinueAsNewError{input: v}
}

// continueAsNew hands a ContinueAsNewError's input to the host.
func continueAsNew(err error) (abi.Status, bool) {
	var c *ContinueAsNewError
	if !errors.As(err, &c) {
		return 0, false
	}
	frame, ferr := codec.EncodeFrame(c.input)
	if ferr != nil {
		return 0, false
	}
	hostcall.ContinueAsNew(frame)
	return abi.StatusOK, true
}

// HistoryLength returns how many journal events the run has replayed or
// recorded so far: its activities, timers and signal waits, and the
// results it read. It is the same at the same point of every replay, so a
// workflow may decide on it to continue as new.
func HistoryLength(Context) int64 { return hostcall.HistoryLength() }

// HistorySize returns the bytes of those events' values with the
// workflow's input: a second measure of what each run replays.
func HistorySize(Context) int64 { return hostcall.HistorySize() }
