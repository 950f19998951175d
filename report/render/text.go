// Package render writes a report as text for a terminal, as JSON and as one HTML page
// (html/template, templates/).
package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// WriteText prints the report for a terminal: the verdict and the findings first (worst first),
// then the sections with their figures.
func WriteText(w io.Writer, rep *model.Report) error {
	p := &printer{w: w}
	p.header(rep)
	p.findings(rep)
	p.totals(rep)
	p.key(rep)
	if why := unmeasured(rep); why != "" {
		// the sections below measure the accepted rows' keys: with none, their zeros would read
		// as an even spread
		p.section("UNIQUENESS", "not measured: "+why)
		p.section("FIRST KEY COLUMN", "not measured: "+why)
		p.section("REGIONS", fmt.Sprintf("not measured: %s; the plan: %d region%s, %s from %s", why, rep.Plan.Regions, model.Plural(rep.Plan.Regions), rep.Plan.Strategy, rep.Plan.Origin))
		if rep.Plan.Note != "" {
			p.f("  note: %s\n", rep.Plan.Note)
		}
		p.section("WRITE HOTSPOTS OVER TIME", "not measured: "+why)
	} else {
		p.uniqueness(rep)
		p.firstColumn(rep)
		p.regions(rep)
		p.hotspots(rep)
	}
	p.alternatives(rep)
	p.recommendation(rep)
	return p.err
}

// unmeasured says why the report measured no key ("" when it measured some).
func unmeasured(rep *model.Report) string {
	switch {
	case rep.Totals.RowsOK > 0:
		return ""
	case rep.Totals.RowsRejected > 0:
		return "no row passed the mapping (see the rejects)"
	default:
		return "the source gave no rows"
	}
}

type printer struct {
	w   io.Writer
	err error
}

// f prints a line. Its string arguments may hold data (keys, values, file names): their
// control characters are shown escaped, never sent to the terminal.
func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = pipeline.EscapeControls(s)
			}
		}
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) section(title string, detail string) {
	if detail != "" {
		p.f("\n%s  %s\n", title, detail)
	} else {
		p.f("\n%s\n", title)
	}
}

// cols prints rows as aligned columns; right-aligns columns whose index is in right.
func (p *printer) cols(rows [][]string, right map[int]bool) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			r[i] = pipeline.EscapeControls(c) // aligned as printed
			c = r[i]
			width[i] = max(width[i], displayWidth(c))
		}
	}
	for _, r := range rows {
		var sb strings.Builder
		sb.WriteString("  ")
		for i, c := range r {
			pad := width[i] - displayWidth(c)
			if i == len(r)-1 && !right[i] {
				sb.WriteString(c)
				break
			}
			if right[i] {
				sb.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				sb.WriteString(c + strings.Repeat(" ", pad))
			}
			sb.WriteString("  ")
		}
		p.f("%s\n", strings.TrimRight(sb.String(), " "))
	}
}

// displayWidth is the columns a terminal gives s: two for a wide or fullwidth (East Asian)
// character, none for a combining mark, one for any other.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r < 0x300:
			n++
		case unicode.Is(unicode.Mn, r):
		case width.LookupRune(r).Kind() == width.EastAsianWide || width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

func (p *printer) header(rep *model.Report) {
	src := rep.Source.URI
	if rep.Source.Sampled {
		src += " (" + rep.Source.Sample + ")"
	}
	file := rep.Mapping.File
	if file == "" {
		file = "mapping"
	}
	p.f("rekey report  %s -> table %s\n", file, rep.Mapping.Table)
	p.f("source        %s\n", src)
	p.f("primary key   %s\n", rep.Mapping.PrimaryKey)
	if plan := rep.Mapping.TTLPlan; plan != "" {
		p.f("%s\n", plan)
	}
	if wo := rep.WriteOrder; wo != nil {
		p.f("write order   %s\n", wo.Description)
		for _, n := range wo.Notes {
			p.f("              %s\n", n)
		}
	}
	v := rep.Verdict
	verdict := "OK"
	switch {
	case v.Errors > 0:
		verdict = "FAIL"
	case v.Warnings > 0:
		verdict = "WARN"
	}
	p.f("\nVERDICT  %s: %s\n", verdict, VerdictLine(rep))
}

