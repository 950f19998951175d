package advise

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// Rules and their thresholds. Each rule gives one finding (key_json_text one per column); the
// README lists them with the same numbers.
const (
	// key_length: warn when 1% of keys are longer than this.
	longKeyP99 = 512
	// first_column_cardinality: warn below this many distinct first-column values.
	fewValues = 100
	// first_column_skew: warn when one value holds more than this share of the rows (and more
	// than 2 regions' worth).
	skewShare = 0.2
	// first_column_prefix: warn when every value shares a prefix this long that is at least half
	// of the shortest value.
	prefixBytes = 3
	// first_column_monotonic: warn at this share of rows >= (or <=) the previous one.
	MonotonicShare = 0.9
	// region_balance: warn when the busiest region holds this many times the mean.
	BalanceMaxMean = 2.0
	// region_balance, empty_regions: fewer rows a region than this, each with a first-column
	// value of its own, judge nothing (chance alone leaves regions empty or twice as busy).
	minRowsPerRegion = 10
	// write_hotspot: warn when, per window, the busiest region takes this many times its share.
	HotFactorWarn = 2.5
	// write_hotspot: fewer windows than this judge nothing (a key that writes one region at a
	// time shows at most this many times the even share across that many windows).
	MinHotspotWindows = 3
	// single_row_hotspot: warn at this many writes of one key in a window (and a region's share).
	MinHotRowWrites = 3
)

// notJudged is the info finding of a rule that had too little data to judge.
func notJudged(rule, msg string, ev map[string]float64) model.Finding {
	f := finding(rule, model.SevInfo, msg, ev)
	f.NotJudged = true
	return f
}

func finding(rule, sev, msg string, ev map[string]float64) model.Finding {
	if ev == nil {
		ev = map[string]float64{}
	}
	return model.Finding{Rule: rule, Severity: sev, Message: msg, Evidence: ev}
}

// Evidence a rule needs to examine (Rule.Needs).
const (
	NeedsMapping = "mapping" // the mapping alone: rekey check examines it without a source
	NeedsSample  = "sample"  // rows of the source: rekey report, and rekey check --source
)

// Rule is one row of the table both rekey report and rekey check run: the findings it gives
// (none when it does not apply), each with its rule name, severity and message.
type Rule struct {
	Names []string // the rules of its findings (report/README.md's table lists each)
	// Guide is the design guides' words the rule stands on, quoted; "" for a check of rekey's
	// own (rows the mapping rejects, the figures' provenance)
	Guide string
	What  string // what it examines
	Worst string // the worst severity it gives: SevError, SevWarning or SevInfo
	Needs string // NeedsMapping or NeedsSample
	// SampledBy, on a mapping rule, names the sample rule that judges the same on data: with a
	// sample, that rule runs instead (a TIMESTAMP first column is judged in write order)
	SampledBy string
	Check     func(f *Facts) []model.Finding
}

const (
	guideIncremental = "Do not specify a column that contains auto-incremental data or a column in which values have the same prefix, such as the timestamp column, as the first primary key column"
	guideEnumerated  = "Do not specify a column that contains enumerated data, such as order types, or a column in which values have obvious prefixes as the first primary key column"
	guideColumns     = "We recommend that you limit the number of primary key columns in a range from 1 to 3"
	guideJSON        = "Do not include columns that store JSON data or web page content in the primary key"
	guideLeftToRight = "data is distributed based the columns in a left-to-right order"
	guideQueries     = "you must consider the pattern in which the table is queried when you define the table primary key"
)

