//go:build unix

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/host"
)

// BenchmarkDeployAdmission measures the compile of a deploy of testkit
// (host.Compile: compile, checks, first instance, manifest) with and
// without admission (the structural pass, the compile child and its
// record), cold (an
// empty compilation cache) and cached (a warm cache, as at a redeploy or
// after a restart).
//
//	go test -run '^$' -bench BenchmarkDeployAdmission -benchtime 9x ./cmd/internal/daemon/
func BenchmarkDeployAdmission(b *testing.B) {
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(b, err)
	bin := testBin(b)
	newHost := func(b *testing.B, dir string, child bool) *host.Host {
		// Without admission: every digest counts as admitted, so neither
		// the structural pass nor a child runs.
		cfg := host.Config{CacheDir: dir, Admitted: func(string) bool { return true }}
		if child {
			c, err := newChildCompiler(context.Background(), bin, cfg, DefaultConfig().Admission, hclog.NewNullLogger())
			require.NoError(b, err)
			cfg.Precompile, cfg.Admitted = c.Precompile, c.Admitted
		}
		h, err := host.New(cfg)
		require.NoError(b, err)
		return h
	}
	deploy := func(b *testing.B, dir string, child bool) {
		h := newHost(b, dir, child)
		_, err := h.Compile(context.Background(), wasm)
		require.NoError(b, err)
		require.NoError(b, h.Close(context.Background()))
	}
	// The two ways take turns within one loop, so that a change in the
	// machine's load between them does not pass for a difference; each
	// reports its median and the ratio of the medians.
	run := func(b *testing.B, cold bool) {
		root := b.TempDir()
		warm := [2]string{filepath.Join(root, "warm-in-process"), filepath.Join(root, "warm-child")}
		if !cold {
			deploy(b, warm[0], false)
			deploy(b, warm[1], true)
		}
		var took [2][]time.Duration
		for i := 0; b.Loop(); i++ {
			for k := range 2 {
				way := (i + k) % 2 // alternate which goes first
				dir := warm[way]
				if cold {
					dir = filepath.Join(root, strconv.Itoa(i), strconv.Itoa(way))
				}
				start := time.Now()
				deploy(b, dir, way == 1)
				took[way] = append(took[way], time.Since(start))
			}
		}
		in, child := median(took[0]), median(took[1])
		b.ReportMetric(float64(in.Milliseconds()), "in-process-ms")
		b.ReportMetric(float64(child.Milliseconds()), "admission+child-ms")
		b.ReportMetric(float64(child)/float64(in), "ratio")
	}
	b.Run("cold", func(b *testing.B) { run(b, true) })
	b.Run("cached", func(b *testing.B) { run(b, false) })
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