// sevLabel is a finding's label. An info finding is a note, never "ok": many say what was not
// measured, or describe a risk the warnings weigh, and the verdict counts them as notes.
func sevLabel(s string) string {
	switch s {
	case model.SevError:
		return "ERROR"
	case model.SevWarning:
		return "WARN"
	}
	return "note"
}

func (p *printer) findings(rep *model.Report) {
	p.section("FINDINGS", "(worst first)")
	var rows [][]string
	for _, f := range rep.Findings {
		rows = append(rows, []string{sevLabel(f.Severity), f.Rule, f.Message})
	}
	p.cols(rows, nil)
}

func (p *printer) totals(rep *model.Report) {
	t := rep.Totals
	p.section("TOTALS", "")
	rows := [][]string{
		{"rows read", model.Count(t.RowsRead)},
	}
	if t.RowsSkipped > 0 {
		rows = append(rows, []string{"rows skipped", model.Count(t.RowsSkipped) + " (read and left out by the source: older than since=, every cell expired, or events of other tables than the mapping's source.table; migrate leaves them out too: not analysed, not in the rows read)"})
	}
	if t.RowsAnalysed != t.RowsRead {
		rows = append(rows, []string{"rows analysed", model.Count(t.RowsAnalysed)})
	}
	rows = append(rows, []string{"rows accepted", model.Count(t.RowsOK)}, []string{"rows rejected", model.Count(t.RowsRejected)})
	for _, c := range model.SortedCodes(t.RejectCodes) {
		rows = append(rows, []string{"  " + c, model.Count(t.RejectCodes[c])})
	}
	tb := transform.FormatSize(t.TargetBytes)
	if t.EstimatedTargetBytes != t.TargetBytes {
		tb += fmt.Sprintf(" (whole input: about %s)", transform.FormatSize(t.EstimatedTargetBytes))
	}
	rows = append(rows, []string{"target bytes", tb + " uncompressed"},
		[]string{"time", fmt.Sprintf("%.2f s, %s rows/s", t.Seconds, model.Count(int64(t.RowsPerSec)))})
	p.cols(rows, nil)
	if len(t.RejectExamples) > 0 {
		p.f("  examples:\n")
		for _, e := range t.RejectExamples {
			field := ""
			if e.Field != "" {
				field = " " + e.Field
			}
			p.f("    %s  %s%s: %s\n", e.Position, e.Code, field, e.Message)
		}
	}
}

func (p *printer) key(rep *model.Report) {
	k := rep.Key
	shape := "variable length"
	if k.FixedLength {
		shape = "fixed length"
	}
	detail := fmt.Sprintf("%d column%s, %s, bytes min %d / mean %.1f / p50 %d / p99 %d / max %d", k.Columns, model.Plural(k.Columns), shape,
		k.MinBytes, k.MeanBytes, k.P50Bytes, k.P99Bytes, k.MaxBytes)
	if why := unmeasured(rep); why != "" {
		detail = fmt.Sprintf("%d column%s, lengths not measured: %s", k.Columns, model.Plural(k.Columns), why)
	}
	p.section("KEY SHAPE", detail)
	rows := [][]string{{"column", "type", "max bytes", "json-like", "long text", "expression"}}
	for _, c := range rep.Mapping.KeyColumns {
		t := c.Type
		if c.Desc {
			t += " DESC"
		}
		rows = append(rows, []string{c.Name, t, fmt.Sprint(c.MaxBytes), model.Count(c.JSONLike), model.Count(c.LongText), c.Expr})
	}
	p.cols(rows, map[int]bool{2: true, 3: true, 4: true})
}

