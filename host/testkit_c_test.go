package host_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec/codectest"

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

func mustCBase64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(tb, err)
	return b
}

// cFrameHeader is the single-object header of schema v1.
var cFrameHeader = []byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37}

// cCodecOutcome is what the C echo must answer for the frame in, by the Go
// codec: the canonical frame of its Value, or a weft.invalid_input error
// with the Go codec's error code.
func cCodecOutcome(tb testing.TB, in []byte) string {
	tb.Helper()
	v, err := codec.DecodeFrame(in)
	if err != nil {
		return "error:weft.invalid_input:" + string(codec.ErrorCode(err))
	}
	return "ok:" + base64.StdEncoding.EncodeToString(MustFrame(tb, v))
}

// TestCCodecGolden sends every golden case through the C testkit's echo:
// the C decoder and encoder give back the very same bytes, and keep every
// map order the protocol allows.
func TestCCodecGolden(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	g := codectest.LoadGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in := mustCBase64(t, c.WireBase64)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status, "error: %v", res.Error)
			require.Equal(t, in, res.Output)
		})
	}
	for _, alt := range g.AlternateMapOrders {
		t.Run(alt.Name, func(t *testing.T) {
			for _, w := range alt.WireBase64 {
				in := mustCBase64(t, w)
				res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
				require.NoError(t, err)
				require.Equal(t, in, res.Output, "the map keeps its wire order")
			}
		})
	}
}

// TestCCodecMalformed checks that the C decoder rejects every malformed
// golden frame with the protocol's error code, like the Go SDK. A frame
// reaches the decoder unchanged as the snapshot of last_checkpoint (the host
// hands a stored checkpoint over as it is), and, when its header is valid,
// as an input (the host checks only the header of an input).
func TestCCodecMalformed(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	g := codectest.LoadGolden(t)
	for _, mf := range g.MalformedFrames {
		t.Run(mf.Name, func(t *testing.T) {
			frame := mustCBase64(t, mf.WireBase64)
			res, err := k.call(t.Context(), "c", "count", host.CallRequest{
				Input:          MustFrame(t, obj("to", 1)),
				LastCheckpoint: frame,
			})
			require.Equal(t, "error:error:"+mf.Error, cOutcome(res, err), "like the Go testkit, a retryable error")
			require.False(t, res.Error.NonRetryable)
			res, err = k.call(t.Context(), "c", "echo", host.CallRequest{Input: frame})
			switch {
			case len(frame) == 0:
				require.Equal(t, "ok:"+base64.StdEncoding.EncodeToString(MustFrame(t, codec.Null())), cOutcome(res, err), "no input is null")
			case len(frame) < len(cFrameHeader) || !bytes.Equal(frame[:len(cFrameHeader)], cFrameHeader):
				requireCode(t, err, abi.CodeInvalidInput) // the host checks the header
			default:
				require.Equal(t, "error:weft.invalid_input:"+mf.Error, cOutcome(res, err))
				require.True(t, res.Error.NonRetryable)
			}
		})
	}
}

// cDeep returns the datum of n lists nested in each other around a null.
func cDeep(n int) []byte {
	d := bytes.Repeat([]byte{0x0c, 0x02}, n)
	d = append(d, 0x00)
	return append(d, bytes.Repeat([]byte{0x00}, n)...)
}

