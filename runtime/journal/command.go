package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/codec"
)

// commandKind tells the three commands apart.
type commandKind int

const (
	commandActivity commandKind = iota + 1
	commandTimer
	commandSignal
)

// command is one recorded command of a workflow attempt: step n is future
// id n.
type command struct {
	kind commandKind
	step int64

	// activity
	module, function string
	input            []byte
	options          ActivityOptions
	taskID           string

	// timer
	duration time.Duration
	fireAt   time.Time

	// signal
	name     string
	timeout  time.Duration // negative: none
	deadline time.Time     // zero: none
}

// describe renders a command for a nondeterminism message.
func (c *command) describe() string {
	switch c.kind {
	case commandActivity:
		s := fmt.Sprintf("activity %s.%s(%s)", c.module, c.function, valueText(c.input))
		if !c.options.isZero() {
			if b, err := json.Marshal(c.options); err == nil {
				s += " with options " + string(b)
			}
		}
		return s
	case commandTimer:
		return "timer " + c.duration.String()
	default:
		if c.timeout < 0 {
			return fmt.Sprintf("signal %q without timeout", c.name)
		}
		return fmt.Sprintf("signal %q with timeout %s", c.name, c.timeout)
	}
}

// same reports whether c asks for what the recorded command r recorded.
func (c *command) same(r *command) bool {
	if c.kind != r.kind {
		return false
	}
	switch c.kind {
	case commandActivity:
		return c.module == r.module && c.function == r.function && string(c.input) == string(r.input) && c.options.equal(r.options)
	case commandTimer:
		return c.duration == r.duration
	default:
		return c.name == r.name && c.timeout == r.timeout
	}
}

// valueText is the typed JSON projection of a frame, cut to stay readable.
func valueText(frame []byte) string {
	v, err := codec.DecodeFrame(frame)
	if err != nil {
		return fmt.Sprintf("<%d bytes>", len(frame))
	}
	b, err := codec.MarshalProjection(v)
	if err != nil {
		return fmt.Sprintf("<%d bytes>", len(frame))
	}
	const most = 200
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}

// dueAt is when a timer fires or a signal wait times out.
func (c *command) dueAt() (time.Time, bool) {
	switch c.kind {
	case commandTimer:
		return c.fireAt, true
	case commandSignal:
		return c.deadline, !c.deadline.IsZero()
	}
	return time.Time{}, false
}