func (p *printer) uniqueness(rep *model.Report) {
	u := rep.Uniqueness
	exact := "exact"
	if !u.Exact {
		exact = "on the sample"
	}
	p.section("UNIQUENESS", fmt.Sprintf("%s distinct keys, %s colliding keys, %s rows overwritten, %s identical duplicates (%s)",
		model.Count(u.Keys), model.Count(u.CollidingKeys), model.Count(u.CollisionRows), model.Count(u.DuplicateRows), exact))
	if sg := u.Suggestion; sg != nil {
		p.f("  advice: %s\n", sg.Message)
		if len(sg.DifferIn) > 0 {
			var parts []string
			for _, d := range sg.DifferIn {
				parts = append(parts, fmt.Sprintf("%s %s", d.Column, model.Count(d.Pairs)))
			}
			p.f("  pairs of colliding rows that differ, per column (of %s compared): %s\n", model.Count(sg.Pairs), strings.Join(parts, ", "))
		}
	}
	for _, ex := range u.Examples {
		note := ""
		switch {
		case ex.SameKeySources && len(ex.DifferIn) > 0:
			note = "; they differ only in " + advise.ListText(ex.DifferIn) + ", which the key does not read"
		case ex.SameKeySources:
			note = "; they differ only in columns the key does not read"
		case len(ex.DifferIn) > 0:
			note = "; they differ in " + advise.ListText(ex.DifferIn)
		}
		p.f("  key %s  <- %d distinct source rows (%d rows%s)\n", strings.Join(ex.Key, " | "), ex.Sources, ex.Rows, note)
		for _, o := range ex.Origins {
			var kv []string
			for _, c := range u.SourceColumns {
				if v, ok := o.Values[c]; ok {
					kv = append(kv, c+"="+v)
				}
			}
			p.f("      %-24s %s\n", o.Position, strings.Join(kv, "  "))
		}
	}
}

func (p *printer) firstColumn(rep *model.Report) {
	fc := rep.FirstColumn
	p.section("FIRST KEY COLUMN", fc.Name+" "+fc.Type+" (Lindorm splits regions on it)")
	d := model.Count(fc.Distinct)
	if !fc.DistinctExact {
		d = "about " + d + " (HyperLogLog)"
	}
	rows := [][]string{
		{"distinct values", d},
		{"monotonic", fmt.Sprintf("%s of rows >= the previous row, %s <=", model.Pct(fc.MonotonicUp), model.Pct(fc.MonotonicDown))},
	}
	if model.IsTextType(fc.Type) {
		rows = append(rows, []string{"common prefix", fmt.Sprintf("\"%s\" (%d bytes)", fc.CommonPrefix, fc.PrefixBytes)})
	}
	p.cols(rows, nil)
	if len(fc.Top) > 0 {
		label := "top values"
		if !fc.TopExact {
			label += " (Space-Saving estimates: rows are upper bounds, shares give the range)"
		}
		p.f("  %s\n", label)
		tr := [][]string{}
		for i, t := range fc.Top {
			if i >= 5 {
				break
			}
			tr = append(tr, []string{"  " + "\"" + t.Value + "\"", model.Count(t.Rows), shareRange(t)})
		}
		p.cols(tr, map[int]bool{1: true, 2: true})
	}
	if fc.OtherMaxShare > 0 {
		p.f("  every other value: at most %s of the rows\n", model.Pct(fc.OtherMaxShare))
	}
}

func bar(x float64, width int) string {
	if x <= 0 {
		return ""
	}
	eighths := int(x*float64(width*8) + 0.5)
	if eighths == 0 {
		eighths = 1
	}
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}

