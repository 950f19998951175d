package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// build turns the accumulated figures into the report (findings come later, in evaluate), one
// section after the other: a later one reads what an earlier one set.
func (r *runner) build(a *collide.Acc, tl *timeline, coll collide.CollisionResult, plan pipeline.RegionPlan, planInfo model.PlanInfo,
	info model.SourceInfo, elapsed time.Duration, ord orderResult) *model.Report {
	rep := &model.Report{Schema: model.SchemaVersion, Generator: r.cfg.Generator, Source: info, Plan: planInfo, Alternatives: []model.Alternative{}, Indexes: []model.IndexOffer{}, HotRows: model.HotRows{Top: []model.HotRow{}}}
	if rep.Generator == "" {
		rep.Generator = "rekey"
	}
	r.buildKeyColumns(rep, a)
	buildTotals(rep, a, tl, elapsed)
	buildKeyShape(rep, a, r.d.KeyLen)
	r.buildUniqueness(rep, coll)
	r.buildFirstColumn(rep, a, tl, ord)
	r.buildRegions(rep, a, plan)                // after the first column: its distinct values bound the regions reached
	buildWriteOrder(rep, tl, ord, plan.Count()) // after the key columns and the regions
	return rep
}

// buildKeyColumns describes the mapping and each key column's values.
func (r *runner) buildKeyColumns(rep *model.Report, a *collide.Acc) {
	prog := r.prog
	rep.Mapping = advise.MappingInfo(prog, r.cfg.Mapping)
	srcOf := prog.KeySourceColumns()
	for i := range rep.Mapping.KeyColumns {
		kc := &rep.Mapping.KeyColumns[i]
		kc.Sources = srcOf[i]
		if kc.Sources == nil {
			kc.Sources = []string{}
		}
		c := a.Cols[i]
		if c.Text {
			kc.MaxBytes = c.MaxLen
			if c.N > 0 {
				kc.MeanBytes = float64(c.SumLen) / float64(c.N)
			}
			kc.JSONLike, kc.LongText = c.JsonLike, c.LongText
			kc.Numeric = c.Numeric && c.N > 0
			if c.N > 0 {
				kc.MinBytes = c.MinLen
			}
		} else {
			w := prog.Target().Columns[i].Type.FixedSize()
			kc.MaxBytes, kc.MeanBytes, kc.MinBytes = w, float64(w), w
		}
		if i == 0 {
			kc.Distinct, kc.DistinctExact = a.Distinct()
			if c.Text {
				kc.CommonPrefix, kc.PrefixBytes = r.prefixText(prog.Target().Columns[i].Type, a.Lcp), len(a.Lcp)
			}
		} else {
			kc.Distinct = int64(c.Hll.Estimate())
			if c.Text {
				kc.CommonPrefix, kc.PrefixBytes = r.prefixText(prog.Target().Columns[i].Type, c.Lcp), len(c.Lcp)
			}
		}
	}
}

// buildTotals counts the rows and bytes.
func buildTotals(rep *model.Report, a *collide.Acc, tl *timeline, elapsed time.Duration) {
	info := rep.Source
	t := &rep.Totals
	t.RowsRead, t.RowsAnalysed, t.RowsSkipped = tl.read, tl.analysed, tl.skipped
	t.RowsOK, t.RowsRejected = a.Rows, a.Rejected
	t.RejectCodes = a.Codes
	t.RejectExamples = a.RejEx
	if t.RejectExamples == nil {
		t.RejectExamples = []model.RejectExample{}
	}
	t.TargetBytes = a.RowBytes
	t.EstimatedTargetBytes = int64(float64(a.RowBytes) * info.Scale)
	t.KeyBytes = a.KeyHist.Sum
	t.Seconds = elapsed.Seconds()
	if t.Seconds > 0 {
		t.RowsPerSec = float64(t.RowsRead) / t.Seconds
	}
}

