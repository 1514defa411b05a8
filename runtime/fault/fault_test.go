package fault

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

func TestCodeOf(t *testing.T) {
	t.Parallel()
	_, codecErr := codec.DecodeFrame([]byte{0xc3})
	var ce *codec.Error
	require.ErrorAs(t, codecErr, &ce)
	tests := []struct {
		name    string
		err     error
		code    Code
		message string
	}{
		{name: "nil", err: nil, code: "", message: ""},
		{name: "error", err: Errorf(NotFound, "task %q not found", "x"), code: NotFound, message: `task "x" not found`},
		{name: "wrapped error", err: fmt.Errorf("get: %w", Errorf(Conflict, "busy")), code: Conflict, message: "busy"},
		{name: "bare code", err: RateLimited, code: RateLimited, message: "rate_limited"},
		{name: "codec error", err: codecErr, code: Code(codec.CodeInvalidPayloadFraming), message: ce.Message},
		{name: "deadline", err: context.DeadlineExceeded, code: Timeout, message: "deadline exceeded"},
		{name: "cancelled", err: context.Canceled, code: Cancelled, message: "cancelled"},
		{name: "store not found", err: fmt.Errorf("x: %w", store.ErrNotFound), code: NotFound, message: "not found"},
		{name: "anything else hides its text", err: errors.New("open /secret/path: denied"), code: Internal, message: "internal error"},
		{name: "internal hides its cause", err: Wrap("read", errors.New("disk on fire")), code: Internal, message: "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.code, CodeOf(tc.err))
			require.Equal(t, tc.message, Message(tc.err))
		})
	}
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("op: %w", &Error{Code: NotFound, Message: "gone", Err: store.ErrNotFound})
	require.ErrorIs(t, err, NotFound)
	require.NotErrorIs(t, err, Conflict)
	require.ErrorIs(t, err, store.ErrNotFound, "the cause stays reachable")
	require.Equal(t, "not_found: gone: store: not found", errors.Unwrap(err).Error())
}