func (p *printer) regions(rep *model.Report) {
	d := rep.Distribution
	detail := fmt.Sprintf("%d regions, %s from %s; rows max/mean %.2f, CV %.2f, %d empty", rep.Plan.Regions, rep.Plan.Strategy, rep.Plan.Origin,
		d.RowsMaxMean, d.CV, d.EmptyRegions) + sampledRows(rep)
	p.section("REGIONS", detail)
	if rep.Plan.Note != "" {
		p.f("  note: %s\n", rep.Plan.Note)
	}
	var top int64
	for _, r := range rep.Regions {
		top = max(top, r.Rows)
	}
	show := make([]int, 0, len(rep.Regions))
	if len(rep.Regions) <= 32 {
		for i := range rep.Regions {
			show = append(show, i)
		}
	} else {
		idx := make([]int, len(rep.Regions))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return rep.Regions[idx[a]].Rows > rep.Regions[idx[b]].Rows })
		show = append(show, idx[:16]...)
		sort.Ints(show)
	}
	rows := [][]string{{"region", "start", "end", "rows", "share", "bytes", ""}}
	for _, i := range show {
		r := rep.Regions[i]
		start, end := r.Start, r.End
		if start == "" {
			start = "-inf"
		}
		if end == "" {
			end = "+inf"
		}
		frac := 0.0
		if top > 0 {
			frac = float64(r.Rows) / float64(top)
		}
		rows = append(rows, []string{fmt.Sprint(r.Index), clip(start, 24), clip(end, 24), model.Count(r.Rows), model.Pct(r.Share), transform.FormatSize(r.Bytes), bar(frac, 24)})
	}
	p.cols(rows, map[int]bool{0: true, 3: true, 4: true, 5: true})
	if len(show) < len(rep.Regions) {
		p.f("  (the 16 busiest of %d regions; all are in --json and --html)\n", len(rep.Regions))
	}
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

const sparks = "▁▂▃▄▅▆▇█"

// sparkline draws values in [0,1], at most width characters (groups take their maximum).
func sparkline(vals []float64, width int) string {
	if len(vals) == 0 {
		return ""
	}
	group := (len(vals) + width - 1) / width
	var sb strings.Builder
	r := []rune(sparks)
	for i := 0; i < len(vals); i += group {
		m := 0.0
		for _, v := range vals[i:min(i+group, len(vals))] {
			m = max(m, v)
		}
		k := int(m*float64(len(r)-1) + 0.5)
		sb.WriteRune(r[min(max(k, 0), len(r)-1)])
	}
	return sb.String()
}

func (p *printer) hotspots(rep *model.Report) {
	h := rep.Hotspot
	judged := hotspotNotJudged(rep)
	p.section("WRITE HOTSPOTS OVER TIME", fmt.Sprintf("%d windows of %s rows%s in %s; busiest region's share per window: mean %s, max %s (even: %s) -> %.1fx%s",
		h.Windows, model.Count(h.RowsPerWindow), rep.WindowRows(), orderText(rep), model.Pct(h.MeanTopShare), model.Pct(h.MaxTopShare), model.Pct(h.EvenShare), h.HotFactor, judged))
	if len(rep.HotspotWindows) == 0 {
		return
	}
	var shares []float64
	for _, w := range rep.HotspotWindows {
		shares = append(shares, w.TopShare)
	}
	p.f("  busiest share  0%% %s 100%%   (one mark per window, first to last)\n", sparkline(shares, 72))
	// which regions were the busiest, in order of appearance
	var seq []string
	last := -1
	for _, w := range rep.HotspotWindows {
		if w.TopRegion != last {
			seq = append(seq, fmt.Sprint(w.TopRegion))
			last = w.TopRegion
		}
	}
	if len(seq) > 24 {
		seq = append(seq[:24], "…")
	}
	p.f("  busiest region %s\n", strings.Join(seq, " → "))
}

// hotspotNotJudged says, after the hot factor, that too few windows left it unjudged ("" when
// write_hotspot judged it).
func hotspotNotJudged(rep *model.Report) string {
	if rep.Hotspot.Windows < advise.MinHotspotWindows {
		return fmt.Sprintf(", not judged: fewer than %d windows (write_hotspot)", advise.MinHotspotWindows)
	}
	return ""
}

func readText(n int) string {
	switch {
	case n < 0:
		return "all"
	case n == 0:
		return "?"
	}
	return fmt.Sprint(n)
}

