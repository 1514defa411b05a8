package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-run/weft/runtime/fault"
)

// TestDeployCompileErrors: what the Executor says of a module decides the
// code of a deploy and of a replay check. A module the Executor rejects is
// module_invalid with its message; an Executor failure without a code is
// internal, and its text never reaches the client.
func TestDeployCompileErrors(t *testing.T) {
	t.Parallel()
	e, b := setup(t, echo, nil)
	ctx := t.Context()
	secret := errors.New("open /var/lib/weft/cache/x: permission denied")
	for _, tc := range []struct {
		name    string
		err     error
		code    fault.Code
		message string
	}{
		{"rejected", fault.Errorf(fault.ModuleInvalid, "invalid_module: not a valid WebAssembly module"), fault.ModuleInvalid, "invalid_module: not a valid WebAssembly module"},
		{"internal", secret, fault.Internal, "internal error"},
		{"cancelled", context.Canceled, fault.Cancelled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.exec.CompileFunc = func(context.Context, []byte) (*ModuleInfo, error) { return nil, tc.err }
			_, err := e.ModuleDeploy(ctx, "other", []byte("\x00asm\x01\x00\x00\x00"))
			require.Equal(t, tc.code, fault.CodeOf(err), "deploy: %v", err)
			_, rerr := e.ModuleReplayCheck(ctx, "test", []byte("\x00asm\x01\x00\x00\x00"))
			require.Equal(t, tc.code, fault.CodeOf(rerr), "replay check: %v", rerr)
			if tc.message != "" {
				require.Equal(t, tc.message, fault.Message(err))
				require.Equal(t, tc.message, fault.Message(rerr))
			}
			if tc.code == fault.Internal {
				require.ErrorIs(t, err, secret, "the cause is kept for the logs")
				require.NotContains(t, fault.Message(err), "permission denied")
				require.NotContains(t, fault.Message(rerr), "permission denied")
			}
		})
	}
}

// TestDeployFunctionChecks: deploy and replay check refuse the same
// function lists.
func TestDeployFunctionChecks(t *testing.T) {
	t.Parallel()
	e, b := setup(t, echo, nil)
	ctx := t.Context()
	for _, fns := range [][]Function{
		{{Name: "a", Kind: "activity"}, {Name: "a", Kind: "workflow"}},
		{{Name: "a", Kind: "query"}},
		{{Name: "", Kind: "activity"}},
	} {
		b.exec.CompileFunc = func(context.Context, []byte) (*ModuleInfo, error) { return &ModuleInfo{Functions: fns}, nil }
		_, err := e.ModuleDeploy(ctx, "other", []byte("\x00asm\x01\x00\x00\x00"))
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err), "deploy %v: %v", fns, err)
		_, err = e.ModuleReplayCheck(ctx, "test", []byte("\x00asm\x01\x00\x00\x00"))
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err), "replay check %v: %v", fns, err)
	}
}
