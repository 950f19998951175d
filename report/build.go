package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// build turns the accumulated figures into the report (findings come later, in evaluate), one
// section after the other: a later one reads what an earlier one set.
func (r *runner) build(a *acc, tl *timeline, coll collisionResult, plan pipeline.RegionPlan, planInfo PlanInfo,
	info SourceInfo, elapsed time.Duration, ord orderResult) *Report {
	rep := &Report{Schema: SchemaVersion, Generator: r.cfg.Generator, Source: info, Plan: planInfo, Alternatives: []Alternative{}, Indexes: []IndexOffer{}, HotRows: HotRows{Top: []HotRow{}}}
	if rep.Generator == "" {
		rep.Generator = "rekey"
	}
	r.buildKeyColumns(rep, a)
	buildTotals(rep, a, tl, elapsed)
	buildKeyShape(rep, a, r.d.keyLen)
	r.buildUniqueness(rep, coll)
	r.buildFirstColumn(rep, a, tl, ord)
	r.buildRegions(rep, a, plan)                // after the first column: its distinct values bound the regions reached
	buildWriteOrder(rep, tl, ord, plan.Count()) // after the key columns and the regions
	return rep
}

// buildKeyColumns describes the mapping and each key column's values.
func (r *runner) buildKeyColumns(rep *Report, a *acc) {
	prog := r.prog
	rep.Mapping = mappingInfo(prog, r.cfg.Mapping)
	srcOf := prog.KeySourceColumns()
	for i := range rep.Mapping.KeyColumns {
		kc := &rep.Mapping.KeyColumns[i]
		kc.Sources = srcOf[i]
		if kc.Sources == nil {
			kc.Sources = []string{}
		}
		c := a.cols[i]
		if c.text {
			kc.MaxBytes = c.maxLen
			if c.n > 0 {
				kc.MeanBytes = float64(c.sumLen) / float64(c.n)
			}
			kc.JSONLike, kc.LongText = c.jsonLike, c.longText
			kc.Numeric = c.numeric && c.n > 0
			if c.n > 0 {
				kc.MinBytes = c.minLen
			}
		} else {
			w := prog.Target().Columns[i].Type.FixedSize()
			kc.MaxBytes, kc.MeanBytes, kc.MinBytes = w, float64(w), w
		}
		if i == 0 {
			kc.Distinct, kc.DistinctExact = a.distinct()
			if c.text {
				kc.CommonPrefix, kc.PrefixBytes = displayValue(pipeline.Text(string(a.lcp)), 80), len(a.lcp)
			}
		} else {
			kc.Distinct = int64(c.hll.Estimate())
			if c.text {
				kc.CommonPrefix, kc.PrefixBytes = displayValue(pipeline.Text(string(c.lcp)), 80), len(c.lcp)
			}
		}
	}
}

// buildTotals counts the rows and bytes.
func buildTotals(rep *Report, a *acc, tl *timeline, elapsed time.Duration) {
	info := rep.Source
	t := &rep.Totals
	t.RowsRead, t.RowsAnalysed = tl.read, tl.analysed
	t.RowsOK, t.RowsRejected = a.rows, a.rejected
	t.RejectCodes = a.codes
	t.RejectExamples = a.rejEx
	if t.RejectExamples == nil {
		t.RejectExamples = []RejectExample{}
	}
	t.TargetBytes = a.rowBytes
	t.EstimatedTargetBytes = int64(float64(a.rowBytes) * info.Scale)
	t.KeyBytes = a.keyHist.sum
	t.Seconds = elapsed.Seconds()
	if t.Seconds > 0 {
		t.RowsPerSec = float64(t.RowsRead) / t.Seconds
	}
}

