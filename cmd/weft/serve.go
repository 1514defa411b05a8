package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/daemon"
)

func newServeCmd() *cobra.Command {
	var cfg daemon.Config
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the weft daemon",
		Long: "serve runs the daemon: it checks every stored payload (preflight), recovers\n" +
			"unfinished tasks by their on_restart policy, and serves the HTTP API.\n" +
			"On first start it creates DATA/admin.token (mode 0600). SIGTERM or Ctrl-C\n" +
			"shut it down gracefully: no new task starts, running plugin calls get up to\n" +
			"--shutdown-grace to finish, the rest are interrupted (their tasks recover by\n" +
			"their on_restart policy at the next start), and the daemon is gone within\n" +
			"10 s after that.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := daemon.Complete(cmd.Flags(), &cfg); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				// After the first signal a second one ends the process at
				// once, as an unhandled signal does (a crash, which
				// recovery handles).
				<-ctx.Done()
				stop()
			}()
			m := daemon.New(cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
			err := m.Run(ctx)
			if err == nil {
				select {
				case <-ctx.Done():
				case <-m.Done():
				}
				_ = m.Close(context.Background()) // each close error is logged
				err = m.Wait()
			}
			if errors.Is(err, daemon.ErrPreflightBlocked) {
				return exitError{code: 1} // the report is written
			}
			if err != nil && cfg.LogFormat == "json" {
				// With --log-format json, standard error carries JSON only.
				hclog.New(&hclog.LoggerOptions{Name: "weft", Output: cmd.ErrOrStderr(), JSONFormat: true}).
					Error("weft serve stopped", "error", err.Error())
				return exitError{code: 1}
			}
			return err
		},
	}
	daemon.RegisterFlags(cmd.Flags(), &cfg)
	return cmd
}

// newInternalCmd is `weft internal`, the hidden commands the daemon runs in
// child processes of itself.
func newInternalCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "internal", Short: "commands the daemon runs in its child processes", Hidden: true}
	var job string
	compile := &cobra.Command{
		Use:   "compile",
		Short: "check and compile the module on stdin into the compilation cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := daemon.RunCompileChild(cmd.Context(), job, cmd.InOrStdin(), cmd.ErrOrStderr())
			switch {
			case errors.Is(err, daemon.ErrBadJob):
				return usageError{err}
			case errors.Is(err, daemon.ErrModuleRejected):
				return exitError{code: daemon.ExitRejected}
			}
			return err
		},
	}
	compile.Flags().StringVar(&job, "job", "", "the compile job, JSON")
	cmd.AddCommand(compile)
	return cmd
}
