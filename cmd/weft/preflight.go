package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/cmd/internal/daemon"
	"github.com/weft-run/weft/runtime/preflight"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/sqlite"
)

// newPreflightCmd is weft preflight: the pre-deploy scan of every stored
// payload (BRIEF §3.2). It opens the database read-only, prints the report
// and exits 1 on any finding; it never changes anything.
func newPreflightCmd() *cobra.Command {
	var dataDir, storeURL string
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "check that every stored payload is an Avro Value v1 frame (read-only)",
		Long: `Scan every durable value in the data directory (task inputs, outputs,
checkpoints, error details, and the envelopes inside event payloads and stored
responses): each must be tagged "avro" and be a well-formed Avro Value v1
single-object frame. Prints up to 50 findings with their table, row, field and
diagnostic and exits 1 on any finding. Nothing is modified.

With --store (or $WEFT_STORE) it scans that PostgreSQL database instead, in
read-only transactions, and refuses a database whose schema is not the one
this weft knows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("store") {
				storeURL = os.Getenv(daemon.EnvStore)
			}
			if storeURL != "" {
				if cmd.Flags().Changed("data") {
					return usageError{errors.New("preflight: give --store or --data, not both")}
				}
				return runPreflightPostgres(cmd, storeURL)
			}
			dir := firstNonEmpty(dataDir, os.Getenv("WEFT_DATA"), defaultDataDir)
			return runPreflight(cmd, dir)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "", "data directory (default $WEFT_DATA or "+defaultDataDir+")")
	cmd.Flags().StringVar(&storeURL, "store", "", "PostgreSQL database to scan, postgres://… (default $"+daemon.EnvStore+")")
	return cmd
}

func runPreflight(cmd *cobra.Command, dir string) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	path := filepath.Join(dir, sqlite.FileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("preflight: no weft database in %s (looked for %s)", dir, path)
	}
	db, err := sqlite.Open(ctx, sqlite.Config{Path: path, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = db.Close(closeCtx) // read-only: nothing to lose
	}()
	return preflightReport(ctx, cmd, db)
}

// runPreflightPostgres is weft preflight --store: the scan of a PostgreSQL
// database, opened read-only.
func runPreflightPostgres(cmd *cobra.Command, dsn string) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if !daemon.IsPostgres(dsn) {
		return usageError{errors.New("preflight: --store must be a PostgreSQL URL (postgres://…)")}
	}
	if err := postgres.CheckDSN(dsn); err != nil {
		return usageError{fmt.Errorf("preflight: --store: %w", err)}
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true, MaxConns: 2})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = db.Close(closeCtx) // read-only: nothing to lose
	}()
	return preflightReport(ctx, cmd, db)
}

// preflightReport scans db, prints the report and returns exit status 1 on
// any finding.
func preflightReport(ctx context.Context, cmd *cobra.Command, db preflight.Scanner) error {
	rep, err := preflight.Run(ctx, db, preflight.Config{})
	if err != nil {
		return err
	}
	if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	if !rep.OK() {
		return exitError{code: 1}
	}
	return nil
}
