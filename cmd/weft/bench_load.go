package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/loadbench"
)

func newBenchLoadCmd() *cobra.Command {
	cfg := loadbench.Config{Tasks: loadbench.DefaultTasks, Clients: loadbench.DefaultClients, Synchronous: "FULL", Wasm: loadbench.DefaultWasm, Timeout: loadbench.DefaultTimeout}
	var addrs, dataDir, token string
	cmd := &cobra.Command{
		Use:   "load",
		Short: "measure throughput: background echo tasks, or workflows, from concurrent HTTP clients",
		Long: "load starts a daemon in this process on a temporary data directory (or uses a\n" +
			"running one with --addr), deploys the testkit plugin, submits --tasks background\n" +
			"echo tasks from --clients concurrent HTTP clients, and waits until all have\n" +
			"finished. It prints a JSON report: tasks per second from the first submit to\n" +
			"the last completion, submit latency percentiles, lost tasks (acknowledged with\n" +
			"202 but missing), and the store's group commits. It exits 1 when a task is\n" +
			"lost, failed or unfinished.\n\n" +
			"--workload workflows runs one-activity workflows instead, each started with\n" +
			"POST /v1/responses (which answers once it finished), then workflows of ten\n" +
			"sequential activities one at a time, and reports their rate and latencies.\n" +
			"--store runs the in-process daemons on PostgreSQL, --hosts of them on one\n" +
			"database, submitting to each in turn.\n\n" +
			"The same work on River (riverqueue/river with its SQLite driver) runs as a Go\n" +
			"benchmark, which reports the ratio of the two:\n" +
			"  make bench-compare (cmd/compare: go test -run '^$' -bench LoadVersusRiver -benchtime 1x ./...)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.Tasks < 1:
				return usageError{fmt.Errorf("--tasks must be at least 1, not %d", cfg.Tasks)}
			case cfg.Clients < 1:
				return usageError{fmt.Errorf("--clients must be at least 1, not %d", cfg.Clients)}
			case cfg.Workers < 0:
				return usageError{fmt.Errorf("--workers must not be negative, not %d", cfg.Workers)}
			case cfg.Timeout <= 0:
				return usageError{fmt.Errorf("--timeout must be positive")}
			}
			switch strings.ToUpper(cfg.Synchronous) {
			case "FULL", "NORMAL":
				cfg.Synchronous = strings.ToUpper(cfg.Synchronous)
			default:
				return usageError{fmt.Errorf("--synchronous must be FULL or NORMAL, not %q", cfg.Synchronous)}
			}
			if cfg.Hosts < 1 {
				return usageError{fmt.Errorf("--hosts must be at least 1, not %d", cfg.Hosts)}
			}
			if cfg.Hosts > 1 && cfg.Store == "" {
				return usageError{errors.New("--hosts above 1 needs --store: the hosts share a PostgreSQL database")}
			}
			switch cfg.Workload {
			case loadbench.WorkloadTasks:
			case loadbench.WorkloadWorkflows:
				if !cmd.Flags().Changed("tasks") {
					cfg.Tasks = loadbench.DefaultWorkflows
				}
				if !cmd.Flags().Changed("wasm") {
					cfg.Wasm = loadbench.DefaultWorkflowWasm
				}
			default:
				return usageError{fmt.Errorf("--workload must be %s or %s, not %q", loadbench.WorkloadTasks, loadbench.WorkloadWorkflows, cfg.Workload)}
			}
			cfg.DataDir = dataDir
			for _, addr := range strings.Split(addrs, ",") {
				if addr = strings.TrimSpace(addr); addr == "" {
					continue
				}
				// The token of a running daemon is found as the client
				// commands find it: --token, WEFT_TOKEN, DATA/admin.token.
				o := clientOptions{addr: addr, token: token, dataDir: dataDir}
				cc, _, err := o.config()
				if err != nil {
					return err
				}
				cfg.Addrs, cfg.Token = append(cfg.Addrs, cc.BaseURL), cc.Token
			}
			report, err := loadbench.Run(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("bench load: %w", err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(report); err != nil {
				return fmt.Errorf("bench load: write report: %w", err)
			}
			if !report.OK() {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench load: %d lost, %d failed, %d unfinished, %d submit errors\n",
					report.Lost, report.Failed, report.Unfinished, report.Submit.Errors)
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "addr", "", "use the daemon at HOST:PORT instead of starting one in this process; a comma-separated list submits to the hosts of one database in turn")
	f.StringVar(&cfg.Store, "store", "", "PostgreSQL database of the in-process daemons, postgres://user@host:port/db (default: SQLite under --data)")
	f.IntVar(&cfg.Hosts, "hosts", 1, "in-process daemons sharing --store, submitted to in turn")
	f.StringVar(&token, "token", "", "bearer token for --addr (default $WEFT_TOKEN or DATA/"+adminTokenFile+")")
	f.StringVar(&dataDir, "data", "", "data directory of the in-process daemon (default: a temporary one, removed afterwards)")
	f.StringVar(&cfg.Workload, "workload", loadbench.WorkloadTasks, "tasks (background echo tasks) or workflows (one-activity workflows through POST /v1/responses, then ten-activity ones one at a time)")
	f.StringVar(&cfg.Wasm, "wasm", cfg.Wasm, "module file to deploy (default for workflows: "+loadbench.DefaultWorkflowWasm+")")
	f.IntVar(&cfg.Tasks, "tasks", cfg.Tasks, "tasks to submit (workflows: how many one-activity workflows, default 1000)")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent HTTP clients")
	f.IntVar(&cfg.Workers, "workers", 0, "worker count of the in-process daemon (default 128)")
	f.StringVar(&cfg.Synchronous, "synchronous", cfg.Synchronous, "SQLite synchronous setting of the in-process daemon: FULL or NORMAL")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "how long to wait for the tasks to finish")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured phase to this file")
	f.StringVar(&cfg.Trace, "trace", "", "write an execution trace of the measured phase to this file")
	return cmd
}
