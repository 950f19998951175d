package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/sqltargets"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
)

// loadProgram reads, strictly decodes and compiles a mapping; problems exit with code 2.
func loadProgram(path string) (*transform.Program, error) {
	if path == "" {
		return nil, usageError(errors.New("-m/--mapping is required: the mapping file that describes the target key (see mappings/*.yaml)"))
	}
	m, err := transform.Load(path)
	if err != nil {
		return nil, usageError(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		return nil, usageError(fmt.Errorf("%s: %w", path, err))
	}
	return prog, nil
}

// planFlags are the flags of check and ddl: a mapping, and a source to sample for the plan.
type planFlags struct {
	mapping string
	regions int
	source  string
}

func (pf *planFlags) add(inv *invocation, fl *pflag.FlagSet) {
	fl.StringVarP(&pf.mapping, "mapping", "m", "", "mapping file (YAML)")
	fl.StringVar(&pf.source, "source", "", "source to sample for quantile split keys (optional)")
	fl.IntVar(&pf.regions, "regions", 0, "number of pre-split regions (overrides the mapping's regions:)")
	inv.sources.AddFlags(fl, source.Use{})
}

// plan loads the mapping and computes its region plan, sampling --source when given. loaded,
// when not nil, is called once the mapping compiled, before the source is opened (an error it
// returns ends the plan there); withSource,
// when not nil and --source is given, once the plan is made, with the source still open.
func (pf *planFlags) plan(cmd *cobra.Command, inv *invocation, loaded func(*transform.Program) error, withSource func(pipeline.Source, *transform.Program) error) (*transform.Program, pipeline.RegionPlan, error) {
	logger, err := inv.logger()
	if err != nil {
		return nil, pipeline.RegionPlan{}, usageError(err)
	}
	if err := inv.sources.Refuse(pf.source); err != nil {
		return nil, pipeline.RegionPlan{}, usageError(err)
	}
	prog, err := inv.loadProgramFor(pf.mapping, pf.source, 0, pf.regions, logger)
	if err != nil {
		return nil, pipeline.RegionPlan{}, err
	}
	if loaded != nil {
		if err := loaded(prog); err != nil {
			return nil, pipeline.RegionPlan{}, err
		}
	}
	var src pipeline.Source
	if pf.source != "" {
		if src, err = inv.openSource(cmd.Context(), pf.source, prog, logger); err != nil {
			return nil, pipeline.RegionPlan{}, sourceOpenExit(err)
		}
		defer closeSource(src)
	}
	plan, _, err := planRegions(cmd.Context(), prog, src, pf.regions)
	if err != nil {
		return nil, pipeline.RegionPlan{}, err
	}
	if src != nil && withSource != nil {
		if err := withSource(src, prog); err != nil {
			return nil, pipeline.RegionPlan{}, err
		}
	}
	return prog, plan, nil
}

// sampleSize is how many source rows a run reads up front to place quantile split keys.
const sampleSize = 20000

func newCheckCmd(inv *invocation) *cobra.Command {
	var pf planFlags
	cmd := &cobra.Command{
		Use:   "check -m MAPPING [--source URI] [--regions N]",
		Short: "Validate a mapping and print the resolved key, target columns and region plan",
		Long: `check decodes the mapping strictly (unknown fields, functions, columns and type errors are all
reported at once, each with its path), then prints the resolved primary key (element names,
expressions, types, order), the target columns and the region plan. With --source it samples the
source to place quantile split keys.

Last come the rules of Lindorm's design guides the mapping does not follow: warnings (a TIMESTAMP,
DATE or timeuuid first key column, more than 3 key columns, a collection in the key, a key column
reading code() of a dictionary that gives several values one code, a key column that is a
constant (a var or literal), no regions:, a salt and what
it costs the reads and a replication, a salt behind the first key column, which spreads nothing)
leave the exit code 0; a target whose every column is in the primary key, which Lindorm cannot
write a row into, is an error (exit 2). When the region plan cannot be made (a
quantile or regions.size plan without --source), these rules are still printed before the error.

With --source, check also applies rekey report's data rules to a sample of the source (up to
100,000 rows): an enumerated, skewed or prefixed first column, incremental key columns, keys that
collide (an error, exit 2), write hotspots in write order, unbalanced regions. When nothing tells
the order the application creates rows in (no source.write_order, time column, WRITETIME() or
Kafka timestamp), it notes so (write_order_unknown): monotonicity and hotspots were then judged in
the order the rows were read, which a Cassandra token scan makes hash order; when the best
evidence gave no order (source.write_order without values, rows of one WRITETIME()) and it
judged in the next, it says which and why (note write_order); a rule the sample is too small
for (fewer rows than its windows need, a first column of one value) is listed as "not judged"
rather than passed. Both commands run
one table of rules; without --source check lists each data rule it did not examine ("skipped:
needs a sample") rather than passing it.`,
		Example: "  rekey check -m mappings/orders.yaml\n  rekey check -m mappings/transactions_by_seller.yaml --source 'gen:transactions?rows=100000' --regions 32",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if pf.source != "" {
				inv.sourceWriteTimes = true // the rows' WRITETIME(), for the write order the data rules judge in
			}
			var loaded *transform.Program
			var data *ruleResults
			prog, plan, err := pf.plan(cmd, inv, func(prog *transform.Program) error {
				loaded = prog
				fmt.Fprintln(out, prog.Describe())
				return nil
			}, func(src pipeline.Source, prog *transform.Program) (err error) {
				data, err = checkData(cmd, inv, &pf, prog, src)
				return err
			})
			if err != nil {
				if loaded == nil {
					return err
				}
				// no plan: the rules of the mapping alone still hold, and say so before the error
				fmt.Fprintf(out, "\nRegion plan: not computed: %v\n", err)
				if rerr := printRules(out, pf.mapping, mappingRules(loaded, pf.regions > 0), "the region plan failed (above)"); rerr != nil {
					return errors.Join(err, rerr)
				}
				return err
			}
			printPlan(out, prog.Target(), plan, prog.RegionsAsked(transform.RegionRequest{Count: pf.regions}))
			if data == nil {
				data = mappingRules(prog, pf.regions > 0)
			}
			return printRules(out, pf.mapping, data, "give --source to judge the data as rekey report does")
		},
	}
	pf.add(inv, cmd.Flags())
	return cmd
}