func (p *printer) alternatives(rep *model.Report) {
	if len(rep.Alternatives) == 0 {
		return
	}
	a0 := rep.Alternatives[0]
	by := "(regions read by GET / one-value SCAN / range SCAN)"
	if len(rep.Queries) > 0 {
		by = "ranked by the declared queries (scans per query; all = every region, + = reads rows it filters out, ^ = a newest-first query read oldest first)"
	}
	p.section("ADVISOR", fmt.Sprintf("key designs derived from the mapping, on a %s-row subsample, %s %s",
		model.Count(a0.Rows+a0.Rejected), advisorRegions(rep), by))
	for i, q := range rep.Queries {
		p.f("  q%d  %s  (from %s)\n", i+1, q.Query, q.Origin)
	}
	if rep.Workload == transform.WorkloadWriteHeavy {
		p.f("  workload write_heavy: the write spread ranks before the reads' cost, and a salt by its figures alone\n")
	}
	rows, right := alternativeRows(rep)
	p.cols(rows, right)
	p.f("  * the mapping's own design. hot: busiest region's share of a window / even share, over regions bounded by the full key (as Lindorm's 8 GiB splits leave them). lost: rows overwritten (counted exactly over every row analysed, as the uniqueness check does; ~ from the subsample) + rows rejected.\n")
	for _, a := range rep.Alternatives {
		if len(rep.Queries) > 0 && len(a.Queries) > 0 {
			var parts []string
			for i, q := range a.Queries {
				parts = append(parts, fmt.Sprintf("q%d %s", i+1, q.Note))
			}
			p.f("  %d. %s: %s.\n", a.Rank, a.Name, strings.Join(parts, "; "))
			continue
		}
		if a.TradeOff != "" {
			p.f("  %d. %s: %s\n", a.Rank, a.Name, a.TradeOff)
		}
	}
	if len(rep.Queries) == 0 {
		p.f("  declare the queries the table serves (queries: in the mapping, or --query 'device_id=, ts range') to rank the designs by them.\n")
	}
	if next := advise.NewNextSteps(rep); next != nil {
		p.f("  next: %s\n", next.Summary)
		for _, c := range next.Changes {
			p.f("    - %s\n", c)
		}
	}
}

// advisorRegions says over how many regions the advisor judged each design: the plan's asked
// count, and the range placed when a design's first column had too few values for them all.
func advisorRegions(rep *model.Report) string {
	n := rep.Plan.Asked
	if n == 0 {
		n = rep.Alternatives[0].Regions
	}
	lo, hi := n, 0
	for _, a := range rep.Alternatives {
		if a.Error == "" && a.Regions > 0 {
			lo, hi = min(lo, a.Regions), max(hi, a.Regions)
		}
	}
	if lo < n {
		return fmt.Sprintf("%d regions each asked (%d to %d placed: a design's first column can hold too few values for more split keys)", n, lo, hi)
	}
	return fmt.Sprintf("%d regions each", n)
}

// alternativeRows is the advisor's table: a heading, then a row per design (its figures, the
// scans of each declared query or of the three kinds of read, its primary key); right names the
// columns aligned right.
func alternativeRows(rep *model.Report) (rows [][]string, right map[int]bool) {
	head := []string{"#", "design", "grade", "hot", "max/mean", "monotonic", "lost"}
	right = map[int]bool{0: true, 3: true, 4: true, 5: true, 6: true}
	for i := range rep.Queries {
		right[len(head)] = true
		head = append(head, fmt.Sprintf("q%d", i+1))
	}
	if len(rep.Queries) == 0 {
		for _, h := range []string{"GET", "scan", "range"} {
			right[len(head)] = true
			head = append(head, h)
		}
	}
	head = append(head, "primary key")
	rows = [][]string{head}
	for _, a := range rep.Alternatives {
		name := a.Name
		if a.IsMapping {
			name = "* " + name
		}
		if a.Error != "" {
			row := []string{fmt.Sprint(a.Rank), name}
			for len(row) < len(head)-1 {
				row = append(row, "-")
			}
			rows = append(rows, append(row, "cannot build: "+a.Error))
			continue
		}
		lost := model.Count(a.LostRows)
		if !a.OverwrittenExact {
			lost = "~" + lost
		}
		row := []string{fmt.Sprint(a.Rank), name, a.Grade, fmt.Sprintf("%.1fx", advise.WriteHotFactor(&a)), fmt.Sprintf("%.2f", a.RowsMaxMean), model.Pct(a.Monotonic), lost}
		if len(rep.Queries) > 0 {
			for _, q := range a.Queries {
				row = append(row, PlanText(q))
			}
		} else {
			row = append(row, readText(a.Reads.Get), readText(a.Reads.PrefixScan), readText(a.Reads.RangeScan))
		}
		rows = append(rows, append(row, a.PrimaryKey))
	}
	return rows, right
}

