package host_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// The C testkit (plugins/testkit-c, on the C SDK in sdk-wasm/c) must behave
// like the Go testkit (plugins/testkit). TestTestkitC runs every case
// against both plugins with the same expectations; the TestCCodec tests
// check the C SDK's Avro Value codec against the Go codec byte for byte.
//
// One difference is by design: the Go echo hands its input frame back
// without decoding it, while the C echo decodes and re-encodes it, which is
// what lets these tests reach the C codec. Both return the same bytes for
// every canonical frame; for a valid non-canonical encoding (several
// blocks, negative block counts) the C echo returns the canonical one, and
// a malformed datum is a weft.invalid_input error from the C guest where the
// Go echo's output fails the host's validation (bad_blob).
//
// The committed testkit-c.wasm is built by scripts/build-wasm-c.sh (make
// wasm-c):
//
//	clang --target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Werror -I sdk-wasm/c \
//	      -mexec-model=reactor -Wl,--strip-all -o plugins/testkit-c/testkit-c.wasm \
//	      plugins/testkit-c/testkit.c sdk-wasm/c/weft.c
const (
	testkitCPath = "../plugins/testkit-c/testkit-c.wasm" // plugins/testkit-c/testkit.c
	helloCPath   = "../examples/hello-c/hello.wasm"      // examples/hello-c/hello.c
)

// cKit is a host with the testkits compiled.
type cKit struct {
	h *host.Host
	// digests maps "c" and "go" to the digest of each testkit.
	digests map[string]string
}

// cKitPlugins are the plugin names of a cKit, C first.
var cKitPlugins = []string{"c", "go"}

// mustCKit creates a host and compiles the C testkit into it, and the Go
// one too unless cOnly is set.
func mustCKit(tb testing.TB, cOnly bool) *cKit {
	tb.Helper()
	h := MustNewHost(tb, host.Config{})
	k := &cKit{h: h, digests: map[string]string{"c": MustCompile(tb, h, testkitCPath)}}
	if !cOnly {
		k.digests["go"] = MustCompile(tb, h, testkitPath)
	}
	return k
}

// call runs function of plugin ("c" or "go") with req's other fields.
func (k *cKit) call(ctx context.Context, plugin, function string, req host.CallRequest) (*host.CallResult, error) {
	req.Digest = k.digests[plugin]
	req.Function = function
	req.Plugin = "testkit-" + plugin
	return k.h.Call(ctx, &req)
}

// cOutcome summarizes a call for comparison: the output bytes, the
// application error's type and code (its message up to the first colon),
// or the host's failure code.
func cOutcome(res *host.CallResult, err error) string {
	switch {
	case err != nil:
		return "host:" + string(host.ErrorCode(err))
	case res.Status == abi.StatusOK:
		return "ok:" + base64.StdEncoding.EncodeToString(res.Output)
	case res.Error != nil:
		code, _, _ := strings.Cut(res.Error.Message, ":")
		return "error:" + res.Error.Type + ":" + code
	}
	return "status:" + res.Status.String()
}

// cResult renders a call for the behaviour table: "ok:" and the output's
// typed JSON projection, "error:<type>:<retryable|non-retryable>" and, with
// withMessage, ":<message>", or "host:<code>".
func cResult(tb testing.TB, res *host.CallResult, err error, withMessage bool) string {
	tb.Helper()
	switch {
	case err != nil:
		return "host:" + string(host.ErrorCode(err))
	case res.Status == abi.StatusOK:
		p, perr := codec.MarshalProjection(MustDecode(tb, res.Output))
		require.NoError(tb, perr)
		return "ok:" + string(p)
	case res.Error != nil:
		s := "error:" + res.Error.Type + ":" + map[bool]string{true: "non-retryable", false: "retryable"}[res.Error.NonRetryable]
		if withMessage {
			s += ":" + res.Error.Message
		}
		return s
	}
	return "status:" + res.Status.String()
}