// Rules is the one table of rules, in the order findings are listed (before sorting worst
// first).
var Rules = []Rule{
	{Names: []string{"rejects", "no_rows", "few_rows"}, Needs: NeedsSample, Worst: model.SevError, Check: checkRejects,
		What: "rows the mapping would reject (no_rows: none judged; few_rows: too few to judge the key's spread)"},
	{Names: []string{"key_only_target"}, Needs: NeedsMapping, Worst: model.SevError, Check: designRules(transform.RuleKeyOnlyTarget),
		Guide: "you must specify a value for at least one non-primary key column because you cannot write a row of data that contains only the primary key",
		What:  "a target whose every column is in the primary key"},
	{Names: []string{"salted_key", "trailing_salt"}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleTrailingSalt, transform.RuleSaltedKey),
		Guide: "Use this pattern only when write distribution is more critical than read simplicity",
		What:  "a salt in the key, what it costs the reads and a replication, and a salt behind the first column, which spreads nothing"},
	{Names: []string{transform.RuleKeyCodeMerges}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleKeyCodeMerges),
		Guide: "A primary key is a column or a set of columns. Each primary key value corresponds to a record",
		What:  "a key column reading code() of a dictionary that gives several values one code"},
	{Names: []string{transform.RuleKeyConcatMerges}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleKeyConcatMerges),
		Guide: "A primary key is a column or a set of columns. Each primary key value corresponds to a record",
		What:  "a key column concatenating two or more parts whose lengths vary"},
	{Names: []string{transform.RuleConstantKey}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleConstantKey),
		Guide: guideEnumerated,
		What:  "a key column that is a constant (a var or a literal), the same for every row"},
	{Names: []string{"key_columns"}, Needs: NeedsMapping, Worst: model.SevError, Check: checkKeyColumns, Guide: guideColumns,
		What: "1-3 key columns, at most Lindorm's limit"},
	{Names: []string{transform.RuleMonotonicFirst}, Needs: NeedsMapping, SampledBy: "incremental_key_column", Worst: model.SevWarning,
		Check: designRules(transform.RuleMonotonicFirst), Guide: guideIncremental,
		What: "a TIMESTAMP, DATE or timeuuid first key column (with a sample: judged in write order)"},
	{Names: []string{transform.RuleCollectionInKey}, Needs: NeedsMapping, SampledBy: "key_json_text", Worst: model.SevWarning,
		Check: designRules(transform.RuleCollectionInKey), Guide: guideJSON,
		What: "a collection column in the key, as JSON text (with a sample: the key's values are judged)"},
	{Names: []string{transform.RuleNoRegions}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleNoRegions),
		Guide: "If you use Bulkload to import data to a table, we recommend that you set the number of pre-split regions to Size of the data to import / 8",
		What:  "a mapping without regions: and no --regions"},
	{Names: []string{transform.RuleSplitKeysUneven}, Needs: NeedsMapping, Worst: model.SevWarning, Check: designRules(transform.RuleSplitKeysUneven),
		Guide: "If you use Bulkload to import data to a table, we recommend that you set the number of pre-split regions to Size of the data to import / 8",
		What:  "regions.split_keys that cut a hex hash prefix into uneven shares of its hex space (decimal split keys)"},
	{Names: []string{"key_length"}, Needs: NeedsSample, Worst: model.SevError, Check: checkKeyLength,
		Guide: "Values in the primary key columns should be short in length",
		What:  "key bytes: over the limit, long p99"},
	{Names: []string{"uniqueness"}, Needs: NeedsSample, Worst: model.SevError, Check: checkUniqueness,
		Guide: "A primary key is a column or a set of columns. Each primary key value corresponds to a record",
		What:  "target keys from more than one source row"},
	{Names: []string{"duplicates"}, Needs: NeedsSample, Worst: model.SevInfo, Check: checkDuplicates,
		What: "identical rows repeated (nothing lost)"},
	{Names: []string{"first_column_cardinality"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkFirstColumnCardinality,
		Guide: guideEnumerated, What: "distinct values of the first key column vs regions"},
	{Names: []string{"first_column_skew"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkFirstColumnSkew,
		Guide: guideEnumerated, What: "one first-column value holds too many rows"},
	{Names: []string{"first_column_prefix"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkFirstColumnPrefix,
		Guide: guideEnumerated, What: "every first-column value shares a prefix"},
	{Names: []string{"first_column_monotonic"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkFirstColumnMonotonic,
		Guide: guideIncremental, What: "the first key column grows (or shrinks) in write order"},
	{Names: []string{"incremental_key_column", "write_order_unknown"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkWriteOrder,
		Guide: "we recommend that you do not specify an incremental column as the first primary key column and avoid including incremental columns in the primary key",
		What:  "incremental key columns, the write order's evidence"},
	{Names: []string{"key_json_text"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkKeyJSONText, Guide: guideJSON,
		What: "JSON or long text in a key column"},
	{Names: []string{"key_column_cardinality", "key_column_code", "key_column_long", "key_column_prefix"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkColumns,
		Guide: "Replace the STRING data type with the LONG or INT data type", What: "the key columns' encodings (long, code, ...)"},
	{Names: []string{"region_plan"}, Needs: NeedsSample, Worst: model.SevInfo, Check: checkRegionPlan,
		What: "the regions and where their split keys come from"},
	{Names: []string{"region_balance", "empty_regions"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkRegionBalance,
		Guide: "make sure that the ranges of pre-split regions conforms to the data writing pattern", What: "rows per region, empty regions"},
	{Names: []string{"write_hotspot"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkWriteHotspot, Guide: guideLeftToRight,
		What: "the busiest region's share of each window of writes"},
	{Names: []string{"single_row_hotspot"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkSingleRowHotspot,
		Guide: "Requests for the same row are always distributed to the same node",
		What:  "one key written again and again within a window of writes"},
	{Names: []string{"query_access"}, Needs: NeedsSample, Worst: model.SevWarning, Check: checkQueryAccess, Guide: guideQueries,
		What: "how the key serves each declared query"},
	{Names: []string{"query_index"}, Needs: NeedsSample, Worst: model.SevInfo, Check: checkQueryIndex,
		Guide: "For queries that cannot be expressed with GET or SCAN, use an index table or secondary index",
		What:  "an index for a declared query the key serves only by scanning the whole table"},
	{Names: []string{"advisor"}, Needs: NeedsSample, Worst: model.SevInfo, Check: checkAdvisor, Guide: guideQueries,
		What: "where the mapping ranks among the alternatives"},
	{Names: []string{"sample"}, Needs: NeedsSample, Worst: model.SevInfo, Check: checkSample,
		What: "the figures are a sample's"},
}

// Facts are the report's figures with what several rules derive from them.
type Facts struct {
	*model.Report
	sampled  bool // the figures come from rows of the source (else the mapping alone)
	regions  int
	onSample string  // appended to the counts that are a sample's
	mono     float64 // the first key column's monotonic share, the larger direction
	ordered  string  // the order the rows are judged in
	arrival  bool    // that order is the order read: nothing told the application's
	incFirst bool    // the first key column is incremental (a warning of its own)
}

// newRowsEnd is the end of the key space a monotonic first key column's new rows land at: the
// start when its values fall, or rise and are stored DESC (newest first).
func (f *Facts) newRowsEnd() string {
	if f.Plan.Desc != (f.FirstColumn.MonotonicDown > f.FirstColumn.MonotonicUp) {
		return "start"
	}
	return "end"
}

// NewFacts are the facts of a report, whose figures come from rows of the source.
func NewFacts(rep *model.Report) *Facts {
	f := &Facts{Report: rep, sampled: true, regions: rep.Plan.Regions, ordered: "arrival order",
		mono: max(rep.FirstColumn.MonotonicUp, rep.FirstColumn.MonotonicDown)}
	if rep.Source.Sampled {
		f.onSample = " (on the sample)"
	}
	if wo := rep.WriteOrder; wo != nil {
		f.ordered = "write order (" + wo.Label() + ")"
		if wo.Evidence == model.OrderArrival {
			// the order read is no write order: an export sorted by the key reads monotonic
			f.ordered, f.arrival = "arrival order (the order read, which need not be the application's)", true
		}
		f.incFirst = len(wo.KeyColumns) > 0 && wo.KeyColumns[0].Incremental
	}
	return f
}

// MappingFacts are the facts of a mapping alone: its design rules (DesignRules, which say
// whether the region count comes from elsewhere) and its key's shape.
func MappingFacts(prog *transform.Program, design []transform.DesignRule) *Facts {
	rep := &model.Report{Design: design}
	rep.Key.Columns = prog.Target().KeyLen
	return &Facts{Report: rep}
}

// Applies says whether the rule examines these facts: a sample rule needs rows of the source,
// and a mapping rule gives way to the sample rule that judges the same on data, when the sample
// gave that rule something to judge.
func (r *Rule) Applies(f *Facts) bool {
	if f.sampled {
		return r.SampledBy == "" || !f.judges(r.SampledBy)
	}
	return r.Needs == NeedsMapping
}

// judges tells whether a sample rule that stands in for a mapping rule had data to judge: with
// none (every row rejected; one row, or one value of the first key column, which has no order),
// it gives no finding, and the mapping's rule must stand rather than pass unexamined.
func (f *Facts) judges(rule string) bool {
	switch rule {
	case "incremental_key_column":
		wo := f.WriteOrder
		return wo != nil && f.Totals.RowsOK >= 2 && len(wo.KeyColumns) > 0 && wo.KeyColumns[0].Distinct >= 2
	case "key_json_text":
		return f.Totals.RowsOK > 0
	}
	return true
}

// Apply runs the table on the facts: the findings in the table's order, and the rules it could
// not examine (sample rules, on a mapping alone).
func Apply(f *Facts) (fs []model.Finding, skipped []Rule) {
	for _, r := range Rules {
		switch {
		case r.Applies(f):
			fs = append(fs, r.Check(f)...)
		case r.Needs == NeedsSample:
			skipped = append(skipped, r)
		}
	}
	return fs, skipped
}

// RuleOf is the table's row that gives findings of the rule name (nil: none).
func RuleOf(name string) *Rule {
	for i := range Rules {
		if slices.Contains(Rules[i].Names, name) {
			return &Rules[i]
		}
	}
	return nil
}

// designRules gives the mapping's design rules (transform.DesignRules) of these codes, each as
// a finding pointing at its place in the mapping.
func designRules(codes ...string) func(f *Facts) []model.Finding {
	return func(f *Facts) []model.Finding {
		var fs []model.Finding
		for _, d := range f.Design {
			if !slices.Contains(codes, d.Code) {
				continue
			}
			sev := model.SevWarning
			if d.Error {
				sev = model.SevError
			}
			x := finding(d.Code, sev, d.Message, nil)
			x.Path = d.Path
			fs = append(fs, x)
		}
		return fs
	}
}

func one(f model.Finding) []model.Finding { return []model.Finding{f} }

// Evaluate applies the rules to the figures, sorts the findings worst first and sets the verdict.
func Evaluate(rep *model.Report, strict bool) {
	fs, _ := Apply(NewFacts(rep))
	order := map[string]int{model.SevError: 0, model.SevWarning: 1, model.SevInfo: 2}
	sort.SliceStable(fs, func(i, j int) bool { return order[fs[i].Severity] < order[fs[j].Severity] })
	rep.Findings = fs
	rep.Verdict = verdict(fs, strict)
}

func verdict(fs []model.Finding, strict bool) model.Verdict {
	v := model.Verdict{Strict: strict}
	for _, f := range fs {
		switch f.Severity {
		case model.SevError:
			v.Errors++
		case model.SevWarning:
			v.Warnings++
		default:
			v.Infos++
		}
	}
	switch {
	case v.Errors > 0:
		v.ExitCode = 2
	case strict && v.Warnings > 0:
		v.ExitCode = 1
	}
	return v
}

// fewRows is the few_rows warning of rows too few to judge the key's spread: no first-column
// value repeats and the rows cannot fill the regions (first_column_cardinality, region_balance
// and the like say they did not judge). The verdict must not read OK on them.
func fewRows(f *Facts) []model.Finding {
	need := max(int64(f.regions)*minRowsPerRegion, fewValues)
	if !f.noRepeats() || f.Totals.RowsOK >= need {
		return nil
	}
	return one(finding("few_rows", model.SevWarning, fmt.Sprintf("only %s rows passed the mapping, each with a first-key-column value of its own: too few to judge whether the key design spreads or hotspots (the notes marked not judged); run the report on at least %s rows",
		model.Count(f.Totals.RowsOK), model.Count(need)), map[string]float64{"rows": float64(f.Totals.RowsOK), "rows_needed": float64(need)}))
}

func checkRejects(f *Facts) []model.Finding {
	t := f.Totals
	if t.RowsAnalysed == 0 {
		// nothing was judged: an empty file, a window past a topic's end, a wrong --source
		return one(finding("no_rows", model.SevWarning, "the source gave no rows, so nothing here says whether the key design hotspots or loses rows: check --source (an empty file? a Kafka window past the topic's end?)", map[string]float64{"rows": 0}))
	}
	if t.RowsRejected == 0 {
		return append(one(finding("rejects", model.SevInfo, fmt.Sprintf("all %s rows pass the mapping", model.Count(t.RowsAnalysed)), map[string]float64{"rows_rejected": 0, "share": 0})), fewRows(f)...)
	}
	share := float64(t.RowsRejected) / float64(max(t.RowsAnalysed, 1))
	ev := map[string]float64{"rows_rejected": float64(t.RowsRejected), "share": share}
	var parts []string
	for _, c := range model.SortedCodes(t.RejectCodes) {
		ev["code_"+c] = float64(t.RejectCodes[c])
		parts = append(parts, fmt.Sprintf("%s %s", c, model.Count(t.RejectCodes[c])))
	}
	if t.RowsOK == 0 {
		// nothing would be migrated, and no key was there to judge
		return one(finding("rejects", model.SevError, fmt.Sprintf("every row (%s) would be rejected, so nothing would be migrated and nothing here says whether the key design hotspots: %s; "+
			"the examples name the field: fix the mapping's column types or expressions, or the data", model.Count(t.RowsRejected), strings.Join(parts, ", ")), ev))
	}
	return append(one(finding("rejects", model.SevWarning, fmt.Sprintf("%s of %s rows (%s) would not be migrated: %s", model.Count(t.RowsRejected),
		model.Count(t.RowsAnalysed), model.Pct(share), strings.Join(parts, ", ")), ev)), fewRows(f)...)
}

func checkKeyColumns(f *Facts) []model.Finding {
	k := f.Key
	kev := map[string]float64{"columns": float64(k.Columns)}
	x := finding("key_columns", model.SevInfo, fmt.Sprintf("%d key column%s (guide: 1-3)", k.Columns, model.Plural(k.Columns)), kev)
	switch {
	case k.Columns > transform.MaxKeyColumns:
		x = finding("key_columns", model.SevError, fmt.Sprintf("%d key columns: Lindorm allows at most %d", k.Columns, transform.MaxKeyColumns), kev)
	case k.Columns > 3:
		x = finding("key_columns", model.SevWarning, fmt.Sprintf("%d key columns: the design guide recommends 1-3 (fewer columns, smaller keys, faster writes)", k.Columns), kev)
	}
	x.Path = "target.primary_key"
	return one(x)
}

// noKeysWhy says why no key was built: every row rejected, or none read.
func noKeysWhy(f *Facts) string {
	if f.Totals.RowsRejected == 0 {
		return "the source gave no rows"
	}
	return "no row passed the mapping (see rejects)"
}

func checkKeyLength(f *Facts) []model.Finding {
	k := f.Key
	if f.Totals.RowsOK == 0 {
		// no key was built: lengths of zero would pass for short keys
		return one(finding("key_length", model.SevInfo, "key length not measured: "+noKeysWhy(f), map[string]float64{"keys": 0}))
	}
	lev := map[string]float64{"min_bytes": float64(k.MinBytes), "mean_bytes": k.MeanBytes, "p99_bytes": float64(k.P99Bytes),
		"max_bytes": float64(k.MaxBytes), "over_limit": float64(k.OverLimit), "fixed": model.B2f(k.FixedLength)}
	shape := "variable length"
	if k.FixedLength {
		shape = "fixed length"
	}
	lens := fmt.Sprintf("key bytes min %d / mean %.1f / p99 %d / max %d, %s", k.MinBytes, k.MeanBytes, k.P99Bytes, k.MaxBytes, shape)
	switch {
	case k.OverLimit > 0:
		return one(finding("key_length", model.SevError, fmt.Sprintf("%s keys are longer than Lindorm's %d bytes (rejected as key_too_long); %s", model.Count(k.OverLimit), transform.MaxKeyBytes, lens), lev))
	case k.P99Bytes > longKeyP99:
		return one(finding("key_length", model.SevWarning, fmt.Sprintf("long keys: %s (guide: keep keys short, prefer fixed-length values such as BIGINT)", lens), lev))
	}
	return one(finding("key_length", model.SevInfo, lens, lev))
}

func checkUniqueness(f *Facts) []model.Finding {
	u := f.Uniqueness
	uev := map[string]float64{"keys": float64(u.Keys), "colliding_keys": float64(u.CollidingKeys), "collision_rows": float64(u.CollisionRows),
		"duplicate_rows": float64(u.DuplicateRows), "exact": model.B2f(u.Exact)}
	if f.Totals.RowsOK == 0 {
		// no key was built: no collisions among none says nothing of the key
		return one(finding("uniqueness", model.SevInfo, "uniqueness not checked: "+noKeysWhy(f), uev))
	}
	if u.CollisionRows == 0 {
		return one(finding("uniqueness", model.SevInfo, fmt.Sprintf("no collisions: %s distinct keys from as many distinct source rows%s", model.Count(u.Keys), f.onSample), uev))
	}
	msg := fmt.Sprintf("%s rows would be silently overwritten: %s target keys are produced by more than one distinct source row%s", model.Count(u.CollisionRows), model.Count(u.CollidingKeys), f.onSample)
	if len(u.Examples) > 0 {
		ex := u.Examples[0]
		msg += "; e.g. key " + strings.Join(ex.Key, "|") + " <- " + originsText(ex, u.SourceColumns)
		switch {
		case ex.SameKeySources && len(ex.DifferIn) > 0:
			msg += ", which differ only in " + ListText(ex.DifferIn) + ", columns the key does not read: the key does not identify a source row"
		case ex.SameKeySources:
			msg += ", which differ only in columns the key does not read: the key does not identify a source row"
		case len(ex.DifferIn) > 0:
			msg += ", which differ in " + ListText(ex.DifferIn)
		}
	}
	if sg := u.Suggestion; sg != nil {
		msg += "; " + sg.Message
		uev["suggested_columns"] = float64(len(sg.Add))
		uev["suggestion_separates_all"] = model.B2f(sg.SeparatesAll)
	}
	return one(finding("uniqueness", model.SevError, msg, uev))
}

func checkDuplicates(f *Facts) []model.Finding {
	u := f.Uniqueness
	if u.DuplicateRows == 0 {
		return nil
	}
	return one(finding("duplicates", model.SevInfo, fmt.Sprintf("%s rows are identical repeats of another row (same key, same values): they collapse into one, nothing is lost", model.Count(u.DuplicateRows)),
		map[string]float64{"duplicate_rows": float64(u.DuplicateRows)}))
}

func checkFirstColumnCardinality(f *Facts) []model.Finding {
	fc, n := f.FirstColumn, f.regions
	if f.Totals.RowsOK == 0 {
		return nil
	}
	name := fc.Name
	cev := map[string]float64{"distinct": float64(fc.Distinct), "regions": float64(n), "exact": model.B2f(fc.DistinctExact)}
	approx := ""
	if !fc.DistinctExact {
		approx = "about "
	}
	if f.noRepeats() && fc.Distinct < int64(max(n, fewValues)) {
		return one(notJudged("first_column_cardinality", fmt.Sprintf("first key column %s: how many values it takes, not judged: each of the %s rows holds a value of its own, so they set no bound on its values; run the report on at least %s rows", name, model.Count(f.Totals.RowsOK), model.Count(int64(max(n, fewValues)))), cev))
	}
	switch {
	case fc.Distinct < int64(n):
		return one(finding("first_column_cardinality", model.SevWarning, fmt.Sprintf("first key column %s has only %s%s distinct values%s for %d regions: %d regions can never get data (enumerated values: the guide's \"order type or status code\" case)", name, approx, model.Count(fc.Distinct), f.onSample, n, n-int(fc.Distinct)), cev))
	case fc.Distinct < fewValues && f.Plan.Strategy == "int_bucket":
		return one(finding("first_column_cardinality", model.SevInfo, fmt.Sprintf("first key column %s is a bucket with %s%s values%s for %d regions, by design", name, approx, model.Count(fc.Distinct), f.onSample, n), cev))
	case fc.Distinct < fewValues && splitByNext(f.Report):
		return one(finding("first_column_cardinality", model.SevInfo, fmt.Sprintf("first key column %s has only %s%s distinct values%s, but its values pass the region size and the next key column spreads them: Lindorm splits each into regions of its own (pre-split can only cut between values of %s)", name, approx, model.Count(fc.Distinct), f.onSample, name), cev))
	case fc.Distinct < fewValues:
		return one(finding("first_column_cardinality", model.SevWarning, fmt.Sprintf("first key column %s has only %s%s distinct values%s: writes pile up on a few key ranges", name, approx, model.Count(fc.Distinct), f.onSample), cev))
	}
	return one(finding("first_column_cardinality", model.SevInfo, fmt.Sprintf("first key column %s has %s%s distinct values%s", name, approx, model.Count(fc.Distinct), f.onSample), cev))
}

func checkFirstColumnSkew(f *Facts) []model.Finding {
	if len(f.FirstColumn.Top) == 0 || f.Totals.RowsOK == 0 {
		return nil
	}
	if f.noRepeats() && f.Totals.RowsOK < fewValues {
		// one row in n is a share of 1/n: a row count, not a skew
		return one(notJudged("first_column_skew", fmt.Sprintf("first key column %s: skewed or not, not judged: each of the %s rows holds a value of its own; run the report on at least %d rows", f.FirstColumn.Name, model.Count(f.Totals.RowsOK), fewValues),
			map[string]float64{"top_share": f.FirstColumn.Top[0].Share}))
	}
	// judged against the regions asked for, not the few a plan over few values fills: 60% of the
	// rows in one of 3 value ranges is a hot range of the 16 regions the table gets
	return one(skewFinding(f.Report, f.FirstColumn.Top[0], max(skewShare, 2/float64(max(f.regions, f.Plan.Asked, 1)))))
}

func checkFirstColumnPrefix(f *Facts) []model.Finding {
	fc := f.FirstColumn
	if fc.PrefixBytes == 0 || f.Totals.RowsOK <= 1 || fc.Distinct <= 1 || !model.IsTextType(fc.Type) {
		return nil
	}
	pev := map[string]float64{"prefix_bytes": float64(fc.PrefixBytes), "min_bytes": float64(fc.MinBytes)}
	if fc.PrefixBytes >= prefixBytes && 2*fc.PrefixBytes >= fc.MinBytes {
		return one(finding("first_column_prefix", model.SevWarning, fmt.Sprintf("every value of %s starts with \"%s\" (%d of at least %d bytes): a shared prefix clusters keys (the guide's \"column with a shared prefix\")", fc.Name, fc.CommonPrefix, fc.PrefixBytes, fc.MinBytes), pev))
	}
	return one(finding("first_column_prefix", model.SevInfo, fmt.Sprintf("every value of %s starts with \"%s\"", fc.Name, fc.CommonPrefix), pev))
}

func checkFirstColumnMonotonic(f *Facts) []model.Finding {
	fc := f.FirstColumn
	if f.Totals.RowsOK <= 1 {
		return nil
	}
	mev := map[string]float64{"monotonic_up": fc.MonotonicUp, "monotonic_down": fc.MonotonicDown}
	if fc.Distinct <= 1 {
		// one value has no order: every row is both >= and <= the previous one
		return one(notJudged("first_column_monotonic", fmt.Sprintf("first key column %s: monotonic or not, not judged: it holds a single value (the first_column_cardinality warning), which has no order", fc.Name), mev))
	}
	if f.Totals.RowsOK < collide.MinRhoRows {
		// a direction over a handful of rows is chance: two rows always have one
		return one(notJudged("first_column_monotonic", fmt.Sprintf("first key column %s: monotonic or not, not judged: %s rows are too few to tell a direction from chance (at least %d)", fc.Name, model.Count(f.Totals.RowsOK), collide.MinRhoRows), mev))
	}
	dir := ">="
	if fc.MonotonicDown > fc.MonotonicUp {
		dir = "<="
	}
	lands := "every new row lands at the " + f.newRowsEnd() + " of the key space, in one region"
	if f.arrival {
		lands = "if the application creates rows in this order, " + lands
	}
	msg := fmt.Sprintf("first key column %s is monotonic: in %s, %s of rows come with a value %s the previous one (timestamps, auto-increment ids): %s", fc.Name, f.ordered, model.Pct(f.mono), dir, lands)
	switch {
	case f.mono >= MonotonicShare && fc.Distinct > 1 && f.incFirst:
		return one(finding("first_column_monotonic", model.SevInfo, msg+" (the incremental_key_column warning)", mev))
	case f.mono >= MonotonicShare && fc.Distinct > 1:
		return one(finding("first_column_monotonic", model.SevWarning, msg, mev))
	}
	return one(finding("first_column_monotonic", model.SevInfo, fmt.Sprintf("first key column %s is not monotonic in %s (%s of rows >= the previous, %s <=)", fc.Name, f.ordered, model.Pct(fc.MonotonicUp), model.Pct(fc.MonotonicDown)), mev))
}

func checkWriteOrder(f *Facts) []model.Finding {
	var fs []model.Finding
	writeOrderFindings(f.Report, func(x model.Finding) { fs = append(fs, x) })
	return fs
}

func checkColumns(f *Facts) []model.Finding { return columnFindings(f.Report) }

func checkKeyJSONText(f *Facts) []model.Finding {
	var fs []model.Finding
	for _, kc := range f.Mapping.KeyColumns {
		if kc.JSONLike == 0 && kc.LongText == 0 {
			continue
		}
		var what []string
		if kc.JSONLike > 0 {
			what = append(what, model.Count(kc.JSONLike)+" values look like JSON")
		}
		if kc.LongText > 0 {
			what = append(what, fmt.Sprintf("%s values are longer than %d bytes", model.Count(kc.LongText), collide.LongTextBytes))
		}
		fs = append(fs, finding("key_json_text", model.SevWarning, fmt.Sprintf("key column %s: %s (max %d bytes): the guide says not to put JSON or long text in the primary key", kc.Name, strings.Join(what, ", "), kc.MaxBytes),
			map[string]float64{"json_like": float64(kc.JSONLike), "long_text": float64(kc.LongText), "max_bytes": float64(kc.MaxBytes)}))
	}
	return fs
}

func checkRegionPlan(f *Facts) []model.Finding {
	msg := fmt.Sprintf("%d regions, strategy %s (from %s)", f.regions, f.Plan.Strategy, f.Plan.Origin)
	if f.Plan.Note != "" {
		msg += ": " + f.Plan.Note
	}
	return one(finding("region_plan", model.SevInfo, msg, map[string]float64{"regions": float64(f.regions)}))
}

// spread reports whether the rows are spread over regions at all: more than one region, some rows.
func (f *Facts) spread() bool { return f.regions > 1 && f.Totals.RowsOK > 0 }

// noRepeats: no value of the first key column came twice (counted exactly), so the rows set no
// bound on how many values it takes or how they skew: a handful of rows of a hash-prefixed key
// look like a handful of values.
func (f *Facts) noRepeats() bool {
	fc := f.FirstColumn
	return fc.DistinctExact && f.Totals.RowsOK > 0 && fc.Distinct >= f.Totals.RowsOK
}

func checkRegionBalance(f *Facts) []model.Finding {
	if !f.spread() {
		return nil
	}
	dist, n := f.Distribution, f.regions
	var fs []model.Finding
	bev := map[string]float64{"rows_max_mean": dist.RowsMaxMean, "bytes_max_mean": dist.BytesMaxMean, "cv": dist.CV, "empty_regions": float64(dist.EmptyRegions)}
	if f.noRepeats() && f.Totals.RowsOK < int64(n)*minRowsPerRegion {
		// under ten rows a region, chance alone leaves regions empty and one twice as busy
		return one(notJudged("region_balance", fmt.Sprintf("region balance not judged: %s rows, each with a first-column value of its own, are too few to fill %d regions evenly even by chance; run the report on at least %s rows (%d a region)", model.Count(f.Totals.RowsOK), n, model.Count(int64(n)*minRowsPerRegion), minRowsPerRegion), bev))
	}
	hot := ""
	if len(dist.HottestRegions) > 0 {
		r := f.Regions[dist.HottestRegions[0]]
		hot = fmt.Sprintf("; busiest region %d holds %s of the rows", r.Index, model.Pct(r.Share))
	}
	if dist.RowsMaxMean >= BalanceMaxMean {
		fs = append(fs, finding("region_balance", model.SevWarning, fmt.Sprintf("unbalanced regions: the busiest holds %.1fx the mean (CV %.2f)%s; bulkload takes as long as its slowest region", dist.RowsMaxMean, dist.CV, hot), bev))
	} else {
		fs = append(fs, finding("region_balance", model.SevInfo, fmt.Sprintf("balanced regions: max/mean %.2f, CV %.2f", dist.RowsMaxMean, dist.CV), bev))
	}
	if dist.EmptyRegions > 0 {
		why := ""
		if dist.Unreachable > 0 {
			why = fmt.Sprintf(": the first column has only %s values", model.Count(f.FirstColumn.Distinct))
		}
		fs = append(fs, finding("empty_regions", model.SevWarning, fmt.Sprintf("%d of %d regions get no rows%s", dist.EmptyRegions, n, why),
			map[string]float64{"empty_regions": float64(dist.EmptyRegions), "unreachable_regions": float64(dist.Unreachable)}))
	}
	return fs
}

func checkWriteHotspot(f *Facts) []model.Finding {
	hs := f.Hotspot
	if !f.spread() || hs.Windows == 0 {
		return nil
	}
	hev := map[string]float64{"mean_top_share": hs.MeanTopShare, "max_top_share": hs.MaxTopShare, "even_share": hs.EvenShare,
		"hot_factor": hs.HotFactor, "windows": float64(hs.Windows), "rows_per_window": float64(hs.RowsPerWindow)}
	if hs.Windows < MinHotspotWindows {
		// a key that writes one region at a time fills 1/windows of the regions in each window:
		// over fewer windows its factor stays under the warning, and one window of every row
		// shows only how the rows fall into regions (region_balance), so no figure says anything
		// about writes over time
		return one(notJudged("write_hotspot", fmt.Sprintf("write hotspot not judged: the rows%s in %s fill %d of the %d windows of %s rows it takes to show a key that writes one region at a time (within fewer, each window spans several regions' rows); run the report on at least %s rows",
			f.WindowRows(), f.ordered, hs.Windows, MinHotspotWindows, model.Count(hs.RowsPerWindow), model.Count(int64(MinHotspotWindows)*hs.RowsPerWindow)), hev))
	}
	if hs.HotFactor < HotFactorWarnAt(hs.EvenShare) {
		return one(finding("write_hotspot", model.SevInfo, fmt.Sprintf("writes spread over time in %s: the busiest region of a window of %s rows%s takes %s on average (even: %s, %.1fx)", f.ordered, model.Count(hs.RowsPerWindow), f.WindowRows(), model.Pct(hs.MeanTopShare), model.Pct(hs.EvenShare), hs.HotFactor), hev))
	}
	why := ""
	if f.mono >= MonotonicShare {
		last := "last"
		if f.newRowsEnd() == "start" {
			last = "first"
		}
		why = " (the incremental primary key hotspot: Lindorm cannot split it away, new rows always land in the " + last + " range)"
	}
	return one(finding("write_hotspot", model.SevWarning, fmt.Sprintf("write hotspot: in each window of %s rows%s in %s the busiest region takes %s of the writes on average (even: %s, %.1fx)%s; continuous writes in this order would load one region at a time",
		model.Count(hs.RowsPerWindow), f.WindowRows(), f.ordered, model.Pct(hs.MeanTopShare), model.Pct(hs.EvenShare), hs.HotFactor, why), hev))
}

// HotFactorWarnAt is the hot factor write_hotspot warns at over regions of the even share: 2.5,
// or, where fewer regions cap the factor below it (2 regions: every write in one is 2x), three
// quarters of the way from an even spread to one region.
func HotFactorWarnAt(even float64) float64 {
	if even <= 0 {
		return HotFactorWarn
	}
	return min(HotFactorWarn, 1+0.75*(1/even-1))
}

func checkSingleRowHotspot(f *Facts) []model.Finding {
	h := f.HotRows
	if h.Rows == 0 || h.Windows == 0 {
		return nil
	}
	ev := map[string]float64{"windows": float64(h.Windows), "rows_per_window": float64(h.RowsPerWindow), "even_share": h.EvenShare}
	// the windows are cut from the advisor's subsample: a key written twice in a window of every
	// row may be kept once
	of := ""
	if h.Rows < f.Totals.RowsOK {
		of = " of a " + model.Count(h.Rows) + "-row subsample of the " + model.Count(f.Totals.RowsOK) + " rows accepted"
	}
	if h.RowsPerWindow < MinHotRowWrites {
		// a window shorter than the writes the rule warns at cannot show a hot row
		return one(notJudged("single_row_hotspot", fmt.Sprintf("single-row hotspots not judged: the %s rows%s in %s make windows of %s %s, and a row is hot at %d writes of a window; run the report on at least %s rows",
			model.Count(h.Rows), of, f.ordered, model.Count(h.RowsPerWindow), "write"+model.Plural(int(h.RowsPerWindow)), MinHotRowWrites, model.Count(MinHotRowWrites*collide.HotRowWindows)), ev))
	}
	if len(h.Top) == 0 {
		return one(finding("single_row_hotspot", model.SevInfo, fmt.Sprintf("no key is written twice within a window of %s writes%s in %s%s", model.Count(h.RowsPerWindow), of, f.ordered, f.onSample), ev))
	}
	t := h.Top[0]
	ev["window_writes"], ev["window_share"], ev["writes"] = float64(t.WindowWrites), t.WindowShare, float64(t.Writes)
	what := fmt.Sprintf("key %s takes %s writes of a window of %s%s in %s (%s", strings.Join(t.Key, "|"), model.Count(t.WindowWrites), model.Count(h.RowsPerWindow), of, f.ordered, model.Pct(t.WindowShare))
	if t.WindowShare >= h.EvenShare && t.WindowWrites >= MinHotRowWrites {
		return one(finding("single_row_hotspot", model.SevWarning, what+fmt.Sprintf(", a whole region's share is %s; on the advisor's subsample): a single-row hotspot, which no key design spreads (the wide-table guide: \"Requests for the same row are always distributed to the same node ... you can only resolve this issue by scaling up the specification of the node\"): merge its updates before they reach Lindorm, or split the row (a counter per shard, summed on read)", model.Pct(h.EvenShare)), ev))
	}
	if t.WindowShare >= h.EvenShare {
		// a region's share of a short window, in fewer writes than a hotspot takes
		return one(finding("single_row_hotspot", model.SevInfo, what+fmt.Sprintf(", over a region's share of %s, but under %d writes): no single-row hotspot", model.Pct(h.EvenShare), MinHotRowWrites), ev))
	}
	return one(finding("single_row_hotspot", model.SevInfo, what+fmt.Sprintf(", under a region's share of %s): no single-row hotspot", model.Pct(h.EvenShare)), ev))
}

// mappingAlternative is the mapping's own design among the advisor's alternatives (nil: none).
func (f *Facts) mappingAlternative() *model.Alternative {
	var own *model.Alternative
	for i := range f.Alternatives {
		if f.Alternatives[i].IsMapping {
			own = &f.Alternatives[i]
		}
	}
	return own
}

func checkQueryAccess(f *Facts) []model.Finding {
	own := f.mappingAlternative()
	if own == nil {
		return nil
	}
	var fs []model.Finding
	for i, q := range own.Queries {
		qev := map[string]float64{"query": float64(i + 1), "scans": float64(q.Scans), "full_scan": model.B2f(q.Access == "full_scan"), "filtered": float64(len(q.Filtered)),
			"unordered": model.B2f(q.Unordered)}
		msg := fmt.Sprintf("q%d %s: %s", i+1, q.Query, q.Note)
		// a newest-first query the key serves oldest first breaks the guide's [userid][orderid DESC]
		if q.Access == "full_scan" || q.Access == "scan" && len(q.Filtered) > 0 || q.Unordered {
			fs = append(fs, finding("query_access", model.SevWarning, msg, qev))
		} else {
			fs = append(fs, finding("query_access", model.SevInfo, msg, qev))
		}
	}
	return fs
}

func checkQueryIndex(f *Facts) []model.Finding {
	var fs []model.Finding
	for _, x := range f.Indexes {
		ev := map[string]float64{"secondary_index": model.B2f(x.Kind == "secondary_index")}
		if x.Kind == "secondary_index" {
			fs = append(fs, finding("query_index", model.SevInfo, fmt.Sprintf("%s: keep the key and add a secondary index (the guide: \"For queries that cannot be expressed with GET or SCAN, use an index table or secondary index\"): %s %s", x.Query, x.DDL, x.Note), ev))
			continue
		}
		fs = append(fs, finding("query_index", model.SevInfo, fmt.Sprintf("%s: keep the key and add an index table keyed %s (the guide: \"For queries that cannot be expressed with GET or SCAN, use an index table or secondary index\"): %s", x.Query, x.Key, x.Note), ev))
	}
	return fs
}

func checkAdvisor(f *Facts) []model.Finding {
	own := f.mappingAlternative()
	if own == nil {
		return nil
	}
	best := f.Alternatives[0]
	aev := map[string]float64{"alternatives": float64(len(f.Alternatives)), "mapping_rank": float64(own.Rank)}
	if best.IsMapping {
		return one(finding("advisor", model.SevInfo, fmt.Sprintf("the mapping's design ranks first of %d (%s)", len(f.Alternatives), own.Grade), aev))
	}
	return one(finding("advisor", model.SevInfo, fmt.Sprintf("the advisor ranks %s %s first (%s, hot factor %.1f); the mapping ranks %d (%s)", best.Name, best.PrimaryKey, best.Grade, WriteHotFactor(&best), own.Rank, own.Grade), aev))
}

func checkSample(f *Facts) []model.Finding {
	if !f.Source.Sampled {
		return nil
	}
	return one(finding("sample", model.SevInfo, fmt.Sprintf("analysed %s: figures are for the %s rows analysed; collisions between rows outside the sample are not seen", f.Source.Sample, model.Count(f.Totals.RowsAnalysed)),
		map[string]float64{"scale": f.Source.Scale}))
}

func originsText(ex model.CollisionExample, cols []string) string {
	var parts []string
	for _, o := range ex.Origins {
		var kv []string
		for _, k := range cols {
			if v, ok := o.Values[k]; ok {
				kv = append(kv, k+"="+v)
			}
		}
		parts = append(parts, "("+strings.Join(kv, ", ")+")")
	}
	return strings.Join(parts, " and ")
}

// writeOrderFindings are the incremental_key_column and write_order_unknown findings.
func writeOrderFindings(rep *model.Report, add func(model.Finding)) {
	wo := rep.WriteOrder
	if wo == nil || rep.Totals.RowsOK < 2 {
		return
	}
	if wo.Evidence == model.OrderArrival {
		add(finding("write_order_unknown", model.SevInfo, "the order the application creates rows in is unknown: windows and monotonicity are judged in "+wo.Description+
			" (a Cassandra token scan or a dsbulk unload delivers rows in hash order, an export in whatever order it was sorted by); declare the creation-time column as the mapping's source.write_order (rekey report also takes --write-order COLUMN)", nil))
	}
	regions := incrementalRegions(rep)
	kcs := rep.Mapping.KeyColumns
	if wo.Evidence != model.OrderArrival && wo.SubsampleRows < collide.MinRhoRows {
		var unjudged []string
		for i, ko := range wo.KeyColumns {
			if !ko.Incremental && i < len(kcs) {
				unjudged = append(unjudged, ko.Name)
			}
		}
		if len(unjudged) > 0 {
			add(notJudged("incremental_key_column", fmt.Sprintf("key columns %s: rising with the write order or not, not judged: %s rows are too few for a rank correlation with %s (at least %d); they were judged by their types and values only",
				strings.Join(unjudged, ", "), model.Count(int64(wo.SubsampleRows)), wo.Description, collide.MinRhoRows), nil))
		}
	}
	for i, ko := range wo.KeyColumns {
		if !ko.Incremental || i >= len(kcs) {
			continue
		}
		judged := "judged in write order by " + wo.Description
		if wo.Evidence == model.OrderArrival {
			// no write order: the column was judged by its values (a type, a sequence), not by an order
			judged = "judged by its values, the order the application creates rows in being unknown"
		}
		add(incrementalFinding(kcs, i, ko, judged, regions, int64(wo.SubsampleRows)))
	}
}

// incrementalRegions is the region count an incremental column's prefix is judged against.
// Each prefix value writes at the end of its own range, so fewer values than regions leave
// regions idle. Lindorm splits a region that grows past 8 GB, inside one prefix value too: a
// table gets at least the analysis' default count in time, however few first-column values the
// plan could split on.
func incrementalRegions(rep *model.Report) int {
	return max(rep.Plan.Regions, rep.Plan.Asked, rep.Recommendation.Bulkload.Regions, collide.DefaultAnalysisRegions)
}

// incrementalFinding is the incremental_key_column finding of key column i: it names the
// column, the evidence and the guide's fix. First in the key, every new row lands at the end of
// the key space: a hash prefix, or for a number or time a modulo bucket, spreads it. After a
// few prefix values, each value's new rows land at the end of its range (one hot range per
// value): the guide keeps a hash on the incrementing id. After a well-spread prefix
// ([userid][orderid]) every region gets some prefixes' new rows: fine.
func incrementalFinding(kcs []model.KeyColumn, i int, ko model.KeyOrder, judged string, regions int, rows int64) model.Finding {
	kc := kcs[i]
	ev := map[string]float64{"column": float64(i + 1), "rank_correlation": ko.RankCorrelation, "distinct": float64(ko.Distinct),
		"prefix_distinct": float64(ko.PrefixDistinct), "rises_in_prefix": ko.RisesInPrefix, "prefix_pairs": float64(ko.PrefixPairs), "regions": float64(regions)}
	x := kc.Expr
	hashed := "[md5(" + x + ").substr(0,4) + " + x + "]"
	if kc.Type == "VARBINARY" { // a blob's bytes are not text: the prefix is a column of its own
		hashed = "[md5(" + x + ").substr(0,4) AS " + kc.Name + "_hash][" + x + "]"
	}
	if i == 0 {
		fix := fmt.Sprintf("put a hash prefix before it (%s: the guide's hash(id) + id)", hashed)
		if t, _, _, err := pipeline.ParseType(kc.Type); err == nil && collide.IsIntType(t) {
			fix = fmt.Sprintf("put a modulo bucket ([%s %% %d][%s], the guide's bucket for time series read by time range) or a hash prefix (%s) before it", x, regions, x, hashed)
		}
		end := "end"
		if kc.Desc != (ko.RankCorrelation < 0) {
			end = "start" // stored newest first, or falling
		}
		return finding("incremental_key_column", model.SevWarning, fmt.Sprintf("first key column %s is incremental: it %s, %s; every new row lands at the %s of the key space, in one region (the design guide's incremental primary key hotspot): %s", kc.Name, ko.Why, judged, end, fix), ev)
	}
	var names, prefix []string
	for _, p := range kcs[:i] {
		names = append(names, p.Name)
		prefix = append(prefix, "["+p.Expr+"]")
	}
	pn := strings.Join(names, ", ")
	for _, p := range kcs[:i] {
		if p.Incremental {
			// the prefix's own finding already says where new rows go, and how to fix it
			return finding("incremental_key_column", model.SevInfo, fmt.Sprintf("key column %s is incremental too (it %s), behind %s, which is itself incremental: fixing %s's finding fixes this one", kc.Name, ko.Why, p.Name, p.Name), ev)
		}
	}
	if ko.PrefixDistinct < int64(regions) && rows > 0 && ko.PrefixDistinct >= rows {
		// every row its own prefix: the rows set no bound on the prefix's values
		return notJudged("incremental_key_column", fmt.Sprintf("key column %s is incremental (it %s); whether %s before it spreads it, not judged: each of the %s rows holds a value of %s of its own; run the report on at least %d rows",
			kc.Name, ko.Why, pn, model.Count(rows), pn, regions), ev)
	}
	if ko.PrefixDistinct < int64(regions) {
		return finding("incremental_key_column", model.SevWarning, fmt.Sprintf("key column %s is incremental (it %s, %s) and %s before it has only %s distinct values for %d regions: Lindorm splits a big value of %s into several regions, but every new row lands at the end of its value's range, one hot range per value: keep a hash on %s (%s%s, the guide's hash(id) + id)",
			kc.Name, ko.Why, judged, pn, model.Count(ko.PrefixDistinct), regions, pn, kc.Name, strings.Join(prefix, ""), hashed), ev)
	}
	return finding("incremental_key_column", model.SevInfo, fmt.Sprintf("key column %s is incremental (it %s) behind %s values of %s for %d regions: new rows spread over every region's prefixes, no hot range (the guide's [userid][orderid])", kc.Name, ko.Why, model.Count(ko.PrefixDistinct), pn, regions), ev)
}
