package render

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// The HTML page's view model: what templates/page.html.tmpl prints, as plain strings and
// numbers worked out from the report (the charts' geometry is in htmlchart.go). The templates
// hold the markup and html/template escapes every value for where it lands.

type pageView struct {
	Title          string
	Header         headerView
	Findings       []findingView
	RegionChart    regionChartView
	Heatmap        heatmapView
	Keys           keysView
	Uniqueness     uniquenessView
	Advisor        *advisorView // nil without alternatives
	Recommendation recommendationView
	Footer         string
}

func newPageView(rep *model.Report) *pageView {
	return &pageView{
		Title:          "rekey report: " + rep.Mapping.Table,
		Header:         newHeaderView(rep),
		Findings:       newFindingViews(rep.Findings),
		RegionChart:    newRegionChart(rep),
		Heatmap:        newHeatmapView(rep),
		Keys:           newKeysView(rep),
		Uniqueness:     newUniquenessView(rep),
		Advisor:        newAdvisorView(rep),
		Recommendation: newRecommendationView(rep.Recommendation),
		Footer:         fmt.Sprintf("%s · schema %s · mapping fingerprint %s", rep.Generator, rep.Schema, rep.Mapping.Fingerprint),
	}
}

type headerView struct {
	Table, MappingFile, SourceURI string
	Sampled                       bool
	Sample                        string
	PrimaryKey                    string
	TTLPlan                       string
	// WriteOrder is the order the report judged in, and WriteOrderNotes why better evidence
	// was not used, as the text's header says them
	WriteOrder      string
	WriteOrderNotes []string
	Verdict         string // FAIL, WARN or OK: also the badge's class
	Counts          string
	ExitCode        int
	KPIs            []kpiView
}

type kpiView struct {
	Label, Value string
	Class        string // "", warn or bad
}

func verdictWord(v model.Verdict) string {
	switch {
	case v.Errors > 0:
		return "FAIL"
	case v.Warnings > 0:
		return "WARN"
	}
	return "OK"
}

func newHeaderView(rep *model.Report) headerView {
	v, t := rep.Verdict, rep.Totals
	h := headerView{
		Table: rep.Mapping.Table, MappingFile: rep.Mapping.File, SourceURI: rep.Source.URI,
		Sampled: rep.Source.Sampled, Sample: rep.Source.Sample,
		PrimaryKey: rep.Mapping.PrimaryKey,
		TTLPlan:    rep.Mapping.TTLPlan,
		Verdict:    verdictWord(v),
		Counts:     fmt.Sprintf("%d error%s · %d warning%s · %d note%s", v.Errors, model.Plural(v.Errors), v.Warnings, model.Plural(v.Warnings), v.Infos, model.Plural(v.Infos)),
		ExitCode:   v.ExitCode,
	}
	if wo := rep.WriteOrder; wo != nil {
		h.WriteOrder, h.WriteOrderNotes = wo.Description, wo.Notes
	}
	flag := func(on bool, class string) string {
		if on {
			return class
		}
		return ""
	}
	if nj := notJudgedRules(rep); nj != "" {
		h.Counts += " · not judged: " + nj // as VerdictLine says it
	}
	overwritten := "rows overwritten"
	if rep.Source.Sampled {
		// a verdict on part of the input says so wherever it is printed (VerdictLine)
		h.Counts += " · on a sample"
		overwritten += " (on the sample)"
	}
	hot, hotFlag := fmt.Sprintf("%.1fx", rep.Hotspot.HotFactor), flag(rep.Hotspot.HotFactor >= advise.HotFactorWarnAt(rep.Hotspot.EvenShare), "warn")
	if rep.Hotspot.Windows < advise.MinHotspotWindows {
		hot, hotFlag = "not judged", "" // too few windows to show a key that writes one region at a time (write_hotspot)
	}
	h.KPIs = []kpiView{
		{"rows read", model.Count(t.RowsRead), ""},
		{"rows rejected", model.Count(t.RowsRejected), flag(t.RowsRejected > 0, "warn")},
		{overwritten, model.Count(rep.Uniqueness.CollisionRows), flag(rep.Uniqueness.CollisionRows > 0, "bad")},
		{"target data", transform.FormatSize(t.EstimatedTargetBytes), ""},
		{"regions (" + rep.Plan.Strategy + ")", fmt.Sprint(rep.Plan.Regions), ""},
		{"rows max / mean", fmt.Sprintf("%.2f", rep.Distribution.RowsMaxMean), flag(rep.Distribution.RowsMaxMean >= advise.BalanceMaxMean, "warn")},
		{"write hot factor", hot, hotFlag},
	}
	if unmeasured(rep) != "" {
		// no accepted row: the key's figures are zeros, not measurements (as the text says)
		h.KPIs[2].Value, h.KPIs[5].Value = "not measured", "not measured"
	}
	return h
}

