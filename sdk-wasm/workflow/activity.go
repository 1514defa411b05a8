package workflow

import (
	"time"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/convert"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// ActivityOptions are the options of the activities a workflow executes.
type ActivityOptions struct {
	// Module is the name of the deployed module that holds the activity.
	// Defaults to the workflow's own module.
	Module string
	// StartToCloseTimeout bounds one attempt of the activity. Defaults to
	// the runtime's activity timeout.
	StartToCloseTimeout time.Duration
	// ScheduleToStartTimeout bounds how long the activity stays queued
	// before a worker takes it; past it the activity fails with
	// schedule_to_start_timeout (an error of that type from Get), never
	// retried. Defaults to no limit.
	ScheduleToStartTimeout time.Duration
	// HeartbeatTimeout is the longest an attempt may go without a
	// heartbeat (activity.Heartbeat, Progress or Checkpoint); past it the
	// attempt is stopped with heartbeat_timeout and retried as RetryPolicy
	// allows. Defaults to no limit.
	HeartbeatTimeout time.Duration
	// RetryPolicy says how failed attempts are retried. Defaults to the
	// runtime's retry policy.
	RetryPolicy *RetryPolicy
}

// RetryPolicy says how a failed activity is retried.
type RetryPolicy struct {
	// InitialInterval is the delay before the first retry. Defaults to the
	// runtime's.
	InitialInterval time.Duration
	// BackoffCoefficient multiplies the delay after each retry. Defaults to
	// the runtime's.
	BackoffCoefficient float64
	// MaximumInterval caps the delay. Defaults to the runtime's.
	MaximumInterval time.Duration
	// MaximumAttempts is the most attempts, the first included; 1 means no
	// retry. Defaults to the runtime's.
	MaximumAttempts int
	// NonRetryableErrorTypes lists error types that are never retried.
	// Defaults to none.
	NonRetryableErrorTypes []string
}

// WithActivityOptions returns a copy of ctx whose activities use opts.
func WithActivityOptions(ctx Context, opts ActivityOptions) Context {
	s := *ctx.state()
	s.opts, s.optsFrame = opts, nil
	return &s
}

// ExecuteActivity schedules the activity named activity with input (any
// value package codec can represent) and returns its Future. The options
// come from WithActivityOptions. A Future whose input cannot be converted
// fails at Get without scheduling anything.
func ExecuteActivity(ctx Context, activity string, input any) Future {
	if err := canceled(ctx); err != nil {
		return &future{err: err}
	}
	v, err := convert.ToValue(input)
	if err != nil {
		return &future{err: err}
	}
	// The host copies the input: one buffer serves every call.
	in, err := codec.AppendFrame(inputBuf[:0], v)
	if err != nil {
		return &future{err: err}
	}
	inputBuf = in
	s := ctx.state()
	if s.optsFrame == nil {
		of, err := codec.EncodeFrame(optionsValue(s.opts))
		if err != nil {
			return &future{err: err}
		}
		s.optsFrame = of
	}
	return newFuture(hostcall.ScheduleActivity(s.opts.Module, activity, in, s.optsFrame))
}

// inputBuf holds the input frame of the last ExecuteActivity: the module
// runs one call at a time, on one goroutine.
var inputBuf []byte

// optionsValue is the options Value of schedule_activity (docs/abi.md,
// "schedule_activity"): only the fields that are set.
func optionsValue(o ActivityOptions) codec.Value {
	var entries []codec.Entry
	if o.StartToCloseTimeout > 0 {
		entries = append(entries, codec.Entry{Key: abi.OptionTimeoutMS, Value: codec.Long(o.StartToCloseTimeout.Milliseconds())})
	}
	if o.ScheduleToStartTimeout > 0 {
		entries = append(entries, codec.Entry{Key: abi.OptionScheduleToStartTimeoutMS, Value: codec.Long(o.ScheduleToStartTimeout.Milliseconds())})
	}
	if o.HeartbeatTimeout > 0 {
		entries = append(entries, codec.Entry{Key: abi.OptionHeartbeatTimeoutMS, Value: codec.Long(o.HeartbeatTimeout.Milliseconds())})
	}
	if r := o.RetryPolicy; r != nil {
		var re []codec.Entry
		if r.MaximumAttempts > 0 {
			re = append(re, codec.Entry{Key: abi.RetryMaxAttempts, Value: codec.Long(int64(r.MaximumAttempts))})
		}
		if r.InitialInterval > 0 {
			re = append(re, codec.Entry{Key: abi.RetryInitialIntervalMS, Value: codec.Long(r.InitialInterval.Milliseconds())})
		}
		if r.BackoffCoefficient > 0 {
			re = append(re, codec.Entry{Key: abi.RetryBackoffCoefficient, Value: codec.Double(r.BackoffCoefficient)})
		}
		if r.MaximumInterval > 0 {
			re = append(re, codec.Entry{Key: abi.RetryMaxIntervalMS, Value: codec.Long(r.MaximumInterval.Milliseconds())})
		}
		if len(r.NonRetryableErrorTypes) > 0 {
			types := make([]codec.Value, len(r.NonRetryableErrorTypes))
			for i, t := range r.NonRetryableErrorTypes {
				types[i] = codec.String(t)
			}
			re = append(re, codec.Entry{Key: abi.RetryNonRetryableErrorTypes, Value: codec.List(types...)})
		}
		entries = append(entries, codec.Entry{Key: abi.OptionRetry, Value: codec.Map(re...)})
	}
	if entries == nil {
		return codec.Null()
	}
	return codec.Map(entries...)
}

// NewTimer starts a durable timer that fires after d and returns its
// Future, which resolves to null. The timer survives restarts of the
// daemon.
func NewTimer(ctx Context, d time.Duration) Future {
	if err := canceled(ctx); err != nil {
		return &future{err: err}
	}
	return newFuture(hostcall.StartTimer(max(d, 0).Milliseconds()))
}

// Sleep waits for a durable timer of d.
func Sleep(ctx Context, d time.Duration) error {
	return NewTimer(ctx, d).Get(ctx, nil)
}

// WaitSignal waits for the next signal called name and returns its Future,
// which resolves to the signal's payload. With a timeout above zero, Get
// returns ErrTimeout if no signal arrived in time; zero or less waits
// without a deadline. Signals of one name are delivered in order, each once.
func WaitSignal(ctx Context, name string, timeout time.Duration) Future {
	if err := canceled(ctx); err != nil {
		return &future{err: err}
	}
	ms := abi.NoTimeout
	if timeout > 0 {
		ms = timeout.Milliseconds()
	}
	return newFuture(hostcall.WaitSignal(name, ms))
}
