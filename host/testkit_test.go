package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// testkitModules are the builds of the stock testkit plugin that must
// behave alike, one per guest SDK.
var testkitModules = []struct {
	name string
	path string
}{
	{name: "Go", path: testkitPath},
	{name: "C", path: testkitCPath},
}

func TestTestkit(t *testing.T) {
	t.Parallel()
	for _, mod := range testkitModules {
		t.Run(mod.name, func(t *testing.T) {
			t.Parallel()
			testTestkit(t, mod.path)
		})
	}
}

type testkitBundle struct {
	digest string
}

func testTestkit(t *testing.T, path string) {
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	setup := func(t *testing.T) (*host.Host, *testkitBundle) {
		t.Helper()
		return h, &testkitBundle{digest: MustCompile(t, h, path)}
	}

	t.Run("Manifest", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		info, ok := h.Module(b.digest)
		require.True(t, ok)
		require.Equal(t, abi.Version, info.ABIVersion)
		kinds := map[string]abi.Kind{}
		for _, f := range info.Functions {
			kinds[f.Name] = f.Kind
		}
		require.Equal(t, map[string]abi.Kind{
			"echo": abi.KindActivity, "sleep": abi.KindActivity, "spin": abi.KindActivity, "fail": abi.KindActivity,
			"trap": abi.KindActivity, "grow": abi.KindActivity, "count": abi.KindActivity,
			"heartbeat_spin": abi.KindActivity, "tally": abi.KindWorkflow, "chain": abi.KindWorkflow, "saga": abi.KindWorkflow,
			"parent": abi.KindWorkflow,
		}, kinds)
	})

	t.Run("Heartbeat", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		var beats atomic.Int64
		var cancelled atomic.Bool
		req := func(until int64) *host.CallRequest {
			return &host.CallRequest{
				Digest: b.digest, Function: "heartbeat_spin",
				Input:     MustFrame(t, obj("beats", 3, "interval_ms", 1, "until_ms", codec.Long(until))),
				Heartbeat: func() { beats.Add(1) },
				Cancelled: cancelled.Load,
			}
		}
		res, err := h.Call(t.Context(), req(0))
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		out, ok := MustDecode(t, res.Output).AsString()
		require.True(t, ok)
		require.Equal(t, "done", out)
		require.Equal(t, int64(3), beats.Load(), "each heartbeat import reaches the hook")

		// heartbeat answers the cancelled flag, as cancelled does.
		cancelled.Store(true)
		res, err = h.Call(t.Context(), req(0))
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, "cancelled", res.Error.Type)

		// After its heartbeats it spins: only the context stops it.
		cancelled.Store(false)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		res, err = h.Call(ctx, req(time.Now().Add(time.Hour).UnixMilli()))
		require.Error(t, err, "a spin without heartbeats is stopped by the context: %+v", res)
	})

	t.Run("Echo", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		tests := []struct {
			name string
			in   codec.Value
		}{
			{name: "Null", in: codec.Null()},
			{name: "Map", in: obj("hello", "world", "n", 7, "ok", true)},
			{name: "Nested", in: codec.List(codec.Double(7), codec.Bytes([]byte{0, 255}), obj("k", codec.List()))},
			{name: "Large", in: codec.Bytes(make([]byte, 3<<20))},
		}
		for _, tc := range tests {
			in := MustFrame(t, tc.in)
			res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", Input: in})
			require.NoError(t, err, tc.name)
			require.Equal(t, abi.StatusOK, res.Status, tc.name)
			require.Equal(t, abi.KindActivity, res.Kind)
			require.Equal(t, in, res.Output, tc.name)
		}
	})

	t.Run("EchoOutputIsACopy", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		first := MustFrame(t, codec.String("first"))
		res1, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", Input: first})
		require.NoError(t, err)
		_, err = h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", Input: MustFrame(t, codec.String("later"))})
		require.NoError(t, err)
		require.Equal(t, first, res1.Output)
	})

	t.Run("NilInputIsNull", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo"})
		require.NoError(t, err)
		require.True(t, MustDecode(t, res.Output).IsNull())
	})

	t.Run("InvalidInput", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", Input: []byte(`{"json":true}`)})
		requireCode(t, err, abi.CodeInvalidInput)
	})

	t.Run("UnknownFunction", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "nope"})
		requireCode(t, err, abi.CodeFunctionNotFound)
		require.ErrorContains(t, err, "chain, count, echo, fail, grow, heartbeat_spin, parent, saga, sleep, spin, tally, trap")
	})

	t.Run("InputOfTheWrongShape", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "sleep", Input: MustFrame(t, obj("ms", "ten"))})
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, "weft.invalid_input", res.Error.Type)
		require.True(t, res.Error.NonRetryable)
		require.Contains(t, res.Error.Message, "string")
	})

	t.Run("Sleep", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		start := time.Now()
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "sleep", Input: MustFrame(t, obj("ms", 30))})
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "the sleep is real")
	})

	t.Run("SleepCancelledCooperatively", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		var cancelled atomic.Bool
		time.AfterFunc(20*time.Millisecond, func() { cancelled.Store(true) })
		start := time.Now()
		res, err := h.Call(t.Context(), &host.CallRequest{
			Digest: b.digest, Function: "sleep", Input: MustFrame(t, obj("ms", 60_000)),
			Cancelled: cancelled.Load,
		})
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, "cancelled", res.Error.Type)
		require.Less(t, time.Since(start), 10*time.Second)
	})

	t.Run("SleepContextCancelled", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := h.Call(ctx, &host.CallRequest{Digest: b.digest, Function: "sleep", Input: MustFrame(t, obj("ms", 60_000))})
		requireCode(t, err, abi.CodeCancelled)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("SpinTimeout", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		start := time.Now()
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "spin", Timeout: 50 * time.Millisecond})
		requireCode(t, err, abi.CodeTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		t.Logf("spin stopped %s after its 50ms timeout", time.Since(start)-50*time.Millisecond)
	})

	t.Run("SpinCancelled", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		var cancelledAt time.Time
		time.AfterFunc(30*time.Millisecond, func() { cancelledAt = time.Now(); cancel() })
		_, err := h.Call(ctx, &host.CallRequest{Digest: b.digest, Function: "spin"})
		requireCode(t, err, abi.CodeCancelled)
		t.Logf("spin stopped %s after cancel", time.Since(cancelledAt))
	})

	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		tests := []struct {
			name string
			in   codec.Value
			want host.AppError
		}{
			{name: "Retryable", in: obj("type", "card_declined", "message", "no funds"), want: host.AppError{Type: "card_declined", Message: "no funds"}},
			{name: "NonRetryable", in: obj("type", "bad_input", "message", "x", "non_retryable", true), want: host.AppError{Type: "bad_input", Message: "x", NonRetryable: true}},
			{name: "NoType", in: obj("message", "m"), want: host.AppError{Type: "error", Message: "m"}},
		}
		for _, tc := range tests {
			res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "fail", Input: MustFrame(t, tc.in)})
			require.NoError(t, err, tc.name)
			require.Equal(t, abi.StatusError, res.Status, tc.name)
			require.Nil(t, res.Output)
			require.Equal(t, tc.want.Type, res.Error.Type, tc.name)
			require.Equal(t, tc.want.Message, res.Error.Message, tc.name)
			require.Equal(t, tc.want.NonRetryable, res.Error.NonRetryable, tc.name)
			require.Nil(t, res.Error.Details, tc.name)
			ev := MustDecode(t, res.Error.Frame)
			typ, _ := ev.Get(abi.ErrorType)
			s, _ := typ.AsString()
			require.Equal(t, tc.want.Type, s)
		}
	})

	t.Run("Trap", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "trap"})
		requireCode(t, err, abi.CodeTrap)
		require.ErrorContains(t, err, "unreachable")
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo"})
		require.NoError(t, err, "the host keeps serving")
		require.Equal(t, abi.StatusOK, res.Status)
	})

	t.Run("Grow", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "grow", MemoryLimit: 16 << 20})
		requireCode(t, err, abi.CodeMemoryLimit)
		require.ErrorContains(t, err, "limit of 16 MiB")
	})

	t.Run("MemoryLimitBelowModuleMinimum", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		info, _ := h.Module(b.digest)
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", MemoryLimit: info.MinMemory - pageSize})
		requireCode(t, err, abi.CodeMemoryLimit)
		require.ErrorContains(t, err, "needs")
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", MemoryLimit: info.MinMemory + 8<<20})
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
	})

	t.Run("Count", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		var saved [][]byte
		res, err := h.Call(t.Context(), &host.CallRequest{
			Digest: b.digest, Function: "count", Input: MustFrame(t, obj("to", 1000, "checkpoint_every", 100)),
			Checkpoint: func(_ context.Context, f []byte) error { saved = append(saved, f); return nil },
		})
		require.NoError(t, err)
		requireValue(t, obj("count", 1000, "resumed_from", 0), MustDecode(t, res.Output))
		require.Len(t, saved, 10)
		for i, f := range saved {
			requireValue(t, codec.Long(int64(100*(i+1))), MustDecode(t, f))
		}
	})

	t.Run("CountResumes", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		// The first attempt dies at its fourth checkpoint, which its store
		// refuses; the second attempt resumes from the third.
		var last []byte
		req := &host.CallRequest{
			Digest: b.digest, Function: "count", Input: MustFrame(t, obj("to", 1_000_000, "checkpoint_every", 1000)),
			Checkpoint: func(_ context.Context, f []byte) error {
				if v, _ := MustDecode(t, f).AsLong(); v > 3000 {
					return errors.New("store lost")
				}
				last = f
				return nil
			},
		}
		_, err := h.Call(t.Context(), req)
		requireCode(t, err, abi.CodeHookFailed)
		requireValue(t, codec.Long(3000), MustDecode(t, last))

		req.LastCheckpoint = last
		req.Checkpoint = nil
		res, err := h.Call(t.Context(), req)
		require.NoError(t, err)
		requireValue(t, obj("count", 1_000_000, "resumed_from", 3000), MustDecode(t, res.Output))
	})

	t.Run("CheckpointHookFails", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		boom := errors.New("disk full")
		_, err := h.Call(t.Context(), &host.CallRequest{
			Digest: b.digest, Function: "count", Input: MustFrame(t, obj("to", 10, "checkpoint_every", 5)),
			Checkpoint: func(context.Context, []byte) error { return boom },
		})
		requireCode(t, err, abi.CodeHookFailed)
		require.ErrorIs(t, err, boom)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		h, b := setup(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				in := MustFrame(t, codec.Long(int64(i)))
				res, err := h.Call(t.Context(), &host.CallRequest{Digest: b.digest, Function: "echo", Input: in})
				require.NoError(t, err)
				require.Equal(t, in, res.Output)
			})
		}
		wg.Wait()
	})
}

const pageSize = 64 << 10

func TestCompilationCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	wasm := MustReadWasm(t, testkitPath)
	for i := range 2 {
		h, err := host.New(host.Config{CacheDir: dir})
		require.NoError(t, err)
		info, err := h.Compile(t.Context(), wasm)
		require.NoError(t, err, "round %d", i)
		res, err := h.Call(t.Context(), &host.CallRequest{Digest: info.Digest, Function: "echo", Input: MustFrame(t, codec.String("x"))})
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status)
		require.NoError(t, h.Close(t.Context()))
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the cache holds the compiled module")
}