type findingView struct {
	Severity string // also the badge's class
	Label    string // the severity, upper case
	Rule     string
	Message  string
}

func newFindingViews(fs []model.Finding) []findingView {
	out := make([]findingView, len(fs))
	for i, f := range fs {
		out[i] = findingView{Severity: f.Severity, Label: strings.ToUpper(f.Severity), Rule: f.Rule, Message: f.Message}
	}
	return out
}

// labelled is one row of a two-column table: a label and its value.
type labelled struct{ Label, Value string }

type keysView struct {
	Totals          []labelled
	Rejects         []rejectRow
	FirstColumn     string // its name and type
	FirstColumnRows []labelled
	Top             []topValueRow
	TopNote         string // what the top values' figures are when they are estimates
	KeyColumns      []keyColumnRow
}

type rejectRow struct{ Position, Code, Message string }

type topValueRow struct{ Value, Rows, Share string }

type keyColumnRow struct {
	Name, Type, Expr, From string
	MaxBytes               int
	JSONLike, LongText     string
}

// topValuesShown bounds the first column's heavy hitters on the page.
const topValuesShown = 6

func newKeysView(rep *model.Report) keysView {
	k, fc, t := rep.Key, rep.FirstColumn, rep.Totals
	shape := "variable length"
	if k.FixedLength {
		shape = "fixed length"
	}
	v := keysView{Totals: []labelled{
		{"rows read / analysed", model.Count(t.RowsRead) + " / " + model.Count(t.RowsAnalysed)},
		{"rows accepted / rejected", model.Count(t.RowsOK) + " / " + model.Count(t.RowsRejected)},
	}}
	if t.RowsSkipped > 0 {
		v.Totals = append(v.Totals, labelled{"rows skipped by the source (since=, expired cells, other tables than source.table)", model.Count(t.RowsSkipped)})
	}
	for _, c := range model.SortedCodes(t.RejectCodes) {
		v.Totals = append(v.Totals, labelled{"  rejected: " + c, model.Count(t.RejectCodes[c])})
	}
	v.Totals = append(v.Totals,
		labelled{"target bytes (uncompressed)", transform.FormatSize(t.TargetBytes) + " read, about " + transform.FormatSize(t.EstimatedTargetBytes) + " in all"},
		labelled{"key columns", fmt.Sprint(k.Columns)},
		labelled{"key bytes min / mean / p99 / max", fmt.Sprintf("%d / %.1f / %d / %d (%s)", k.MinBytes, k.MeanBytes, k.P99Bytes, k.MaxBytes, shape)},
		labelled{"keys over 2 KB", model.Count(k.OverLimit)},
		labelled{"time", fmt.Sprintf("%.2f s (%s rows/s)", t.Seconds, model.Count(int64(t.RowsPerSec)))},
	)
	for _, e := range t.RejectExamples {
		v.Rejects = append(v.Rejects, rejectRow{e.Position, e.Code, e.Message})
	}

	v.FirstColumn = fc.Name + " " + fc.Type
	if why := unmeasured(rep); why != "" {
		// the key's figures measure the accepted rows: with none, their zeros would read as a
		// measured key (the text's sections say the same)
		for i := range v.Totals {
			if v.Totals[i].Label == "key bytes min / mean / p99 / max" {
				v.Totals[i].Value = "not measured: " + why
			}
		}
		v.FirstColumnRows = []labelled{{"distinct values, monotonic, prefix", "not measured: " + why}}
		v.KeyColumns = keyColumnRows(rep)
		return v
	}
	distinct := model.Count(fc.Distinct)
	if !fc.DistinctExact {
		distinct = "about " + distinct + " (HyperLogLog)"
	}
	v.FirstColumnRows = []labelled{
		{"distinct values", distinct},
		{"monotonic (>= / <= previous row)", model.Pct(fc.MonotonicUp) + " / " + model.Pct(fc.MonotonicDown)},
	}
	if model.IsTextType(fc.Type) {
		v.FirstColumnRows = append(v.FirstColumnRows, labelled{"common prefix", fmt.Sprintf("\"%s\" (%d bytes)", fc.CommonPrefix, fc.PrefixBytes)})
	}
	if fc.OtherMaxShare > 0 {
		v.FirstColumnRows = append(v.FirstColumnRows, labelled{"any value not listed", "at most " + model.Pct(fc.OtherMaxShare) + " of the rows"})
	}
	if !fc.TopExact && len(fc.Top) > 0 {
		v.TopNote = "Space-Saving estimates: rows are upper bounds, shares give the range" // as the text says
	}
	for _, tv := range fc.Top[:min(len(fc.Top), topValuesShown)] {
		v.Top = append(v.Top, topValueRow{tv.Value, model.Count(tv.Rows), shareRange(tv)})
	}

	v.KeyColumns = keyColumnRows(rep)
	return v
}

