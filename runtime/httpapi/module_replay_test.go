package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

func TestModulePutCheckReplay(t *testing.T) {
	t.Parallel()
	var plain, checked int
	f := &fakeEngine{
		AuthenticateFunc: fakeAuth(scopeAdmin),
		ModuleDeployFunc: func(_ context.Context, name string, _ []byte) (*store.Module, error) {
			plain++
			return &store.Module{Name: name, Version: 1, Digest: "sha256:00"}, nil
		},
		ModuleDeployCheckFunc: func(_ context.Context, name string, wasm []byte) (*store.Module, error) {
			checked++
			if string(wasm) == "diverges" {
				return nil, fault.Errorf(fault.ReplayDivergence, "the new version of %q would not replay 1 running workflow(s); not deployed: task_1 (deploy): step 2", name)
			}
			return &store.Module{Name: name, Version: 2, Digest: "sha256:01"}, nil
		},
	}
	ts := MustFakeServer(t, f, Config{})
	tests := []struct {
		name    string
		query   string
		body    string
		status  int
		code    string
		plain   int
		checked int
	}{
		{name: "Plain", query: "", body: "m", status: 201, plain: 1},
		{name: "False", query: "?check_replay=false", body: "m", status: 201, plain: 2},
		{name: "Checked", query: "?check_replay=true", body: "m", status: 201, plain: 2, checked: 1},
		{name: "Diverges", query: "?check_replay=1", body: "diverges", status: 409, code: "replay_divergence", plain: 2, checked: 2},
		{name: "BadValue", query: "?check_replay=maybe", body: "m", status: 400, code: "invalid_request", plain: 2, checked: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, "PUT", ts.URL+"/v1/modules/pipeline"+tc.query, tc.body, hdr("Content-Type", "application/wasm"))
			if tc.code != "" {
				e := MustError(t, resp, tc.status, tc.code)
				if tc.code == "replay_divergence" {
					require.Contains(t, e.Error.Message, "task_1")
				} else {
					require.NotNil(t, e.Error.Param)
					require.Equal(t, "check_replay", *e.Error.Param)
				}
			} else {
				MustDecode[map[string]any](t, resp, tc.status)
			}
			require.Equal(t, tc.plain, plain)
			require.Equal(t, tc.checked, checked)
		})
	}
}