// buildKeyShape sums up the key lengths.
func buildKeyShape(rep *Report, a *acc, keyLen int) {
	h := a.keyHist
	rep.Key = KeyShape{Columns: keyLen, MinBytes: h.min(), P50Bytes: h.quantile(0.5), P99Bytes: h.quantile(0.99),
		MaxBytes: h.maxSeen, OverLimit: a.codes[pipeline.CodeKeyTooLong] + h.over}
	if h.n > 0 {
		rep.Key.MeanBytes = float64(h.sum) / float64(h.n)
		rep.Key.FixedLength = rep.Key.MinBytes == rep.Key.MaxBytes
	}
}

// buildUniqueness reports the collision check, with its examples.
func (r *runner) buildUniqueness(rep *Report, coll collisionResult) {
	prog, d := r.prog, r.d
	u := &rep.Uniqueness
	u.Exact = !rep.Source.Sampled
	u.Keys, u.CollidingKeys, u.CollisionRows, u.DuplicateRows = coll.Keys, coll.Colliding, coll.Rows, coll.Duplicates
	u.Examples = []CollisionExample{}
	u.SourceColumns = append([]string{}, d.srcName...)
	keyCols := prog.Target().Columns[:d.keyLen]
	for _, ex := range coll.Examples {
		ce := CollisionExample{Rows: ex.Rows, Sources: ex.Sources, DifferIn: diffColumns(prog.Source(), ex.Diff)}
		for i, o := range ex.Origins {
			if i == 0 {
				for _, v := range d.exampleKey(o) {
					ce.Key = append(ce.Key, displayValue(v, 80))
				}
			}
			row := ExampleRow{Position: o.stream + ":" + itoa(o.seq), Values: map[string]string{}}
			for k, v := range o.src {
				if k < len(d.srcName) {
					row.Values[d.srcName[k]] = displayValue(v, 80)
				}
			}
			ce.Origins = append(ce.Origins, row)
		}
		if ce.Key == nil {
			ce.Key = make([]string, len(keyCols))
		}
		// the key's source columns agree: in every distinct row by their hashes (Diff), and in
		// the origins shown (columns beyond the hashed ones)
		ce.SameKeySources = len(ex.Origins) > 1
		for _, c := range d.srcCols {
			if c < ex.Hashed && ex.Diff&(1<<uint(c)) != 0 {
				ce.SameKeySources = false
			}
		}
		for _, o := range ex.Origins[1:] {
			if len(o.src) != len(ex.Origins[0].src) {
				ce.SameKeySources = false
				continue
			}
			for k := range o.src {
				if o.src[k] != ex.Origins[0].src[k] {
					ce.SameKeySources = false
				}
			}
		}
		u.Examples = append(u.Examples, ce)
	}
}

// buildFirstColumn describes the first key column: distinct and top values, prefix, order.
func (r *runner) buildFirstColumn(rep *Report, a *acc, tl *timeline, ord orderResult) {
	fc := &rep.FirstColumn
	first := r.prog.Target().Columns[0]
	fc.Name, fc.Type = first.Name, first.SQLType()
	fc.Distinct, fc.DistinctExact = a.distinct()
	fc.TopExact = !a.ss.evicted
	// Listed: every value while the counters are exact; after evictions only values with a
	// guaranteed share of at least 0.1% (the rest are noise within the error bound).
	for _, tv := range a.ss.top(10) {
		v := TopValue{Value: r.firstText(tv.Value), Rows: tv.Count, RowsMin: tv.Count - tv.Err}
		if a.rows > 0 {
			v.Share = float64(v.RowsMin) / float64(a.rows)
			v.ShareMax = float64(v.Rows) / float64(a.rows)
		}
		if a.ss.evicted && v.RowsMin*1000 < a.rows {
			continue
		}
		fc.Top = append(fc.Top, v)
	}
	if a.ss.evicted && a.rows > 0 {
		fc.OtherMaxShare = float64(a.ss.min()) / float64(a.rows)
	}
	if fc.Top == nil {
		fc.Top = []TopValue{}
	}
	fc.CommonPrefix = displayValue(pipeline.Text(string(a.lcp)), 80)
	fc.PrefixBytes = len(a.lcp)
	if a.cols[0].text {
		fc.MinBytes = minTextLen(a)
	} else {
		fc.MinBytes = first.Type.FixedSize()
	}
	up, down, pairs := a.up+tl.up, a.down+tl.down, a.pairs+tl.pairs
	if ord.w != nil { // in write order, over the subsample
		up, down, pairs = ord.up, ord.down, ord.pairs
	}
	if pairs > 0 {
		fc.MonotonicUp = float64(up) / float64(pairs)
		fc.MonotonicDown = float64(down) / float64(pairs)
	}
}

