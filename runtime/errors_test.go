package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

func TestErrorCode(t *testing.T) {
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
		{name: "error", err: Errorf(CodeNotFound, "task %q not found", "x"), code: CodeNotFound, message: `task "x" not found`},
		{name: "wrapped error", err: fmt.Errorf("get: %w", Errorf(CodeConflict, "busy")), code: CodeConflict, message: "busy"},
		{name: "bare code", err: CodeRateLimited, code: CodeRateLimited, message: "rate_limited"},
		{name: "codec error", err: codecErr, code: Code(codec.CodeInvalidPayloadFraming), message: ce.Message},
		{name: "deadline", err: context.DeadlineExceeded, code: CodeTimeout, message: "deadline exceeded"},
		{name: "cancelled", err: context.Canceled, code: CodeCancelled, message: "cancelled"},
		{name: "store not found", err: fmt.Errorf("x: %w", store.ErrNotFound), code: CodeNotFound, message: "not found"},
		{name: "anything else hides its text", err: errors.New("open /secret/path: denied"), code: CodeInternal, message: "internal error"},
		{name: "internal hides its cause", err: internal("read", errors.New("disk on fire")), code: CodeInternal, message: "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.code, ErrorCode(tc.err))
			require.Equal(t, tc.message, ErrorMessage(tc.err))
		})
	}
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("op: %w", &Error{Code: CodeNotFound, Message: "gone", Err: store.ErrNotFound})
	require.ErrorIs(t, err, CodeNotFound)
	require.NotErrorIs(t, err, CodeConflict)
	require.ErrorIs(t, err, store.ErrNotFound, "the cause stays reachable")
	require.Equal(t, "not_found: gone: store: not found", errors.Unwrap(err).Error())
	require.ErrorIs(t, ErrClosed, CodeUnavailable)
}
