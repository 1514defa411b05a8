package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestFromSourceToCall follows README.md: it builds the plugin with the
// command the README gives, deploys it to a host and calls hello.
func TestFromSourceToCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm module")
	}
	wasmPath := filepath.Join(t.TempDir(), "hello.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasmPath, ".")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	wasm, err := os.ReadFile(wasmPath)
	require.NoError(t, err)

	ctx := context.Background()
	h, err := host.New(host.Config{})
	require.NoError(t, err)
	defer func() { _ = h.Close(ctx) }()
	info, err := h.Compile(ctx, wasm)
	require.NoError(t, err)
	require.Equal(t, []host.Function{{Name: "hello", Kind: abi.KindActivity}}, info.Functions)

	in, err := codec.ParseProjection([]byte(`{"name":"weft"}`))
	require.NoError(t, err)
	frame, err := codec.EncodeFrame(in)
	require.NoError(t, err)
	var logs []host.LogEntry
	res, err := h.Call(ctx, &host.CallRequest{Digest: info.Digest, Function: "hello", Input: frame, Log: func(e host.LogEntry) { logs = append(logs, e) }})
	require.NoError(t, err)
	require.Equal(t, abi.StatusOK, res.Status)
	v, err := codec.DecodeFrame(res.Output)
	require.NoError(t, err)
	js, err := codec.MarshalProjection(v)
	require.NoError(t, err)
	require.JSONEq(t, `{"greeting":"hello, weft!"}`, string(js))
	require.Equal(t, []host.LogEntry{{Level: abi.LevelInfo, Source: host.SourceLog, Message: "greeting name=weft"}}, logs)

	empty, err := codec.EncodeFrame(codec.Map(codec.Entry{Key: "name", Value: codec.String(" ")}))
	require.NoError(t, err)
	res, err = h.Call(ctx, &host.CallRequest{Digest: info.Digest, Function: "hello", Input: empty})
	require.NoError(t, err)
	require.Equal(t, abi.StatusError, res.Status)
	require.Equal(t, "invalid_name", res.Error.Type)
	require.True(t, res.Error.NonRetryable)
}
