//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/host"
)

// BenchmarkDeployAdmission measures the compile of a deploy of testkit
// (host.Compile: compile, checks, first instance, manifest) with and
// without admission (the structural pass and the compile child), cold (an
// empty compilation cache) and cached (a warm cache, as at a redeploy or
// after a restart).
//
//	go test -run '^$' -bench BenchmarkDeployAdmission -benchtime 3x -count 5 ./cmd/weft/
func BenchmarkDeployAdmission(b *testing.B) {
	wasm, err := os.ReadFile(testkitWasm)
	require.NoError(b, err)
	bin := MustBuildWeft(b)
	newHost := func(b *testing.B, dir string, child bool) *host.Host {
		cfg := host.Config{CacheDir: dir}
		if child {
			c, err := newChildCompiler(context.Background(), cfg, admissionConfig{
				memoryLimit: defaultMemoryLimit, compileTimeout: defaultCompileTimeout, compileMaxMemory: defaultCompileMaxMemory, compileWorkers: defaultCompileWorkers,
			}, hclog.NewNullLogger())
			require.NoError(b, err)
			c.bin = bin
			cfg.Precompile = c.Precompile
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
	for _, mode := range []struct {
		name  string
		child bool
	}{{"in-process", false}, {"admission+child", true}} {
		b.Run("cold/"+mode.name, func(b *testing.B) {
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				deploy(b, filepath.Join(root, strconv.Itoa(i)), mode.child)
			}
		})
		b.Run("cached/"+mode.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "cache")
			deploy(b, dir, mode.child)
			for b.Loop() {
				deploy(b, dir, mode.child)
			}
		})
	}
}
