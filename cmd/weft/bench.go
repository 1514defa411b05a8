package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/codec/valuebench"
)

// Environment variables holding the typed path's latency budgets in
// microseconds, as the Rust SDK's benchmark reads them (reference §5.1).
const (
	envEncodeBudget = "AVRO_VALUE_ENCODE_BUDGET_US"
	envDecodeBudget = "AVRO_VALUE_DECODE_BUDGET_US"
)

func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{
		Use:   "bench",
		Short: "run the specifications' reproducible benchmarks",
	}
	bench.AddCommand(newBenchAvroValueCmd(), newBenchLoadCmd())
	return bench
}

func newBenchAvroValueCmd() *cobra.Command {
	var enforce bool
	var iterations, samples int
	cmd := &cobra.Command{
		Use:   "avro-value",
		Short: "measure compact JSON, the retired JSON wrapper and the typed Avro Value on the shared corpus",
		Long: "avro-value runs the Durable Workflow Avro Value benchmark on the embedded corpus\n" +
			"avro-value-benchmark-v1.json: sizes and encode/decode latencies of compact JSON,\n" +
			"the retired JSON-in-Avro wrapper, the fixed typed Value and hamba/avro's generic\n" +
			"API, measured in one interleaved run. It prints a JSON report on stdout.\n\n" +
			"The typed path's budgets come from " + envEncodeBudget + " (default 75)\n" +
			"and " + envDecodeBudget + " (default 60), in microseconds per operation.\n" +
			"With --enforce the command exits 1 when a budget is exceeded; the report's\n" +
			"enforcement.ratio_targets_passed says whether the ratio targets held.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iterations < 1 {
				return usageError{fmt.Errorf("--iterations must be at least 1, not %d", iterations)}
			}
			if samples < 1 {
				return usageError{fmt.Errorf("--samples must be at least 1, not %d", samples)}
			}
			encode, err := budgetFromEnv(envEncodeBudget, valuebench.DefaultEncodeBudgetUS)
			if err != nil {
				return err
			}
			decode, err := budgetFromEnv(envDecodeBudget, valuebench.DefaultDecodeBudgetUS)
			if err != nil {
				return err
			}
			report, err := valuebench.Run(cmd.Context(), valuebench.Config{
				Iterations:     iterations,
				Samples:        samples,
				EncodeBudgetUS: encode,
				DecodeBudgetUS: decode,
				Enforce:        enforce,
			})
			if err != nil {
				return fmt.Errorf("bench avro-value: %w", err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(report); err != nil {
				return fmt.Errorf("bench avro-value: write report: %w", err)
			}
			if enforce && !report.Enforcement.Passed {
				fmt.Fprintf(cmd.ErrOrStderr(), "avro value budget exceeded: %s\n", strings.Join(report.Enforcement.Failures, "; "))
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&enforce, "enforce", false, "exit 1 when the typed path is over its encode or decode budget")
	cmd.Flags().IntVar(&iterations, "iterations", valuebench.DefaultIterations, "operations per sample of each path")
	cmd.Flags().IntVar(&samples, "samples", valuebench.DefaultSamples, "samples per path; the report gives their median")
	return cmd
}

// budgetFromEnv reads a positive budget in microseconds from the
// environment variable name, or returns def when it is unset or empty.
func budgetFromEnv(name string, def float64) (float64, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || f > 1e12 {
		return 0, fmt.Errorf("%s must be a positive number of microseconds, not %q", name, s)
	}
	return f, nil
}