// PlanText is a query plan in one cell: scans, "all" for a full scan, + when it filters rows,
// ^ when a newest-first query gets its rows oldest first.
func PlanText(q model.QueryPlan) string {
	s := readText(int(min(q.Scans, 1<<30)))
	if q.Access == "full_scan" {
		s = "all"
	}
	if q.Access == "scan" && len(q.Filtered) > 0 {
		s += "+"
	}
	if q.Unordered {
		s += "^"
	}
	return s
}

func (p *printer) recommendation(rep *model.Report) {
	r := rep.Recommendation
	p.section("RECOMMENDED REGIONS", "")
	one := func(label string, a model.RegionAdvice) {
		p.f("  %-9s %d region%s (%s)\n", label, a.Regions, model.Plural(a.Regions), a.Basis)
		if a.SQL != "" {
			sql := a.SQL
			if len(sql) > 400 {
				cut := 400
				for cut > 0 && !utf8.RuneStart(sql[cut]) {
					cut-- // whole characters
				}
				sql = sql[:cut] + "…' (full list in --json)"
			}
			p.f("            WITH (%s)\n", sql)
		}
	}
	one("bulkload", r.Bulkload)
	if r.API != nil {
		one("API", *r.API)
	} else {
		p.f("  %-9s give --nodes N for API writes (nodes x 4 regions)\n", "API")
	}
}

func shareRange(t model.TopValue) string {
	if t.Rows == t.RowsMin {
		return model.Pct(t.Share)
	}
	return model.Pct(t.Share) + " - " + model.Pct(t.ShareMax)
}

// VerdictLine sums the verdict up in one line: "1 error, 2 warnings, 8 notes -> exit 2".
func VerdictLine(rep *model.Report) string {
	v := rep.Verdict
	line := fmt.Sprintf("%d error%s, %d warning%s, %d note%s -> exit %d", v.Errors, model.Plural(v.Errors),
		v.Warnings, model.Plural(v.Warnings), v.Infos, model.Plural(v.Infos), v.ExitCode)
	if nj := notJudgedRules(rep); nj != "" {
		// a rule with too little data passed nothing: say so wherever the verdict is printed
		line += " (not judged: " + nj + ")"
	}
	if rep.Source.Sampled {
		// a verdict on part of the input says so wherever it is printed
		line += " (on a sample: " + rep.Source.Sample + ")"
	}
	return line
}

// notJudgedRules lists the rules that had too little data to judge, comma-separated ("" for
// none).
func notJudgedRules(rep *model.Report) string {
	var rules []string
	for _, f := range rep.Findings {
		if f.NotJudged {
			rules = append(rules, f.Rule)
		}
	}
	return strings.Join(rules, ", ")
}

// sampledRows says, on a sample, whose rows the regions count: the sample's accepted rows,
// which do not add up to the rows read ("" when every row was analysed).
func sampledRows(rep *model.Report) string {
	if !rep.Source.Sampled {
		return ""
	}
	return fmt.Sprintf("; rows of the sample: its %s accepted rows of %s read", model.Count(rep.Totals.RowsOK), model.Count(rep.Totals.RowsRead))
}

// orderText names the order windows follow, for renderings: "write order (evidence)".
func orderText(rep *model.Report) string {
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence == model.OrderArrival {
		return "arrival order"
	}
	return "write order (" + wo.Description + ")"
}
