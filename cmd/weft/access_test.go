package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/runtime/access"
)

// TestAccessMemoryBound keeps access's default bound on a client's memory
// ceiling equal to the engine's bound on a task's memory limit: access
// does not import runtime, and the daemon passes runtime.MaxMemoryLimit.
func TestAccessMemoryBound(t *testing.T) {
	require.Equal(t, int64(runtime.MaxMemoryLimit), int64(access.DefaultMaxMemoryLimit))
}