// TestCCodecHostileFrames sends hand-built datums, valid and hostile,
// through the C echo: it must answer exactly what the Go codec decodes (the
// same canonical bytes, or the same error code), and never allocate for
// counts the bytes cannot hold.
func TestCCodecHostileFrames(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	zigzag := func(i int64) []byte {
		u := uint64(i<<1) ^ uint64(i>>63)
		var b []byte
		for u >= 0x80 {
			b = append(b, byte(u)|0x80)
			u >>= 7
		}
		return append(b, byte(u))
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name  string
		datum []byte
		want  string // the error code, or "" for a valid datum
		canon []byte // the canonical datum a valid one echoes as (default: itself)
	}{
		{name: "Depth64", datum: cDeep(64)},
		{name: "Depth65", datum: cDeep(65), want: "payload_limit_exceeded"},
		{name: "DeepMillion", datum: cDeep(1_000_000), want: "payload_limit_exceeded"},
		{name: "ListClaimsHugeCount", datum: cat([]byte{0x0c}, zigzag(1<<40), []byte{0x00}), want: "invalid_payload_framing"},
		{name: "MapClaimsHugeCount", datum: cat([]byte{0x0e}, zigzag(1<<40), []byte{0x00, 0x00}), want: "invalid_payload_framing"},
		{name: "MapClaimsTooManyForBytes", datum: []byte{0x0e, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00}, want: "invalid_payload_framing"},
		{name: "BlockCountMinInt64", datum: cat([]byte{0x0c}, zigzag(math.MinInt64)), want: "invalid_payload_framing"},
		{name: "NegativeBlockWithSize", datum: []byte{0x0c, 0x03, 0x08, 0x04, 0x02, 0x04, 0x04, 0x00}, canon: []byte{0x0c, 0x04, 0x04, 0x02, 0x04, 0x04, 0x00}},
		{name: "TwoBlocks", datum: []byte{0x0c, 0x02, 0x04, 0x02, 0x02, 0x04, 0x04, 0x00}, canon: []byte{0x0c, 0x04, 0x04, 0x02, 0x04, 0x04, 0x00}},
		{name: "MapInTwoBlocks", datum: []byte{0x0e, 0x02, 0x02, 0x61, 0x00, 0x02, 0x02, 0x62, 0x00, 0x00}, canon: []byte{0x0e, 0x04, 0x02, 0x61, 0x00, 0x02, 0x62, 0x00, 0x00}},
		{name: "RepeatedMapKey", datum: []byte{0x0e, 0x04, 0x02, 0x61, 0x00, 0x02, 0x61, 0x04, 0x02, 0x00}},
		{name: "BlockSizeMismatch", datum: []byte{0x0c, 0x03, 0x06, 0x04, 0x02, 0x04, 0x04, 0x00}, want: "invalid_payload_framing"},
		{name: "BlockSizePastEnd", datum: []byte{0x0c, 0x03, 0x7e, 0x04, 0x02}, want: "invalid_payload_framing"},
		{name: "OverlongVarint", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), want: "invalid_payload_framing"},
		{name: "VarintOverflowsInt64", datum: cat([]byte{0x04}, bytes.Repeat([]byte{0xff}, 9), []byte{0x02}), want: "invalid_payload_framing"},
		{name: "NegativeUnionIndex", datum: []byte{0x01}, want: "invalid_payload_framing"},
		{name: "BooleanTwo", datum: []byte{0x02, 0x02}, want: "invalid_payload_framing"},
		{name: "NegativeStringLength", datum: []byte{0x0a, 0x01}, want: "invalid_payload_framing"},
		{name: "StringLongerThanData", datum: []byte{0x0a, 0x0a, 0x61}, want: "invalid_payload_framing"},
		{name: "InvalidUTF8Key", datum: []byte{0x0e, 0x02, 0x02, 0xff, 0x00, 0x00}, want: "invalid_payload_framing"},
		{name: "SurrogateInString", datum: []byte{0x0a, 0x06, 0xed, 0xa0, 0x80}, want: "invalid_payload_framing"},
		{name: "OverlongUTF8", datum: []byte{0x0a, 0x04, 0xc0, 0x80}, want: "invalid_payload_framing"},
		{name: "AboveMaxRune", datum: []byte{0x0a, 0x08, 0xf4, 0x90, 0x80, 0x80}, want: "invalid_payload_framing"},
		{name: "MaxRune", datum: []byte{0x0a, 0x08, 0xf4, 0x8f, 0xbf, 0xbf}},
		{name: "TruncatedMapKey", datum: []byte{0x0e, 0x02, 0x10, 0x61}, want: "invalid_payload_framing"},
		{name: "EmptyListBlock", datum: []byte{0x0c, 0x00}},
		{name: "NegativeZeroInList", datum: []byte{0x0c, 0x02, 0x06, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append(append([]byte{}, cFrameHeader...), tc.datum...)
			want := "error:weft.invalid_input:" + tc.want
			if tc.want == "" {
				canon := tc.datum
				if tc.canon != nil {
					canon = tc.canon
				}
				want = "ok:" + base64.StdEncoding.EncodeToString(append(append([]byte{}, cFrameHeader...), canon...))
			}
			require.Equal(t, want, cCodecOutcome(t, in), "the Go codec")
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.Equal(t, want, cOutcome(res, err), "the C echo")
		})
	}

	t.Run("FrameOverSizeLimit", func(t *testing.T) {
		in := MustFrame(t, codec.Bytes(make([]byte, 16<<20)))
		res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in, MemoryLimit: 256 << 20})
		require.Equal(t, "error:weft.invalid_input:payload_limit_exceeded", cOutcome(res, err))
	})
}

