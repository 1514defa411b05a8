// Command weft is the one binary of weft: the daemon (weft serve) and every
// client command (deploy, run, tasks, modules, clients, preflight, value,
// bench).
//
// Exit status: 0 on success, 1 when a command fails, 2 on a usage error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	// The time zones of schedules, also on a machine without
	// /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError marks an error in the command line itself; it exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an exit status chosen by a command, with a message that
// has already been printed (or none).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// run executes the command line args and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(stderr, err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "weft",
		Short:         "weft runs durable workflows deployed as WebAssembly modules",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())}
	})
	root.AddCommand(
		// Command groups, one file each.
		newServeCmd(),
		newDeployCmd(),
		newRunCmd(),
		newTasksCmd(),
		newWorkflowsCmd(),
		newSchedulesCmd(),
		newModulesCmd(),
		newClientsCmd(),
		newBenchCmd(),
		newValueCmd(),
		newPreflightCmd(),
		newVersionCmd(),
		newInternalCmd(),
	)
	root.Version = buildVersion().String()
	root.SetVersionTemplate("{{.Version}}\n")
	markUsage(root)
	return root
}

// markUsage makes argument-count errors and unknown subcommands usage errors
// (exit status 2) throughout the tree.
func markUsage(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{fmt.Errorf("%w\nsee '%s --help'", err, cmd.CommandPath())}
			}
			return nil
		}
	}
	if c.HasSubCommands() && c.RunE == nil && c.Run == nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				hint := ""
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "\ndid you mean " + strings.Join(quoteAll(s), " or ") + "?"
				}
				return usageError{fmt.Errorf("unknown command %q for %q%s\nsee '%s --help'", args[0], cmd.CommandPath(), hint, cmd.CommandPath())}
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return usageError{fmt.Errorf("%s needs a subcommand\nsee '%s --help'", cmd.CommandPath(), cmd.CommandPath())}
		}
	}
	for _, sub := range c.Commands() {
		markUsage(sub)
	}
}

// quoteAll quotes each of ss.
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