// buildRegions lists the rows and bytes per region and how evenly they spread.
func (r *runner) buildRegions(rep *Report, a *acc, plan pipeline.RegionPlan) {
	fc := &rep.FirstColumn
	var total int64
	for _, n := range a.regRows {
		total += n
	}
	for i := 0; i < plan.Count(); i++ {
		start, hasStart, end, hasEnd := plan.Bounds(i)
		reg := Region{Index: i, Rows: a.regRows[i], Bytes: a.regBytes[i]}
		if hasStart {
			reg.Start = r.cfg.FormatSplit(plan.Type, start)
		}
		if hasEnd {
			reg.End = r.cfg.FormatSplit(plan.Type, end)
		}
		if total > 0 {
			reg.Share = float64(reg.Rows) / float64(total)
		}
		rep.Regions = append(rep.Regions, reg)
	}
	dist := &rep.Distribution
	dist.Regions = plan.Count()
	dist.RowsMaxMean, dist.CV, dist.EmptyRegions, dist.HottestRegions = regionStats(a.regRows)
	dist.BytesMaxMean, _, _, _ = regionStats(a.regBytes)
	if fc.Distinct < int64(plan.Count()) && a.rows > 0 {
		dist.Unreachable = plan.Count() - int(fc.Distinct)
	}
	if dist.HottestRegions == nil {
		dist.HottestRegions = []int{}
	}
}

// buildWriteOrder reports the write order: how the key columns follow it, the hotspot windows
// and the heatmap over time.
func buildWriteOrder(rep *Report, tl *timeline, ord orderResult, regions int) {
	rep.WriteOrder = ord.info
	for i, ko := range ord.info.KeyColumns {
		if i < len(rep.Mapping.KeyColumns) {
			kc := &rep.Mapping.KeyColumns[i]
			kc.Incremental, kc.IncrementalEvidence, kc.PrefixDistinct = ko.Incremental, ko.Why, ko.PrefixDistinct
		}
	}
	win := tl.w
	if ord.w != nil {
		win = ord.w
	}
	ws := win.result()
	hs := summarize(ws, regions, win.per)
	rep.Hotspot = Hotspot{Order: ord.info.Evidence, Windows: hs.Windows, RowsPerWindow: hs.RowsPerWindow, EvenShare: hs.EvenShare,
		MeanTopShare: hs.MeanTopShare, MaxTopShare: hs.MaxTopShare, HotFactor: hs.HotFactor, TopRegions: hs.DistinctTopReg}
	rep.HotspotWindows = make([]Window, len(ws))
	for i, w := range ws {
		rep.HotspotWindows[i] = Window{Index: i, FirstRow: w.First, Rows: w.Rows, TopRegion: w.TopRegion, TopShare: w.TopShare, Counts: w.Counts}
	}
	if ord.heat != nil && (ord.info.Axis == "time" || ord.info.Axis == "value") {
		label := ord.info.Column
		if label == "" {
			label = ord.info.Evidence
		}
		rep.TimeHeatmap = ord.heat.result(label, rep.Regions)
		rep.TimeHeatmap.Order, rep.TimeHeatmap.Axis = ord.info.Evidence, ord.info.Axis
	}
}

