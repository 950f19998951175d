package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rekey/rekey/source/sourceuri"
)

// newRootCmd builds rekey's command tree: run executes it, and the CLI reference under docs/cli
// is generated from it (TestCLIReference), so --help and the manual share one source. The
// commands' flags and state live in inv, one per run.
func newRootCmd(inv *invocation) *cobra.Command {
	if inv.sources == nil {
		inv.sources = newSourceSet()
	}
	root := &cobra.Command{
		Use:   "rekey",
		Short: "Move Cassandra, Kafka and file data into Lindorm wide tables with hotspot-free primary keys",
		Long: `rekey moves rows into Alibaba Cloud Lindorm wide tables and rewrites each row's primary key on
the way, following Lindorm's key design guide: hash prefixes, reversed keys, modulo buckets, salts,
DESC order, short codes. It writes bulk-load files split by the table's pre-split regions, together
with the CREATE TABLE (split keys included) and the bulkload job config.

A mapping file (mappings/*.yaml) describes the source columns and the target key in the guide's
own notation, for example:

  primary_key: "[md5(userid).substr(0,4) AS h][userid][orderid DESC]"

Start here:
  rekey check   -m mappings/orders.yaml                  # validate a mapping, show the resolved key
  rekey report  -m mappings/orders.yaml --source 'gen:orders?rows=1000000' --html report.html
                                                         # dry run: will this key hotspot Lindorm?
  rekey migrate -m mappings/orders.yaml --source 'gen:orders?rows=1000000' --out out/orders
  rekey verify  -m mappings/orders.yaml --source 'gen:orders?rows=1000000' --target out/orders
                                                         # does the target hold what the source gives?
  rekey ddl     -m mappings/orders.yaml                  # the CREATE TABLE with its split keys
  rekey replicate -m mappings/orders.yaml --source 'kafka://broker:9092/orders?group=rekey' --out out/live

Sources: file:PATH (CSV, JSON Lines), gen:NAME, cassandra://hosts/keyspace/table, kafka://brokers/topic.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	// cobra checks the flags and arguments before it runs PersistentPreRunE: an error from
	// before it is invalid use, one from after it comes from the command itself
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		inv.ran = true
		// the logs' flags are every command's: refused here, not by the commands that log (gen
		// and ddl never built a logger, and so ran with a --log-level they did not know)
		if err := refuseRepeatedFlags(cmd, inv.args); err != nil {
			return usageError(err)
		}
		if _, err := inv.logger(); err != nil {
			return usageError(err)
		}
		return checkCommonFlags(cmd, args)
	}
	// cobra's own words name the flag but not where the flags are listed
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w: run '%s --help' for its flags", err, cmd.CommandPath())
	})
	root.PersistentFlags().StringVar(&inv.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&inv.logFormat, "log-format", "console", "log format: console or json")
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(newMigrateCmd(inv), newCheckCmd(inv), newDDLCmd(inv), newGenCmd(inv), newReportCmd(inv), newMergeCmd(inv), newReplicateCmd(inv), newVerifyCmd(inv))
	return root
}

// newHelpCmd is `rekey help [command]`: cobra's own prints the usage and exits 0 for a command
// it does not know, which a script takes for success.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: rekey help migrate is rekey migrate --help.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, _, err := c.Root().Find(args)
			if cmd == nil || err != nil {
				return usageError(fmt.Errorf("unknown help topic %q: run 'rekey help' to list the commands", strings.Join(args, " ")))
			}
			return cmd.Help()
		},
	}
}

// refuseRepeatedFlags refuses a flag of one value that the command line args (as run was given
// them) gives twice with different values: pflag keeps the last, so a flag appended to a command
// line that already had it would change the run without a word. The flags that repeat by design
// (-m: several mappings) and a value given again as it was are let through.
func refuseRepeatedFlags(cmd *cobra.Command, args []string) error {
	_, rest, err := cmd.Root().Find(args)
	if err != nil {
		return nil // cobra has refused it already
	}
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	var twice error
	add := func(f *pflag.Flag) {
		if fs.Lookup(f.Name) != nil {
			return
		}
		v := &onceValue{name: f.Name, typ: f.Value.Type(), twice: &twice}
		copied := fs.VarPF(v, f.Name, f.Shorthand, "")
		copied.NoOptDefVal = f.NoOptDefVal
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	// the flags were parsed once already (cobra refused what does not parse): this pass only
	// records what each was given
	_ = fs.Parse(rest)
	return twice
}

// onceValue records the values a flag is given; a second, different one sets twice.
type onceValue struct {
	name, typ string
	values    []string
	twice     *error
}

func (v *onceValue) String() string { return "" }
func (v *onceValue) Type() string   { return v.typ }
func (v *onceValue) Set(s string) error {
	if strings.HasSuffix(v.typ, "Array") || strings.HasSuffix(v.typ, "Slice") {
		return nil // a flag that takes several values
	}
	if len(v.values) > 0 && v.values[0] != s && *v.twice == nil {
		*v.twice = fmt.Errorf("--%s given twice, with different values (%s, then %s): give it once, with the value meant", v.name, sourceuri.Redact(v.values[0]), sourceuri.Redact(s))
	}
	v.values = append(v.values, s)
	return nil
}