// cRandValue returns a random Value at most four containers deep.
func cRandValue(r *rand.Rand, depth int) codec.Value {
	kind := r.IntN(8)
	if depth >= 4 && kind >= int(codec.KindList) {
		kind = r.IntN(int(codec.KindList))
	}
	runes := []rune{'a', 'Z', '0', ' ', '"', '\\', 0, 'é', '✓', 0xfffd, 0x1f600, 0x10ffff, 0x7f, 0x80, 0x7ff, 0x800, 0xffff}
	str := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	switch codec.Kind(kind) {
	case codec.KindBoolean:
		return codec.Bool(r.IntN(2) == 1)
	case codec.KindLong:
		switch r.IntN(4) {
		case 0:
			return codec.Long([]int64{0, -1, 1, 63, -64, 64, math.MaxInt64, math.MinInt64}[r.IntN(8)])
		case 1:
			return codec.Long(r.Int64N(1000) - 500)
		}
		return codec.Long(int64(r.Uint64()))
	case codec.KindDouble:
		for {
			f := math.Float64frombits(r.Uint64())
			if r.IntN(3) == 0 {
				f = []float64{0, math.Copysign(0, -1), 7, -1.5, math.MaxFloat64, math.SmallestNonzeroFloat64}[r.IntN(6)]
			}
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return codec.Double(f)
			}
		}
	case codec.KindBytes:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return codec.Bytes(b)
	case codec.KindString:
		return codec.String(str())
	case codec.KindList:
		items := make([]codec.Value, r.IntN(5))
		for i := range items {
			items[i] = cRandValue(r, depth+1)
		}
		return codec.List(items...)
	case codec.KindMap:
		entries := make([]codec.Entry, r.IntN(5))
		for i := range entries {
			entries[i] = codec.Entry{Key: str(), Value: cRandValue(r, depth+1)}
		}
		return codec.Map(entries...)
	}
	return codec.Null()
}

// TestCCodecDifferential compares the C guest's codec with the Go codec on
// random values (the C echo must return the Go encoding byte for byte) and
// on random corruptions of valid frames (the C and Go testkits must give
// the same outcome: the same canonical bytes or the same error code).
func TestCCodecDifferential(t *testing.T) {
	t.Parallel()
	k := mustCKit(t, true)
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 50
	}
	var frames [][]byte
	t.Run("RandomValues", func(t *testing.T) {
		for range n {
			in := MustFrame(t, cRandValue(r, 0))
			frames = append(frames, in)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status, "input %x: %v", in, res.Error)
			require.Equal(t, in, res.Output)
		}
	})
	t.Run("Corruptions", func(t *testing.T) {
		for _, c := range codectest.LoadGolden(t).Cases {
			frames = append(frames, mustCBase64(t, c.WireBase64))
		}
		outcomes := map[string]int{}
		for range 2 * n {
			f := append([]byte{}, frames[r.IntN(len(frames))]...)
			datum := f[len(cFrameHeader):]
			switch r.IntN(4) {
			case 0: // flip a byte
				if len(datum) > 0 {
					datum[r.IntN(len(datum))] ^= byte(1 + r.IntN(255))
				}
			case 1: // cut the datum short
				datum = datum[:r.IntN(len(datum)+1)]
			case 2: // insert a byte
				i := r.IntN(len(datum) + 1)
				datum = append(datum[:i], append([]byte{byte(r.Uint32())}, datum[i:]...)...)
			default: // overwrite a byte with a varint-ish value
				if len(datum) > 0 {
					datum[r.IntN(len(datum))] = []byte{0x00, 0x01, 0x7f, 0x80, 0xff}[r.IntN(5)]
				}
			}
			in := append(append([]byte{}, cFrameHeader...), datum...)
			res, err := k.call(t.Context(), "c", "echo", host.CallRequest{Input: in})
			got := cOutcome(res, err)
			require.Equal(t, cCodecOutcome(t, in), got, "input %x: the C guest and the Go codec disagree", in)
			kind, _, _ := strings.Cut(got, ":")
			outcomes[kind]++
		}
		require.NotZero(t, outcomes["ok"], "some corruptions still decode")
		require.NotZero(t, outcomes["error"], "some corruptions are rejected")
	})
}