func mappingInfo(prog *transform.Program, m *transform.Mapping) MappingInfo {
	mi := MappingInfo{Table: prog.Table(), Fingerprint: prog.Fingerprint()}
	if m != nil {
		mi.File = m.File
	}
	var sb strings.Builder
	for _, ke := range prog.KeyElements() {
		sb.WriteString("[")
		if ke.Expr != ke.Name && ke.Expr != "`"+ke.Name+"`" {
			sb.WriteString(ke.Expr + " AS " + ke.Name)
		} else {
			sb.WriteString(ke.Name)
		}
		if ke.Desc {
			sb.WriteString(" DESC")
		}
		sb.WriteString("]")
		mi.KeyColumns = append(mi.KeyColumns, KeyColumn{Name: ke.Name, Expr: ke.Expr, Type: ke.Type.String(), Desc: ke.Desc})
	}
	mi.PrimaryKey = sb.String()
	return mi
}

func minTextLen(a *acc) int {
	if c := a.cols[0]; c.n > 0 {
		return c.minLen
	}
	return 0
}

// displayValue renders a value for humans: canonical text, non-printable bytes escaped, capped.
func displayValue(v pipeline.Value, maxLen int) string {
	s := v.String()
	if v.Kind == pipeline.KindNull {
		return "null"
	}
	var sb strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxLen {
			sb.WriteString("…")
			break
		}
		switch {
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == 0xfffd:
			sb.WriteString("\\x")
			sb.WriteString(hex2(byte(r)))
		default:
			sb.WriteRune(r)
		}
		n++
	}
	return sb.String()
}

func hex2(b byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[b>>4], h[b&15]})
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [24]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// sortedCodes lists reject codes by decreasing count.
func sortedCodes(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// recommend fills rep.Recommendation: bulkload regions = estimated data / region size (at least
// 1), API writes = nodes x 4, each with split keys placed from the run's whole-input subsample.
func (r *runner) recommend(rep *Report, recs []pipeline.Record) {
	prog := r.prog
	size := prog.RegionSize()
	rows := prog.SpreadRows(recs, altPlanRows)
	est := rep.Totals.EstimatedTargetBytes
	rec := &rep.Recommendation
	rec.RegionSize = size
	n := bulkRegions(est, size)
	basis := fmt.Sprintf("estimated data %s / region size %s", transform.FormatSize(est), transform.FormatSize(size))
	if !rep.Source.ScaleKnown {
		basis += " (the input size is unknown: the estimate covers the rows read)"
	}
	rec.Bulkload = regionAdvice(prog, n, rows, basis, r.cfg.FormatSplit)
	if r.cfg.Nodes > 0 {
		a := regionAdvice(prog, 4*r.cfg.Nodes, rows, fmt.Sprintf("%d nodes x 4", r.cfg.Nodes), r.cfg.FormatSplit)
		rec.API = &a
	}
}

func regionAdvice(prog *transform.Program, n int, rows [][]pipeline.Value, basis string, format func(pipeline.Type, pipeline.Value) string) RegionAdvice {
	a := RegionAdvice{Regions: n, Basis: basis, SplitKeys: []string{}}
	if n <= 1 {
		a.Strategy = "single"
		return a
	}
	plan, err := prog.PlanRegions(transform.RegionRequest{Count: n, Sample: rows})
	if err != nil {
		a.Basis += "; no split keys: " + firstLine(err.Error())
		return a
	}
	a.Regions, a.Strategy = plan.Count(), plan.Strategy
	for _, s := range plan.Splits {
		a.SplitKeys = append(a.SplitKeys, format(plan.Type, s))
	}
	a.SQL = splitKeysSQL(a.SplitKeys)
	if a.Regions < n {
		a.Basis += fmt.Sprintf("; %d regions placed: the first column has too few distinct values for more", a.Regions)
	}
	return a
}

// splitKeysSQL is the WITH option of Lindorm's CREATE TABLE: SPLITKEYS='a,b,c' (quotes doubled).
func splitKeysSQL(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return "SPLITKEYS='" + strings.ReplaceAll(strings.Join(keys, ","), "'", "''") + "'"
}

// firstText renders a first-column value like the region bounds (timestamps as dates).
func (r *runner) firstText(v pipeline.Value) string {
	return displayValue(pipeline.Text(r.cfg.FormatSplit(r.d.first.Type, v)), 80)
}