// checkSampleRows is how many source rows check --source runs the report's data rules on.
const checkSampleRows = 100_000

// ruleResults are the findings of the rule table rekey report runs (report/advise.Rules): on a
// sample of the source (rows > 0 or sampled), or on the mapping alone, with the rules that
// need a sample skipped.
type ruleResults struct {
	sampled  bool
	rows     int64
	findings []report.Finding
	skipped  []advise.Rule
	// orderNotes say why the sample was judged in other write-order evidence than the best
	// (a declared column without values, a server that refused WRITETIME())
	orderNotes []string
}

// mappingRules runs the rule table on the mapping alone.
func mappingRules(prog *transform.Program, regionsGiven bool) *ruleResults {
	fs, skipped := advise.Apply(advise.MappingFacts(prog, prog.DesignRules(regionsGiven)))
	return &ruleResults{findings: fs, skipped: skipped}
}

// checkData runs rekey report on a sample of the source: the rule table on the sample's figures,
// the mapping's rules included (a sample rule judges in their place what data can show).
func checkData(cmd *cobra.Command, inv *invocation, pf *planFlags, prog *transform.Program, src pipeline.Source) (*ruleResults, error) {
	logger, err := inv.logger()
	if err != nil {
		return nil, usageError(err)
	}
	m, err := transform.Load(pf.mapping)
	if err != nil {
		return nil, usageError(err)
	}
	order := report.OrderHints{Column: m.Source.WriteOrder, ColumnOrigin: "source.write_order"}
	sourceOrder(src, &order)
	whole, part := sourcePart(src)
	rep, err := report.Run(cmd.Context(), report.Config{Program: prog, Mapping: m, Source: src, SourceURI: sourceuri.Redact(pf.source), Whole: whole, Part: part,
		Regions: pf.regions, Sample: report.Sample{Rows: checkSampleRows}, Workers: runtime.GOMAXPROCS(0), Logger: logger.Named("check"),
		FormatSplit: pipeline.SplitValue, Order: order})
	if err != nil {
		return nil, fmt.Errorf("check --source: the data rules: %w", err)
	}
	res := &ruleResults{sampled: true, rows: rep.Totals.RowsAnalysed, findings: rep.Findings}
	if rep.WriteOrder != nil {
		res.orderNotes = rep.WriteOrder.Notes
	}
	return res, nil
}

