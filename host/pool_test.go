package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestPoolHammer runs P goroutines × N calls on one module, each checking
// its own output, with a trapping call now and then, and checks that
// instances are reused and never shared.
func TestPoolHammer(t *testing.T) {
	t.Parallel()
	p, n := 8, 200
	if testing.Short() {
		n = 25
	}
	h := MustNewHost(t, host.Config{MaxIdle: p})
	digest := MustCompile(t, h, testkitPath)
	var wg sync.WaitGroup
	for g := range p {
		wg.Go(func() {
			for i := range n {
				if i%50 == 49 {
					_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "trap"})
					if host.ErrorCode(err) != abi.CodeTrap {
						require.Failf(t, "trap", "got %v", err)
					}
					continue
				}
				in := MustFrame(t, obj("g", g, "i", i))
				res, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo", Input: in})
				require.NoError(t, err)
				require.Equal(t, in, res.Output)
			}
		})
	}
	wg.Wait()
	st := h.Stats()
	traps := int64(p * (n / 50))
	t.Logf("%d calls: %d instances created, %d traps, %d live", p*n, st.Created, traps, st.Live)
	require.LessOrEqual(t, st.Created, int64(p)+traps+1, "instances are reused")
	require.LessOrEqual(t, st.Live, int64(p), "at most MaxIdle instances stay")
}

// TestPoolPerMemoryLimit checks that calls with different memory limits
// run in different instances.
func TestPoolPerMemoryLimit(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	digest := MustCompile(t, h, testkitPath)
	before := h.Stats().Created
	for range 3 {
		for _, limit := range []int64{16 << 20, 32 << 20} {
			_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo", MemoryLimit: limit})
			require.NoError(t, err)
		}
	}
	require.Equal(t, before+2, h.Stats().Created, "one instance per limit, reused")
	_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "grow", MemoryLimit: 16 << 20})
	requireCode(t, err, abi.CodeMemoryLimit)
	require.ErrorContains(t, err, "limit of 16 MiB")
	_, err = h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "grow", MemoryLimit: 32 << 20})
	requireCode(t, err, abi.CodeMemoryLimit)
	require.ErrorContains(t, err, "limit of 32 MiB")
}

func TestClose(t *testing.T) {
	t.Parallel()
	h, err := host.New(host.Config{CacheDir: cacheDir})
	require.NoError(t, err)
	digest := MustCompile(t, h, testkitPath)

	errs := make(chan error, 2)
	for _, fn := range []string{"spin", "sleep"} {
		go func() {
			_, err := h.Call(context.Background(), &host.CallRequest{Digest: digest, Function: fn, Input: MustFrame(t, obj("ms", 60_000))})
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.Close(ctx), "Close stops the running calls and waits for them")
	for range 2 {
		requireCode(t, <-errs, abi.CodeHostClosed)
	}
	require.NoError(t, h.Close(ctx))
	_, err = h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo"})
	requireCode(t, err, abi.CodeHostClosed)
	_, err = h.Compile(t.Context(), MustReadWasm(t, testkitPath))
	requireCode(t, err, abi.CodeHostClosed)
}

// TestUnloadWhileRunning unloads a module during a call: the call
// finishes, and no instance of the module stays open.
func TestUnloadWhileRunning(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{})
	digest := MustCompile(t, h, testkitPath)
	done := make(chan error, 1)
	go func() {
		_, err := h.Call(context.Background(), &host.CallRequest{Digest: digest, Function: "sleep", Input: MustFrame(t, obj("ms", 200))})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, h.Unload(t.Context(), digest))
	require.NoError(t, <-done)
	require.Equal(t, int64(0), h.Stats().Live)
	_, ok := h.Module(digest)
	require.False(t, ok)
	_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo"})
	requireCode(t, err, abi.CodeModuleNotFound)
	_, err = h.Call(t.Context(), nil)
	requireCode(t, err, abi.CodeInvalidInput)
}