// cLongs decodes checkpoint frames of longs.
func cLongs(tb testing.TB, frames [][]byte) []int64 {
	tb.Helper()
	out := []int64{}
	for _, f := range frames {
		n, ok := MustDecode(tb, f).AsLong()
		require.True(tb, ok, "a checkpoint of count is a long")
		out = append(out, n)
	}
	return out
}

func TestTestkitC(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, false)
	t.Run("ManifestAsGo", func(t *testing.T) {
		t.Parallel()
		c, ok := k.h.Module(k.digests["c"])
		require.True(t, ok)
		g, ok := k.h.Module(k.digests["go"])
		require.True(t, ok)
		require.Equal(t, abi.Version, c.ABIVersion)
		require.Equal(t, g.Functions, c.Functions, "the same functions, kinds and order as the Go testkit")
		require.Less(t, c.Size, 64<<10, "the C testkit stays small")
	})

	// Behaviour runs every case against both testkits with the same
	// expectations. Where both plugins return the same words, the message
	// is compared too; where exact is set, the output and error frames
	// must be the same bytes.
	t.Run("Behaviour", func(t *testing.T) {
		t.Parallel()
		cancelAfter := func(d time.Duration) func() bool {
			start := time.Now()
			return func() bool { return time.Since(start) > d }
		}
		tests := []struct {
			name        string
			function    string
			req         func(t *testing.T) host.CallRequest
			ctx         func(t *testing.T) context.Context
			want        []string // the outcome; a second entry is an accepted alternative
			message     bool
			exact       bool
			checkpoints []int64
			progress    []string // the progress reports, "done/total message"
			minDuration time.Duration
		}{
			{
				name: "EchoMap", function: "echo", exact: true, want: []string{`ok:{"name":"Ada","n":-7,"pi":3.25,"raw":{"$type":"bytes","base64":"AP8="},"list":[true,null],"nested":{"k":[]}}`},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("name", "Ada", "n", codec.Long(-7), "pi", codec.Double(3.25),
						"raw", codec.Bytes([]byte{0, 0xff}), "list", codec.List(codec.Bool(true), codec.Null()), "nested", obj("k", codec.List())))}
				},
			},
			{name: "EchoNoInput", function: "echo", exact: true, want: []string{"ok:null"}},
			{
				name: "Sleep", function: "sleep", want: []string{"ok:null"}, minDuration: 30 * time.Millisecond,
				req: func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("ms", 30))} },
			},
			{
				name: "SleepNegative", function: "sleep", want: []string{"ok:null"},
				req: func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("ms", -5))} },
			},
			{name: "SleepNullInput", function: "sleep", want: []string{"ok:null"}},
			{
				name: "SleepCancelledCooperatively", function: "sleep", message: true, exact: true, want: []string{"error:cancelled:non-retryable:sleep cancelled"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("ms", 60_000)), Cancelled: cancelAfter(30 * time.Millisecond)}
				},
			},
			{
				name: "SleepContextCancelled", function: "sleep",
				// The host stops the guest when the context ends, but a
				// sleeping guest wakes at that moment and its cancelled()
				// already reports 1: whichever comes first decides, for the
				// Go plugin as for the C one.
				want: []string{"host:cancelled", "error:cancelled:non-retryable"},
				req:  func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("ms", 60_000))} },
				ctx: func(t *testing.T) context.Context {
					ctx, cancel := context.WithCancel(t.Context())
					time.AfterFunc(30*time.Millisecond, cancel)
					return ctx
				},
			},
			{
				name: "SleepFieldOfWrongKind", function: "sleep", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("ms", "soon"))} },
			},
			{
				name: "SleepDoubleIsNotLong", function: "sleep", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("ms", codec.Double(1)))}
				},
			},
			{
				name: "SleepListInput", function: "sleep", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, codec.List(codec.Long(1)))}
				},
			},
			{
				name: "SpinTimeout", function: "spin", want: []string{"host:timeout"},
				req: func(*testing.T) host.CallRequest { return host.CallRequest{Timeout: 50 * time.Millisecond} },
			},
			{
				name: "SpinCancelled", function: "spin", want: []string{"host:cancelled"},
				ctx: func(t *testing.T) context.Context {
					ctx, cancel := context.WithCancel(t.Context())
					time.AfterFunc(30*time.Millisecond, cancel)
					return ctx
				},
			},
			{
				name: "Fail", function: "fail", message: true, exact: true, want: []string{"error:card_declined:non-retryable:no funds ✓"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("type", "card_declined", "message", "no funds ✓", "non_retryable", true, "extra", 1))}
				},
			},
			{
				name: "FailRetryable", function: "fail", message: true, exact: true, want: []string{"error:flaky:retryable:try again"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("type", "flaky", "message", "try again"))}
				},
			},
			{
				name: "FailRepeatedKeyLastWins", function: "fail", message: true, exact: true, want: []string{"error:second:retryable:"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("type", "first", "type", "second"))}
				},
			},
			{
				name: "FailNullFields", function: "fail", message: true, exact: true, want: []string{"error:error:retryable:"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("type", codec.Null(), "message", codec.Null(), "non_retryable", codec.Null()))}
				},
			},
			{name: "FailNoInput", function: "fail", message: true, exact: true, want: []string{"error:error:retryable:"}},
			{
				name: "FailTypeOfWrongKind", function: "fail", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("type", 5))} },
			},
			{
				name: "FailNonRetryableOfWrongKind", function: "fail", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("non_retryable", "yes"))}
				},
			},
			{
				name: "FailStringInput", function: "fail", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, codec.String("boom"))}
				},
			},
			{name: "Trap", function: "trap", want: []string{"host:trap"}},
			{
				name: "GrowHitsMemoryLimit", function: "grow", want: []string{"host:memory_limit"},
				req: func(*testing.T) host.CallRequest { return host.CallRequest{MemoryLimit: 16 << 20} },
			},
			{
				name: "Count", function: "count", exact: true, want: []string{`ok:{"count":10,"resumed_from":0}`}, checkpoints: []int64{3, 6, 9},
				progress: []string{"3/10 counting", "6/10 counting", "9/10 counting", "10/10 counting"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 10, "checkpoint_every", 3))}
				},
			},
			{
				name: "CountResumes", function: "count", exact: true, want: []string{`ok:{"count":10,"resumed_from":6}`}, checkpoints: []int64{9},
				progress: []string{"9/10 counting", "10/10 counting"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 10, "checkpoint_every", 3)), LastCheckpoint: MustFrame(t, codec.Long(6))}
				},
			},
			{
				name: "CountWithoutCheckpoints", function: "count", exact: true, want: []string{`ok:{"count":5,"resumed_from":0}`}, checkpoints: []int64{},
				progress: []string{"5/5 counting"},
				req:      func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("to", 5))} },
			},
			{
				name: "CountNegativeEvery", function: "count", exact: true, want: []string{`ok:{"count":5,"resumed_from":0}`}, checkpoints: []int64{},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 5, "checkpoint_every", -1))}
				},
			},
			{
				name: "CountProgressWithoutCheckpoints", function: "count", exact: true, want: []string{`ok:{"count":10000,"resumed_from":0}`}, checkpoints: []int64{},
				progress: []string{"4096/10000 counting", "8192/10000 counting", "10000/10000 counting"},
				req:      func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("to", 10000))} },
			},
			{
				name: "CountPastTarget", function: "count", exact: true, want: []string{`ok:{"count":5,"resumed_from":5}`}, checkpoints: []int64{},
				progress: []string{},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 3)), LastCheckpoint: MustFrame(t, codec.Long(5))}
				},
			},
			{
				name: "CountNullCheckpoint", function: "count", exact: true, want: []string{`ok:{"count":2,"resumed_from":0}`},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 2)), LastCheckpoint: MustFrame(t, codec.Null())}
				},
			},
			{
				name: "CountNoInput", function: "count", exact: true, want: []string{`ok:{"count":4,"resumed_from":4}`},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{LastCheckpoint: MustFrame(t, codec.Long(4))}
				},
			},
			{
				name: "CountCheckpointOfWrongKind", function: "count", want: []string{"error:error:retryable"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{Input: MustFrame(t, obj("to", 2)), LastCheckpoint: MustFrame(t, codec.String("six"))}
				},
			},
			{
				name: "CountFieldOfWrongKind", function: "count", want: []string{"error:weft.invalid_input:non-retryable"},
				req: func(t *testing.T) host.CallRequest { return host.CallRequest{Input: MustFrame(t, obj("to", "ten"))} },
			},
			{
				name: "CountCheckpointHookFails", function: "count", want: []string{"host:hook_failed"},
				req: func(t *testing.T) host.CallRequest {
					return host.CallRequest{
						Input:      MustFrame(t, obj("to", 10, "checkpoint_every", 5)),
						Checkpoint: func(context.Context, []byte) error { return errors.New("disk full") },
					}
				},
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				var results [2]*host.CallResult
				for i, plugin := range cKitPlugins {
					var req host.CallRequest
					if tc.req != nil {
						req = tc.req(t)
					}
					var saved [][]byte
					reports := []string{}
					req.Progress = func(done, total int64, msg string) {
						reports = append(reports, fmt.Sprintf("%d/%d %s", done, total, msg))
					}
					if req.Checkpoint == nil {
						req.Checkpoint = func(_ context.Context, f []byte) error { saved = append(saved, f); return nil }
					}
					ctx := t.Context()
					if tc.ctx != nil {
						ctx = tc.ctx(t)
					}
					start := time.Now()
					res, err := k.call(ctx, plugin, tc.function, req)
					require.Contains(t, tc.want, cResult(t, res, err, tc.message), plugin)
					require.GreaterOrEqual(t, time.Since(start), tc.minDuration, plugin)
					if tc.checkpoints != nil {
						require.Equal(t, tc.checkpoints, cLongs(t, saved), plugin)
					}
					if tc.progress != nil {
						require.Equal(t, tc.progress, reports, plugin)
					}
					results[i] = res
				}
				if tc.exact {
					c, g := results[0], results[1]
					require.Equal(t, g.Output, c.Output, "the same output bytes")
					if g.Error != nil {
						require.Equal(t, g.Error.Frame, c.Error.Frame, "the same error frame")
					}
				}
			})
		}
	})

	t.Run("CountResumesFromItsOwnCheckpoint", func(t *testing.T) {
		t.Parallel()
		var saved [][]byte
		res, err := k.call(t.Context(), "c", "count", host.CallRequest{
			Input:      MustFrame(t, obj("to", 8, "checkpoint_every", 3)),
			Checkpoint: func(_ context.Context, f []byte) error { saved = append(saved, f); return nil },
		})
		require.NoError(t, err)
		require.Equal(t, MustFrame(t, obj("count", 8, "resumed_from", 0)), res.Output)
		require.Equal(t, []int64{3, 6}, cLongs(t, saved))
		res, err = k.call(t.Context(), "c", "count", host.CallRequest{
			Input:          MustFrame(t, obj("to", 12, "checkpoint_every", 3)),
			LastCheckpoint: saved[len(saved)-1],
		})
		require.NoError(t, err)
		require.Equal(t, MustFrame(t, obj("count", 12, "resumed_from", 6)), res.Output)
	})

	t.Run("HostServesAfterFailures", func(t *testing.T) {
		t.Parallel()
		k := mustCKit(t, true) // its own host: the failures discard instances
		for _, fn := range []string{"trap", "grow", "spin"} {
			_, err := k.call(t.Context(), "c", fn, host.CallRequest{MemoryLimit: 8 << 20, Timeout: 50 * time.Millisecond})
			require.Error(t, err, fn)
		}
		in := MustFrame(t, codec.String("still here"))
		res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
		require.NoError(t, err)
		require.Equal(t, in, res.Output)
	})
}
