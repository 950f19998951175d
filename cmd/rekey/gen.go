package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/source/gen"
)

func newGenCmd(_ *invocation) *cobra.Command {
	var rows, seed int64
	var out string
	cmd := &cobra.Command{
		Use:   "gen NAME [--rows N] [--seed S] [--out FILE]",
		Short: "Write a synthetic data set (orders, logs, transactions) as CSV, the same rows gen:NAME produces",
		Long: `gen writes the rows of a synthetic source as CSV with a header, for trying rekey on a file or
for benchmarks. The rows are exactly those that --source 'gen:NAME?rows=N&seed=S' produces.
orders: monotonic order ids and timestamps, skewed users, one channel dominating.
logs:   monotonic timestamps, ~50 hosts, a few log events dominating.
transactions: order numbers rising with time, 20,000 sellers (a few selling most) and 1M buyers
        (the primary-key guide's data, which mappings/transactions_by_*.yaml serve).`,
		Example: "  rekey gen orders --rows 5000000 --out orders.csv\n  rekey gen logs --rows 1000 | head",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := gen.Columns(args[0]); err != nil {
				return usageError(err)
			}
			if rows < 0 {
				return usageError(fmt.Errorf("--rows %d: want 0 or more rows", rows))
			}
			if err := checkOutFolder("--out", out); err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := atomicfile.CreateTemp(out, 0o644)
				if err != nil {
					return fmt.Errorf("--out %s: %w", out, err)
				}
				bw := bufio.NewWriterSize(f, 1<<20)
				if err := gen.WriteCSV(bw, args[0], rows, seed); err != nil {
					f.Close()
					os.Remove(f.Name())
					return err
				}
				if err := bw.Flush(); err != nil {
					f.Close()
					os.Remove(f.Name())
					return fmt.Errorf("write %s: %w", out, err)
				}
				return atomicfile.Commit(f, out)
			}
			bw := bufio.NewWriterSize(w, 1<<20)
			if err := gen.WriteCSV(bw, args[0], rows, seed); err != nil {
				return err
			}
			return bw.Flush()
		},
	}
	cmd.Flags().Int64Var(&rows, "rows", 1000000, "number of rows")
	cmd.Flags().Int64Var(&seed, "seed", 1, "random seed (same seed, same rows)")
	cmd.Flags().StringVar(&out, "out", "-", "output file (- for stdout)")
	return cmd
}
