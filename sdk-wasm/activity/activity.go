package activity

import (
	"context"
	"errors"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// RegisterOptions are the options of RegisterWithOptions.
type RegisterOptions struct {
	// Name is the name the activity is called by. Defaults to the Go
	// function's name without its package ("Echo" for main.Echo).
	Name string
}

// Info describes the running activity.
type Info struct {
	// FunctionName is the name the activity was registered under.
	FunctionName string
}

type infoKey struct{}

// Register registers fn as an activity under its Go function name. It
// panics on a duplicate name, on a closure (use RegisterWithOptions), or
// when called after the host read the manifest; call it from an init
// function.
func Register[In, Out any](fn func(context.Context, In) (Out, error)) {
	RegisterWithOptions(fn, RegisterOptions{})
}

// RegisterWithOptions registers fn as an activity with options. It panics
// like Register.
func RegisterWithOptions[In, Out any](fn func(context.Context, In) (Out, error), opts RegisterOptions) {
	name := opts.Name
	if name == "" {
		name = guest.FuncName(fn)
	}
	ctx := context.WithValue(context.Background(), infoKey{}, Info{FunctionName: name})
	guest.RegisterFunc(name, abi.KindActivity, ctx, fn)
}

// Frame is a Value still in its single-object frame (package codec). An
// activity that takes and returns a Frame skips decoding and encoding,
// which suits activities that pass payloads through without looking
// inside; decode one with codec.DecodeFrame. The input Frame is valid only
// until the activity returns: copy what you keep. The host validates the
// returned Frame.
type Frame = guest.Frame

// GetInfo returns the Info of the activity running with ctx.
func GetInfo(ctx context.Context) Info {
	info, _ := ctx.Value(infoKey{}).(Info)
	return info
}

// Logger logs through the host: lines become the task's log and go to the
// plugin's logger. Key-value pairs are appended as key=value.
type Logger = guest.Logger

// GetLogger returns the logger of the activity running with ctx.
func GetLogger(context.Context) Logger { return Logger{} }

// ApplicationError is a typed error: Type is a stable name that retry
// policies match, NonRetryable ends retries at once, Details carries any
// Value. It is the same type as workflow.ApplicationError.
type ApplicationError = guest.ApplicationError

// NewApplicationError returns a retryable error of type errType.
func NewApplicationError(message, errType string) *ApplicationError {
	return &ApplicationError{Type: errType, Message: message}
}

// NewNonRetryableApplicationError returns an error of type errType that is
// never retried.
func NewNonRetryableApplicationError(message, errType string) *ApplicationError {
	return &ApplicationError{Type: errType, Message: message, NonRetryable: true}
}

// Checkpoint records v (any value package codec can represent) as the
// activity's latest snapshot. The host stores it before Checkpoint returns;
// with on_restart=resume, the next attempt reads it with LastCheckpoint. It
// fails only when v cannot be converted to a Value.
func Checkpoint(ctx context.Context, v any) error {
	val, err := convert.ToValue(v)
	if err != nil {
		return err
	}
	frame, err := codec.EncodeFrame(val)
	if err != nil {
		return err
	}
	hostcall.Checkpoint(frame)
	return nil
}

// LastCheckpoint stores the latest snapshot of this task (from this attempt
// or an earlier one) in the value valuePtr points to and reports whether
// there was one.
func LastCheckpoint(ctx context.Context, valuePtr any) (bool, error) {
	frame, ok := hostcall.LastCheckpoint()
	if !ok {
		return false, nil
	}
	v, err := codec.DecodeFrame(frame)
	if err != nil {
		return true, err
	}
	return true, convert.FromValue(v, valuePtr)
}

// Cancelled reports whether the task was asked to stop. A long-running
// activity polls it and returns early (for example with an error of type
// "cancelled").
func Cancelled(context.Context) bool { return hostcall.Cancelled() }

// Heartbeat tells the host that the activity is alive and reports, like
// Cancelled, whether the task was asked to stop. An activity started with
// a heartbeat timeout must call Heartbeat (or Progress, or Checkpoint,
// which count as heartbeats too) within that interval, or the host stops
// the attempt with heartbeat_timeout and retries it as its retry policy
// allows (docs/workflows.md, "Timeouts").
func Heartbeat(context.Context) bool { return hostcall.Heartbeat() }

// ErrProgressRefused is what Progress returns for a report the host
// refused: a negative done or total, done above a known total, or a
// message that is not valid UTF-8.
var ErrProgressRefused = errors.New("weft: progress report refused")

// Progress reports how far the activity got: done units of work out of
// total (0 when the total is unknown), with an optional short message
// (at most 256 bytes are kept, cut at a rune boundary). The user sees it
// live, as task.progress events and the task's progress field; the daemon
// records at most a few reports a second and always the last one, so an
// activity may report as often as it likes. Progress never waits for the
// store. It returns ErrProgressRefused for a report the host refused.
func Progress(ctx context.Context, done, total int64, message string) error {
	if !hostcall.Progress(done, total, message) {
		return ErrProgressRefused
	}
	return nil
}