// cBuilds are the committed C guests with the commands that build them:
// scripts/build-wasm-c.sh for the testkit, examples/hello-c/README.md for
// the example, each run in dir (relative to this package).
var cBuilds = []struct {
	name, dir, wasm string
	args            []string
}{
	{
		name: "testkit-c", dir: "..", wasm: testkitCPath,
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "plugins/testkit-c/testkit.c", "sdk-wasm/c/weft.c",
		},
	},
	{
		name: "hello-c", dir: "../examples/hello-c", wasm: helloCPath,
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-I", "../../sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "hello.c", "../../sdk-wasm/c/weft.c",
		},
	},
	{
		name: "deploy-pipeline-c", dir: "..", wasm: "../examples/deploy-pipeline/c/pipeline.wasm",
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "examples/deploy-pipeline/c/pipeline.c", "sdk-wasm/c/weft.c",
		},
	},
	{
		name: "wfbench-c", dir: "..", wasm: "../cmd/weft/testdata/wfbench-c.wasm",
		args: []string{
			"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "sdk-wasm/c",
			"-mexec-model=reactor", "-Wl,--strip-all", "cmd/weft/testdata/wfbench-c/wfbench.c", "sdk-wasm/c/weft.c",
		},
	},
}

// TestCBuildsAreUpToDate rebuilds each committed C guest with its
// documented command and requires the committed file to be the same bytes
// (the build is reproducible). It skips when no clang here builds for
// wasm32-wasi: make test needs only Go, and make wasm-c installs clang.
func TestCBuildsAreUpToDate(t *testing.T) {
	t.Parallel()
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("no clang: make wasm-c installs the C toolchain")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.c")
	require.NoError(t, os.WriteFile(probe, []byte("#include <stdlib.h>\nvoid *f(void) { return malloc(1); }\n"), 0o600))
	if out, err := exec.Command(clang, "--target=wasm32-wasi", "-c", "-o", filepath.Join(dir, "probe.o"), probe).CombinedOutput(); err != nil {
		t.Skipf("clang cannot build for wasm32-wasi (make wasm-c installs wasi-libc): %s", out)
	}
	for _, b := range cBuilds {
		t.Run(b.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), b.name+".wasm")
			cmd := exec.Command(clang, append(b.args, "-o", out)...)
			cmd.Dir = b.dir
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, string(msg))
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, MustReadWasm(t, b.wasm)), "%s is stale: rebuild it with make wasm-c", b.wasm)
		})
	}
}

// TestCHelloExample follows examples/hello-c/README.md from its deploy
// step: the committed hello.wasm deployed to a host and called. It greets
// like examples/hello-go.
func TestCHelloExample(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	info, err := h.Compile(t.Context(), MustReadWasm(t, helloCPath))
	require.NoError(t, err)
	require.Equal(t, []host.Function{{Name: "hello", Kind: abi.KindActivity}}, info.Functions)
	tests := []struct {
		name     string
		input    string // the typed JSON projection of the input
		greeting string // the expected greeting, or "" for an error
		errType  string
		log      string
	}{
		{name: "Greets", input: `{"name":"Ada"}`, greeting: "hello, Ada!", log: "greeting name=Ada"},
		{name: "TrimsSpaces", input: `{"name":"  Ada Lovelace\n"}`, greeting: "hello, Ada Lovelace!", log: "greeting name=Ada Lovelace"},
		{name: "KeepsUTF8", input: `{"name":"Grace ✓"}`, greeting: "hello, Grace ✓!", log: "greeting name=Grace ✓"},
		{name: "EmptyName", input: `{"name":" "}`, errType: "invalid_name"},
		{name: "NoName", input: `{}`, errType: "invalid_name"},
		{name: "NameNotAString", input: `{"name":5}`, errType: "weft.invalid_input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := codec.ParseProjection([]byte(tc.input))
			require.NoError(t, err)
			var logs []host.LogEntry
			res, err := h.Call(t.Context(), &host.CallRequest{
				Digest: info.Digest, Function: "hello", Input: MustFrame(t, in),
				Log: func(e host.LogEntry) { logs = append(logs, e) },
			})
			require.NoError(t, err)
			if tc.errType != "" {
				require.Equal(t, abi.StatusError, res.Status)
				require.Equal(t, tc.errType, res.Error.Type)
				require.True(t, res.Error.NonRetryable)
				require.Empty(t, logs)
				return
			}
			require.Equal(t, abi.StatusOK, res.Status, "error: %v", res.Error)
			require.Equal(t, MustFrame(t, obj("greeting", tc.greeting)), res.Output)
			require.Equal(t, []host.LogEntry{{Level: abi.LevelInfo, Source: host.SourceLog, Message: tc.log}}, logs)
		})
	}
}
