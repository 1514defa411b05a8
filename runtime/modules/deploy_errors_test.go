package modules

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// TestDeployCompileErrors: what the Executor says of a module decides the
// code of a deploy and of a replay check. A module the Executor rejects is
// module_invalid with its message; an Executor failure without a code is
// internal, and its text never reaches the client.
func TestDeployCompileErrors(t *testing.T) {
	t.Parallel()
	r, b := setup(t)
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
			b.exec.CompileFunc = func(context.Context, []byte) ([]store.Function, error) { return nil, tc.err }
			_, err := r.Deploy(ctx, "other", []byte("\x00asm\x01\x00\x00\x00"))
			require.Equal(t, tc.code, fault.CodeOf(err), "deploy: %v", err)
			_, rerr := r.ReplayCheck(ctx, "test", []byte("\x00asm\x01\x00\x00\x00"))
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
// function lists, and the same bad parameters.
func TestDeployFunctionChecks(t *testing.T) {
	t.Parallel()
	r, b := setup(t)
	ctx := t.Context()
	for _, fns := range [][]store.Function{
		{{Name: "a", Kind: "activity"}, {Name: "a", Kind: "workflow"}},
		{{Name: "a", Kind: "query"}},
		{{Name: "", Kind: "activity"}},
	} {
		b.exec.CompileFunc = func(context.Context, []byte) ([]store.Function, error) { return fns, nil }
		_, err := r.Deploy(ctx, "other", []byte("\x00asm\x01\x00\x00\x00"))
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err), "deploy %v: %v", fns, err)
		_, err = r.ReplayCheck(ctx, "test", []byte("\x00asm\x01\x00\x00\x00"))
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err), "replay check %v: %v", fns, err)
	}
	for _, tc := range []struct{ name, module, wasm, param string }{
		{"empty", "m", "", "body"},
		{"bad name", "../m", "hello", "name"},
	} {
		for _, err := range []error{
			func() error { _, err := r.Deploy(ctx, tc.module, []byte(tc.wasm)); return err }(),
			func() error { _, err := r.ReplayCheck(ctx, tc.module, []byte(tc.wasm)); return err }(),
		} {
			var fe *fault.Error
			require.ErrorAs(t, err, &fe, tc.name)
			require.Equal(t, fault.Invalid, fe.Code, tc.name)
			require.Equal(t, tc.param, fe.Param, tc.name)
		}
	}
	_, err := r.Get(ctx, "other")
	require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err), "nothing was recorded")
}