func keyColumnRows(rep *model.Report) []keyColumnRow {
	var rows []keyColumnRow
	for _, c := range rep.Mapping.KeyColumns {
		typ := c.Type
		if c.Desc {
			typ += " DESC"
		}
		rows = append(rows, keyColumnRow{
			Name: c.Name, Type: typ, Expr: c.Expr, From: strings.Join(c.Sources, ", "),
			MaxBytes: c.MaxBytes, JSONLike: model.Count(c.JSONLike), LongText: model.Count(c.LongText),
		})
	}
	return rows
}

type uniquenessView struct {
	Summary  string
	Advice   *adviceView // nil without a key suggestion
	Columns  []string    // the source columns the examples show
	Examples []collisionView
}

type adviceView struct {
	Message  string
	DifferIn string // "" when no pair was compared
}

// collisionView is one colliding target key: its rows, one per source row.
type collisionView struct {
	Key     string
	Note    string // how many rows, and the columns they differ in
	Origins []originRow
}

type originRow struct {
	Position string
	Values   []string // per Columns
}

func newUniquenessView(rep *model.Report) uniquenessView {
	u := rep.Uniqueness
	if why := unmeasured(rep); why != "" {
		return uniquenessView{Summary: "Not measured: " + why + "."}
	}
	exact := "Exact count over every row."
	if !u.Exact {
		exact = "Counted on the sample only."
	}
	v := uniquenessView{
		Summary: fmt.Sprintf("%s distinct target keys; %s keys are produced by more than one distinct source row, so %s rows would be silently overwritten by bulkload; %s rows are identical repeats (not a loss). %s",
			model.Count(u.Keys), model.Count(u.CollidingKeys), model.Count(u.CollisionRows), model.Count(u.DuplicateRows), exact),
		Columns: u.SourceColumns,
	}
	if sg := u.Suggestion; sg != nil {
		v.Advice = &adviceView{Message: sg.Message}
		if len(sg.DifferIn) > 0 {
			var parts []string
			for _, d := range sg.DifferIn {
				parts = append(parts, fmt.Sprintf("%s %s", d.Column, model.Count(d.Pairs)))
			}
			v.Advice.DifferIn = fmt.Sprintf("Pairs of colliding rows that differ, per column (of %s compared): %s.", model.Count(sg.Pairs), strings.Join(parts, ", "))
		}
	}
	for _, ex := range u.Examples {
		note := fmt.Sprintf("%d distinct source rows, %d rows", ex.Sources, ex.Rows)
		switch {
		case ex.SameKeySources && len(ex.DifferIn) > 0:
			note += "; they differ only in " + advise.ListText(ex.DifferIn) + ", which the key does not read"
		case ex.SameKeySources:
			note += "; they differ only in columns the key does not read"
		case len(ex.DifferIn) > 0:
			note += "; they differ in " + advise.ListText(ex.DifferIn)
		}
		cv := collisionView{Key: strings.Join(ex.Key, " | "), Note: note}
		for _, o := range ex.Origins {
			row := originRow{Position: o.Position, Values: make([]string, len(u.SourceColumns))}
			for i, c := range u.SourceColumns {
				row.Values[i] = o.Values[c]
			}
			cv.Origins = append(cv.Origins, row)
		}
		v.Examples = append(v.Examples, cv)
	}
	return v
}

