package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestHelpEverywhere runs --help on every command of the tree: each prints its
// usage and exits 0.
func TestHelpEverywhere(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(newRootCmd(nil, nil, nil), nil)
	require.Greater(t, len(paths), 20, "the command tree")
	for _, p := range paths {
		t.Run(strings.Join(append([]string{"weft"}, p...), "_"), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append(append([]string{}, p...), "--help"), strings.NewReader(""), &out, &errOut)
			require.Equal(t, 0, code, errOut.String())
			require.Contains(t, out.String(), "Usage:")
			require.Contains(t, out.String(), "weft "+strings.Join(p, " "))
		})
	}
}

// TestUsageErrors checks that mistakes in the command line exit 2 with a
// pointer to --help, and failures of a well-formed command exit 1.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, msg: "unknown command"},
		{name: "no subcommand", args: []string{"tasks"}, code: 2, msg: "needs a subcommand"},
		{name: "missing argument", args: []string{"tasks", "get"}, code: 2, msg: "accepts 1 arg(s)"},
		{name: "extra argument", args: []string{"modules", "list", "x"}, code: 2, msg: "unknown command"},
		{name: "bad flag value", args: []string{"serve", "--log-format", "xml"}, code: 2, msg: "--log-format"},
		{name: "bad duration", args: []string{"run", "m", "f", "--timeout", "soon"}, code: 2, msg: "invalid duration"},
		{name: "exclusive inputs", args: []string{"run", "m", "f", "--input", "1", "--input-file", "x"}, code: 2, msg: "exclusive"},
		{name: "no daemon", args: []string{"modules", "list", "--addr", "127.0.0.1:1", "--token", "t"}, code: 1, msg: "connect to weft"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errOut)
			require.Equal(t, tc.code, code, errOut.String())
			require.Contains(t, errOut.String(), tc.msg)
		})
	}
}
