//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"strings"
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

// TestServeStoreFlags checks that weft serve refuses bad --store, --host-id,
// --lease-ttl and --store-max-conns values as usage errors, before it
// opens anything.
func TestServeStoreFlags(t *testing.T) {
	t.Setenv("WEFT_STORE", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "sqlite:///var/lib/weft.db"}, "--store must be a PostgreSQL URL"},
		{[]string{"--store", "postgres://weft@db:port/weft"}, "--store: "},
		{[]string{"--store", "postgres://weft@db/weft", "--store-max-conns", "0"}, "--store-max-conns must be between 1"},
		{[]string{"--store-max-conns", "20"}, "applies to a PostgreSQL --store only"},
		{[]string{"--host-id", "not a host"}, "--host-id"},
		{[]string{"--lease-ttl", "10ms"}, "--lease-ttl must be at least 1s"},
	} {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, tc.args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%v: nothing was opened", tc.args)
	}
	t.Setenv("WEFT_STORE", "weft.db")
	var stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"serve", "--data", t.TempDir()}, strings.NewReader(""), io.Discard, &stderr))
	require.Contains(t, stderr.String(), "--store must be a PostgreSQL URL", "serve reads WEFT_STORE")
}