// printRules prints the warnings and errors of the rule table: the mapping's rules, then the
// data's (on a sample of the source; without one, the rules not examined, for the reason
// skipped gives). Warnings leave the exit code 0; an error (a target that cannot hold the data,
// rows that would be overwritten) exits 2.
func printRules(w io.Writer, mapping string, res *ruleResults, skipped string) error {
	var failed []string
	var design, data, notJudged []report.Finding
	for _, f := range res.findings {
		if f.Severity == report.SevInfo {
			if f.NotJudged {
				// too little data to judge the rule: it passes nothing
				notJudged = append(notJudged, f)
				continue
			}
			if f.Rule == "write_order_unknown" {
				// the monotonicity and hotspot rules were judged in the order the rows were read,
				// not the application's: say so, rather than that the data follows the guides
				data = append(data, f)
			}
			continue
		}
		if f.Severity == report.SevError {
			failed = append(failed, f.Rule)
		}
		if r := advise.RuleOf(f.Rule); r != nil && r.Needs == advise.NeedsMapping {
			design = append(design, f)
		} else {
			data = append(data, f)
		}
	}
	if len(design) == 0 {
		fmt.Fprintln(w, "\nDesign rules: the mapping follows the design rules a mapping alone shows")
	} else {
		fmt.Fprintln(w, "\nDesign rules (Lindorm's wide-table and primary-key design guides):")
		printFindings(w, design)
	}
	switch {
	case !res.sampled:
		fmt.Fprintf(w, "\nData rules: not examined (%s):\n", skipped)
		var notes []string
		for _, r := range res.skipped {
			if r.Worst == report.SevInfo {
				notes = append(notes, r.Names...)
				continue
			}
			fmt.Fprintf(w, "  skipped %s: needs a sample: %s\n", strings.Join(r.Names, ", "), r.What)
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "  skipped notes (never a warning): %s\n", strings.Join(notes, ", "))
		}
	case len(data) == 0 && len(res.orderNotes) == 0 && len(notJudged) == 0:
		fmt.Fprintf(w, "\nData rules on a sample of %s source rows: the data follows Lindorm's design guides (rekey report -m %s --source ... has every figure)\n", groupDigits(res.rows), mapping)
	default:
		fmt.Fprintf(w, "\nData rules on a sample of %s source rows (rekey report's rules; rekey report -m %s --source ... has every figure):\n", groupDigits(res.rows), mapping)
		printFindings(w, data)
		// the rules were judged in other evidence than the best, such as the declared column:
		// say so, as report's header does, rather than pass the data as judged in it
		for _, n := range res.orderNotes {
			fmt.Fprintf(w, "  note write_order: %s\n", n)
		}
		for _, f := range notJudged {
			fmt.Fprintf(w, "  not judged %s: %s\n", f.Rule, f.Message)
		}
	}
	if len(failed) > 0 {
		return usageError(fmt.Errorf("%s: the target table breaks Lindorm's design rules (%s): fix the mapping as the ERROR lines above say", mapping, strings.Join(failed, ", ")))
	}
	return nil
}

// printFindings prints findings as check lists them: level, rule, where in the mapping, message.
func printFindings(w io.Writer, fs []report.Finding) {
	for _, f := range fs {
		level := "warning"
		switch f.Severity {
		case report.SevError:
			level = "ERROR"
		case report.SevInfo:
			level = "note"
		}
		if f.Path != "" {
			fmt.Fprintf(w, "  %s %s (%s): %s\n", level, f.Rule, f.Path, f.Message)
		} else {
			fmt.Fprintf(w, "  %s %s: %s\n", level, f.Rule, f.Message)
		}
	}
}

// refuseKeyOnly refuses a mapping whose every target column is in the key: Lindorm would store
// none of its rows.
func refuseKeyOnly(mapping string, prog *transform.Program) error {
	if prog.KeyOnly() {
		return usageError(fmt.Errorf("%s: %s", mapping, prog.KeyOnlyMessage()))
	}
	return nil
}

// refuseFormat refuses a table the file format cannot carry to Lindorm (CSV: a VARBINARY column).
func refuseFormat(mapping string, format files.Format, prog *transform.Program) error {
	if c, ok := format.(interface {
		CheckSchema(pipeline.TargetSchema) error
	}); ok {
		if err := c.CheckSchema(prog.Target()); err != nil {
			return usageError(fmt.Errorf("%s: %w", mapping, err))
		}
	}
	return nil
}

func printPlan(w io.Writer, schema pipeline.TargetSchema, plan pipeline.RegionPlan, asked int) {
	first := schema.Columns[0]
	fmt.Fprintf(w, "\nRegion plan: %d regions on %s (%s), strategy %s\n", plan.Count(), first.Name, first.SQLType(), plan.Strategy)
	if asked > plan.Count() {
		fmt.Fprintf(w, "  %d regions asked for, %d planned: the sample's values of %s leave room for only %d split keys (split keys are values of the first key column)\n", asked, plan.Count(), first.Name, plan.Count()-1)
	}
	for i := 0; i < plan.Count(); i++ {
		start, hasStart, end, hasEnd := plan.Bounds(i)
		fmt.Fprintf(w, "  %s  [%s, %s)\n", output.RegionName(i), boundText(plan.Type, start, hasStart, "-inf"), boundText(plan.Type, end, hasEnd, "+inf"))
		if i == 20 && plan.Count() > 24 {
			fmt.Fprintf(w, "  ... %d more\n", plan.Count()-21)
			break
		}
	}
}

