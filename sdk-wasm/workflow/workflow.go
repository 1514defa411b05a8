package workflow

import (
	"errors"
	"time"

	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/guest"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// Context is the workflow's context: it carries the workflow's Info and the
// activity options that WithActivityOptions set. It is not a
// context.Context, because nothing in a workflow may depend on wall-clock
// deadlines.
//
// # Notes
//
// Only this package implements Context.
type Context interface {
	state() *state
}

type state struct {
	info Info
	opts ActivityOptions
	// optsFrame is the encoded options of opts, made at the first
	// ExecuteActivity: a workflow replays every activity it scheduled on
	// each run, so encoding them once per context saves work on each step.
	optsFrame []byte
	// child and childFrame are the same for child workflows.
	child      ChildWorkflowOptions
	childFrame []byte
	// detached makes waits ignore the workflow's cancel request
	// (NewDisconnectedContext).
	detached bool
}

func (s *state) state() *state { return s }

// Info describes the running workflow.
type Info struct {
	// FunctionName is the name the workflow was registered under.
	FunctionName string
}

// GetInfo returns the Info of the running workflow.
func GetInfo(ctx Context) Info { return ctx.state().info }

// RegisterOptions are the options of RegisterWithOptions.
type RegisterOptions struct {
	// Name is the name the workflow is started by. Defaults to the Go
	// function's name without its package.
	Name string
}

// Register registers fn as a workflow under its Go function name. It panics
// on a duplicate name, on a closure (use RegisterWithOptions), or when
// called after the host read the manifest; call it from an init function.
func Register[In, Out any](fn func(Context, In) (Out, error)) {
	RegisterWithOptions(fn, RegisterOptions{})
}

// RegisterWithOptions registers fn as a workflow with options. It panics
// like Register.
func RegisterWithOptions[In, Out any](fn func(Context, In) (Out, error), opts RegisterOptions) {
	name := opts.Name
	if name == "" {
		name = guest.FuncName(fn)
	}
	guest.RegisterFunc(name, abi.KindWorkflow, Context(&state{info: Info{FunctionName: name}}), fn)
}

// Now returns the workflow's deterministic time: the host records it the
// first time and returns the same instant on every replay.
func Now(Context) time.Time { return time.Unix(0, hostcall.Now()).UTC() }

// Random fills p with deterministic random bytes: the same on every replay
// of the task.
func Random(_ Context, p []byte) { hostcall.Random(p) }

// Logger logs through the host. Key-value pairs are appended as key=value.
// Lines logged during a replay are logged again.
type Logger = guest.Logger

// GetLogger returns the workflow's logger.
func GetLogger(Context) Logger { return Logger{} }

// ApplicationError is a typed error: Type is a stable name that retry
// policies match, NonRetryable ends retries at once, Details carries any
// Value. A workflow returns it to fail with a type; Future.Get returns it
// when an activity failed for good. It is the same type as
// activity.ApplicationError.
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

// ErrTimeout is what Future.Get returns for a WaitSignal whose timeout
// passed before the signal arrived.
var ErrTimeout = errors.New("workflow: timed out waiting for the signal")