// buildKeyShape sums up the key lengths.
func buildKeyShape(rep *model.Report, a *collide.Acc, keyLen int) {
	h := a.KeyHist
	rep.Key = model.KeyShape{Columns: keyLen, MinBytes: h.Min(), P50Bytes: h.Quantile(0.5), P99Bytes: h.Quantile(0.99),
		MaxBytes: h.MaxSeen, OverLimit: a.Codes[pipeline.CodeKeyTooLong] + h.Over}
	if h.N > 0 {
		rep.Key.MeanBytes = float64(h.Sum) / float64(h.N)
		rep.Key.FixedLength = rep.Key.MinBytes == rep.Key.MaxBytes
	}
}

// buildUniqueness reports the collision check, with its examples.
func (r *runner) buildUniqueness(rep *model.Report, coll collide.CollisionResult) {
	prog, d := r.prog, r.d
	u := &rep.Uniqueness
	u.Exact = !rep.Source.Sampled
	u.Keys, u.CollidingKeys, u.CollisionRows, u.DuplicateRows = coll.Keys, coll.Colliding, coll.Rows, coll.Duplicates
	u.Examples = []model.CollisionExample{}
	u.SourceColumns = append([]string{}, d.SrcName...)
	keyCols := prog.Target().Columns[:d.KeyLen]
	for _, ex := range coll.Examples {
		ce := model.CollisionExample{Rows: ex.Rows, Sources: ex.Sources, DifferIn: advise.DiffColumns(prog.Source(), ex.Diff)}
		for i, o := range ex.Origins {
			if i == 0 {
				for _, v := range d.ExampleKey(o) {
					ce.Key = append(ce.Key, collide.DisplayValue(v, 80))
				}
			}
			row := model.ExampleRow{Position: o.Stream + ":" + model.Itoa(o.Seq), Values: map[string]string{}}
			for k, v := range o.Src {
				if k < len(d.SrcName) {
					row.Values[d.SrcName[k]] = collide.DisplayValue(v, 80)
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
		for _, c := range d.SrcCols {
			if c < ex.Hashed && ex.Diff&(1<<uint(c)) != 0 {
				ce.SameKeySources = false
			}
		}
		for _, o := range ex.Origins[1:] {
			if len(o.Src) != len(ex.Origins[0].Src) {
				ce.SameKeySources = false
				continue
			}
			for k := range o.Src {
				if o.Src[k] != ex.Origins[0].Src[k] {
					ce.SameKeySources = false
				}
			}
		}
		u.Examples = append(u.Examples, ce)
	}
}

// buildFirstColumn describes the first key column: distinct and top values, prefix, order.
func (r *runner) buildFirstColumn(rep *model.Report, a *collide.Acc, tl *timeline, ord orderResult) {
	fc := &rep.FirstColumn
	first := r.prog.Target().Columns[0]
	fc.Name, fc.Type = first.Name, first.SQLType()
	fc.Distinct, fc.DistinctExact = a.Distinct()
	fc.TopExact = !a.Ss.Evicted
	// Listed: every value while the counters are exact; after evictions only values with a
	// guaranteed share of at least 0.1% (the rest are noise within the error bound).
	for _, tv := range a.Ss.Top(10) {
		v := model.TopValue{Value: r.firstText(tv.Value), Rows: tv.Count, RowsMin: tv.Count - tv.Err}
		if a.Rows > 0 {
			v.Share = float64(v.RowsMin) / float64(a.Rows)
			v.ShareMax = float64(v.Rows) / float64(a.Rows)
		}
		if a.Ss.Evicted && v.RowsMin*1000 < a.Rows {
			continue
		}
		fc.Top = append(fc.Top, v)
	}
	if a.Ss.Evicted && a.Rows > 0 {
		fc.OtherMaxShare = float64(a.Ss.Min()) / float64(a.Rows)
	}
	if fc.Top == nil {
		fc.Top = []model.TopValue{}
	}
	fc.CommonPrefix = r.prefixText(first.Type, a.Lcp)
	fc.PrefixBytes = len(a.Lcp)
	if a.Cols[0].Text {
		fc.MinBytes = collide.MinTextLen(a)
	} else {
		fc.MinBytes = first.Type.FixedSize()
	}
	up, down, pairs := a.Up+tl.up, a.Down+tl.down, a.Pairs+tl.pairs
	if ord.w != nil { // in write order, over the subsample
		up, down, pairs = ord.up, ord.down, ord.pairs
	}
	if pairs > 0 {
		fc.MonotonicUp = float64(up) / float64(pairs)
		fc.MonotonicDown = float64(down) / float64(pairs)
	}
}

// buildRegions lists the rows and bytes per region and how evenly they spread.
func (r *runner) buildRegions(rep *model.Report, a *collide.Acc, plan pipeline.RegionPlan) {
	fc := &rep.FirstColumn
	var total int64
	for _, n := range a.RegRows {
		total += n
	}
	for i := 0; i < plan.Count(); i++ {
		start, hasStart, end, hasEnd := plan.Bounds(i)
		reg := model.Region{Index: i, Rows: a.RegRows[i], Bytes: a.RegBytes[i]}
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
	dist.RowsMaxMean, dist.CV, dist.EmptyRegions, dist.HottestRegions = collide.RegionStats(a.RegRows)
	dist.BytesMaxMean, _, _, _ = collide.RegionStats(a.RegBytes)
	if fc.Distinct < int64(plan.Count()) && a.Rows > 0 {
		dist.Unreachable = plan.Count() - int(fc.Distinct)
	}
	if dist.HottestRegions == nil {
		dist.HottestRegions = []int{}
	}
}

// buildWriteOrder reports the write order: how the key columns follow it, the hotspot windows
// and the heatmap over time.
func buildWriteOrder(rep *model.Report, tl *timeline, ord orderResult, regions int) {
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
	ws := win.Result()
	hs := collide.Summarize(ws, regions, win.Per)
	rep.Hotspot = model.Hotspot{Order: ord.info.Evidence, Windows: hs.Windows, RowsPerWindow: hs.RowsPerWindow, EvenShare: hs.EvenShare,
		MeanTopShare: hs.MeanTopShare, MaxTopShare: hs.MaxTopShare, HotFactor: hs.HotFactor, TopRegions: hs.DistinctTopReg}
	rep.HotspotWindows = make([]model.Window, len(ws))
	for i, w := range ws {
		rep.HotspotWindows[i] = model.Window{Index: i, FirstRow: w.First, Rows: w.Rows, TopRegion: w.TopRegion, TopShare: w.TopShare, Counts: w.Counts}
	}
	if ord.heat != nil && (ord.info.Axis == "time" || ord.info.Axis == "value") {
		label := ord.info.Column
		if label == "" {
			label = ord.info.Evidence
		}
		rep.TimeHeatmap = ord.heat.Result(label, rep.Regions)
		rep.TimeHeatmap.Order, rep.TimeHeatmap.Axis = ord.info.Evidence, ord.info.Axis
	}
}

// recommend fills rep.Recommendation: bulkload regions = estimated data / region size (at least
// 1), API writes = nodes x 4, each with split keys placed from the run's whole-input subsample.
func (r *runner) recommend(rep *model.Report, recs []pipeline.Record) {
	prog := r.prog
	size := prog.RegionSize()
	rows := prog.SpreadRows(recs, advise.AltPlanRows)
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

func regionAdvice(prog *transform.Program, n int, rows [][]pipeline.Value, basis string, format func(pipeline.Type, pipeline.Value) string) model.RegionAdvice {
	a := model.RegionAdvice{Regions: n, Basis: basis, SplitKeys: []string{}}
	if n <= 1 {
		a.Strategy = "single"
		return a
	}
	plan, err := prog.PlanRegions(transform.RegionRequest{Count: n, Sample: rows})
	if err != nil {
		a.Basis += "; no split keys: " + advise.FirstLine(err.Error())
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

// prefixText renders the prefix every value of a column of type t shares as its values are
// shown: a VARBINARY column's bytes as its split keys write them (hex), text with what does not
// print escaped.
func (r *runner) prefixText(t pipeline.Type, lcp []byte) string {
	if t == pipeline.TypeVarbinary {
		return collide.DisplayValue(pipeline.Text(r.cfg.FormatSplit(t, pipeline.Bytes(string(lcp)))), 80)
	}
	return collide.DisplayValue(pipeline.Text(string(lcp)), 80)
}

// firstText renders a first-column value like the region bounds (timestamps as dates).
func (r *runner) firstText(v pipeline.Value) string {
	return collide.DisplayValue(pipeline.Text(r.cfg.FormatSplit(r.d.First.Type, v)), 80)
}