// boundText quotes a region's bound, a VARBINARY column's in hex (as split_keys and SPLITKEYS
// write it).
func boundText(t pipeline.Type, v pipeline.Value, ok bool, open string) string {
	if !ok {
		return open
	}
	if t == pipeline.TypeVarbinary {
		return fmt.Sprintf("%q", pipeline.SplitValue(t, v))
	}
	return fmt.Sprintf("%q", v.String())
}

// refuseUnreadSource refuses ddl's --source where the statement does not depend on it: a source
// without a schema of its own (a file, a topic) when the mapping's region plan is placed without
// data (a hex prefix or a bucket of a given count, explicit split keys). ddl would open it and
// print what it prints without it, as if the split keys came from the data. A Cassandra table
// always applies: it gives the columns' types and the default TTL.
func refuseUnreadSource(inv *invocation, pf *planFlags) error {
	if pf.source == "" || inv.sources.HasSchema(pf.source) {
		return nil
	}
	prog, err := loadProgram(pf.mapping)
	if err != nil {
		return err
	}
	if prog.PlanNeedsSample(pf.regions) {
		return nil
	}
	return usageError(fmt.Errorf("--source %s: the split keys of %s come from its regions: section (or --regions) alone, not from data, "+
		"so ddl would not read the source and would print the same statement: leave --source out", sourceuri.Redact(pf.source), pf.mapping))
}

// ddlLong is ddl's --help text.
var ddlLong = `ddl prints the CREATE TABLE statement migrate writes to ddl.sql: the target columns with their
Lindorm types, PRIMARY KEY in the mapping's key order (DESC where the key says so), the mapping's
target.options, and SPLITKEYS from the region plan, so that the table is pre-split into the same
regions the bulk-load files are cut by. Create the table with it before loading the files. A
mapping whose every target column is in the primary key, which Lindorm cannot write a row into
(and migrate refuses), is refused (exit 2) with no statement.

The split keys come from the mapping's regions: section or --regions N: equal slices of a hex hash
prefix, the values of a modulo bucket, or explicit split_keys. Where the plan places split keys by
the quantiles of the data (a first key column that is neither), pass --source to sample it:
without one ddl stops (exit 2) and says so. Where it derives the count from the data size
(regions.size), pass --source too: without one, or with a source whose size cannot be estimated
(gzip files), ddl stops (exit 2) rather than print a table of one region. Any other
plan does not read the data: --source is then refused (exit 2), but for a cassandra:// table,
which gives the columns' types and default TTL.` + sqltargets.DDLDocs()

func newDDLCmd(inv *invocation) *cobra.Command {
	var pf planFlags
	var dialect string
	cmd := &cobra.Command{
		Use:   "ddl -m MAPPING [--regions N] [--source URI]",
		Short: "Print the Lindorm CREATE TABLE for a mapping, with its split keys",
		Long:  ddlLong,
		Example: "  rekey ddl -m mappings/orders.yaml\n" +
			"  rekey ddl -m mappings/orders.yaml --dialect mariadb | mariadb shop\n" +
			"  rekey ddl -m mappings/orders.yaml --regions 64\n" +
			"  rekey ddl -m mappings/transactions_by_seller.yaml --source 'gen:transactions?rows=100000' > ddl.sql",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ddl, ok := sqltargets.DDL(dialect)
			if !ok {
				return usageError(fmt.Errorf("--dialect %q: want %s", dialect, sqltargets.DDLNames()))
			}
			var prog *transform.Program
			var plan pipeline.RegionPlan
			var err error
			if ddl.Split {
				if err := refuseUnreadSource(inv, &pf); err != nil {
					return err
				}
				// a key-only target is refused before the source is sampled
				prog, plan, err = pf.plan(cmd, inv, func(prog *transform.Program) error { return refuseKeyOnly(pf.mapping, prog) }, nil)
			} else {
				// a table without split keys: the flags that shape them do not apply
				for _, name := range []string{"regions", "source"} {
					if cmd.Flags().Changed(name) {
						return usageError(fmt.Errorf("--%s shapes Lindorm's split keys, which a --dialect %s table does not have: leave it out", name, dialect))
					}
				}
				if prog, err = loadProgram(pf.mapping); err == nil {
					err = refuseKeyOnly(pf.mapping, prog)
				}
			}
			if err != nil {
				return err
			}
			text, err := ddl.Create(prog.Target(), plan, prog.Options())
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), text)
			return nil
		},
	}
	pf.add(inv, cmd.Flags())
	cmd.Flags().StringVar(&dialect, "dialect", sqltargets.DDLServers()[0], sqltargets.DDLHelp())
	return cmd
}
