//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestE2EServeSizeFlags checks that the daemon takes sizes with units and
// refuses a malformed one as a usage error.
func TestE2EServeSizeFlags(t *testing.T) {
	d := MustRunMain(t, "--memory-budget", "1GiB", "--max-page-bytes", "2MiB", "--memory-limit", "32MiB")
	d.MustDeployTestkit()
	require.Equal(t, 1, d.CLI("run", "testkit", "grow", "--json").Code, "grow stops at the 32MiB default limit")
	res := d.CLI("serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--memory-budget", "lots")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `invalid size "lots"`)
}