type advisorView struct {
	Intro   string
	Queries []labelled // the declared queries (q1 ...) and where each was declared
	Designs []designView
	Next    *advise.NextSteps
}

type designView struct {
	ID         string
	IsMapping  bool
	Rank       int
	Name       string
	Grade      string // also the grade badge's class
	PrimaryKey string
	Error      string // the design could not be built: nothing else is shown
	Chart      miniChartView
	HotFactor  string
	MaxMean    string
	Monotonic  string
	Lost       string
	GetScan    string
	RangeScan  string
	Queries    []labelled // how it serves each declared query
	TradeOff   string
}

func newAdvisorView(rep *model.Report) *advisorView {
	if len(rep.Alternatives) == 0 {
		return nil
	}
	a0 := rep.Alternatives[0]
	v := &advisorView{Intro: fmt.Sprintf("The same analysis for designs derived from the mapping, on an order-preserving %s-row subsample, %s; rows lost are counted over every row, as the uniqueness check counts them. Ranked by rows lost, then by declared queries that would scan the whole table, write spread (grade), queries that read rows they filter out, scans, the standard reads, and hot factor. Reads: regions a full-key GET, a SCAN of one value, and a range SCAN touch (all = every region).", model.Count(a0.Rows+a0.Rejected), advisorRegions(rep))}
	for i, q := range rep.Queries {
		v.Queries = append(v.Queries, labelled{fmt.Sprintf("q%d  %s", i+1, q.Query), q.Origin})
	}
	for _, a := range rep.Alternatives {
		d := designView{ID: a.ID, IsMapping: a.IsMapping, Rank: a.Rank, Name: a.Name, Grade: a.Grade, PrimaryKey: a.PrimaryKey, Error: a.Error}
		if a.Error == "" {
			lost := model.Count(a.LostRows)
			if !a.OverwrittenExact {
				lost = "~" + lost
			}
			d.Chart = newMiniChart(a)
			d.HotFactor = fmt.Sprintf("%.1fx", advise.WriteHotFactor(&a)) // as the grade and the text judge writes
			d.MaxMean = fmt.Sprintf("%.2f", a.RowsMaxMean)
			d.Monotonic = model.Pct(a.Monotonic)
			d.Lost = lost
			d.GetScan = readText(a.Reads.Get) + " / " + readText(a.Reads.PrefixScan)
			d.RangeScan = readText(a.Reads.RangeScan)
			for i, q := range a.Queries {
				d.Queries = append(d.Queries, labelled{fmt.Sprintf("q%d", i+1), PlanText(q) + " · " + q.Note})
			}
			d.TradeOff = a.TradeOff
		}
		v.Designs = append(v.Designs, d)
	}
	v.Next = advise.NewNextSteps(rep)
	return v
}

type recommendationView struct {
	Bulkload regionAdviceView
	API      *regionAdviceView // nil without --nodes
}

type regionAdviceView struct {
	Heading string
	Basis   string
	SQL     string // the WITH (...) clause's contents; "" for one region
}

func newRecommendationView(r model.Recommendation) recommendationView {
	one := func(label string, a model.RegionAdvice) regionAdviceView {
		basis := a.Basis
		if a.Strategy != "" {
			basis += " · strategy " + a.Strategy
		}
		return regionAdviceView{Heading: fmt.Sprintf("%s: %d region%s", label, a.Regions, model.Plural(a.Regions)), Basis: basis, SQL: a.SQL}
	}
	v := recommendationView{Bulkload: one("Bulkload", r.Bulkload)}
	if r.API != nil {
		api := one("API writes", *r.API)
		v.API = &api
	}
	return v
}
