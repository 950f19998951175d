package report

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// mappingRegionCount is the region count the mapping asks for: its regions.count, or for a
// regions.size the estimated data over it (0 when it sets neither).
func (r *runner) mappingRegionCount(est int64) int {
	m := r.cfg.Mapping
	switch {
	case m == nil || m.Regions == nil:
		return 0
	case m.Regions.Count > 0:
		return m.Regions.Count
	case m.Regions.Size > 0:
		return bulkRegions(est, m.Regions.Size)
	}
	return 0
}

// orderSample runs the (write-ordered) subsample through the mapping and routes it.
// dated: rows without a write-order value are left out.
func (r *runner) orderSample(recs []pipeline.Record, wo []int64, dated bool) collide.OrderedSample {
	var s collide.OrderedSample
	ev := r.prog.NewEvaluator()
	out := make([]pipeline.Value, len(r.prog.Target().Columns))
	b := &pipeline.Batch{Stream: "subsample", Records: recs} // the records in it: hash prefixes computed eight at a time
	for i := range recs {
		if dated && wo[i] == collide.NoTime || ev.Apply(b, &recs[i], out) != nil {
			continue
		}
		key := make([]pipeline.Value, r.d.KeyLen)
		for k, v := range out[:r.d.KeyLen] {
			v.Str = strings.Clone(v.Str)
			key[k] = v
		}
		s.Keys = append(s.Keys, key)
		s.Regions = append(s.Regions, r.d.Route(key[0]))
		s.Wo = append(s.Wo, wo[i])
		if i%1024 == 1023 {
			ev.Reset()
		}
	}
	ev.Reset()
	return s
}

// keyOrders judges every key column against the write order.
func (r *runner) keyOrders(s collide.OrderedSample, evidence string, analysed int64) []model.KeyOrder {
	cols := r.prog.Target().Columns[:r.d.KeyLen]
	out := make([]model.KeyOrder, len(cols))
	n := len(s.Keys)
	var wo []int64 // nil in arrival order
	if evidence != model.OrderArrival && n > 1 {
		wo = s.Wo
	}
	prefix := make([]uint64, n)
	prefixBefore := make([]uint64, n)
	var names []string
	for c, col := range cols {
		ko := model.KeyOrder{Name: col.Name}
		ko.PrefixDistinct = int64(len(collide.DistinctU64(prefix)))
		if c == 0 {
			ko.PrefixDistinct = 0
		}
		copy(prefixBefore, prefix)
		names = append(names, col.Name)
		vals := make([]pipeline.Value, n)
		for i := range s.Keys {
			vals[i] = s.Keys[i][c]
			prefix[i] = collide.Mix64(prefix[i]^collide.HashValue(vals[i], uint64(c)), 0x9e37)
		}
		hashes := make([]uint64, n)
		for i, v := range vals {
			hashes[i] = collide.HashValue(v, 0)
		}
		ko.Distinct = int64(len(collide.DistinctU64(hashes)))
		if c > 0 && wo != nil {
			ko.RisesInPrefix, ko.PrefixPairs = collide.RisesInPrefix(col.Type, vals, prefixBefore)
		}
		ko.RankCorrelation, ko.Incremental, ko.Why = collide.IncrementalColumn(col.Type, vals, ko.Distinct, wo, analysed, r.prog.TimeKey(c), evidence == model.OrderTimeColumn)
		if !ko.Incremental && ko.Distinct > 1 && wo != nil && ko.PrefixPairs >= collide.MinPrefixPairs && ko.RisesInPrefix >= advise.MonotonicShare {
			ko.Incremental, ko.Why = true, fmt.Sprintf("keeps its direction within each %s in write order (%s of %s successive rows)", strings.Join(names[:c], ", "), model.Pct(ko.RisesInPrefix), model.Count(ko.PrefixPairs))
		}
		out[c] = ko
	}
	return out
}

// orderResult is the write order the report judges in.
type orderResult struct {
	info *model.WriteOrder
	heat *collide.TimeHeat // nil when the order has no axis
	// w are the windows of the write-ordered subsample, with its first column's monotonicity;
	// nil in arrival order (the exact windows of every row are used)
	w               *collide.Windows
	up, down, pairs int64
	// wo are the subsample's write-order values, in its new order; nil in arrival order
	wo []int64

	kind string        // the evidence chosen (Order*)
	all  []int64       // the subsample's values of that evidence (wo, also in arrival order)
	hot  model.HotRows // the keys written most often within a window of writes
}

// writeOrder picks the evidence (the best one that orders rows at all) and sorts the advisor's
// subsample into that order; judge then judges the key columns and windows in it.
func (r *runner) writeOrder(tl *timeline, rowsOK int64) orderResult {
	m := r.order
	cand, heat, wo := &m.Primary, tl.heat, tl.subWO
	notes := m.Notes
	if m.Backup != nil && !cand.Informative(tl.subWO) {
		notes = append(notes, cand.Describe(m.Hints)+" gives no order here (the same value for most rows, or none): "+m.Backup.Describe(m.Hints)+" is used instead")
		cand, heat, wo = m.Backup, tl.heat2, tl.subWO2
	}
	info := &model.WriteOrder{Evidence: cand.Kind, Description: cand.Describe(m.Hints), Notes: notes, Axis: "rows"}
	if cand.Kind == model.OrderDeclared || cand.Kind == model.OrderTimeColumn {
		info.Column = cand.Name
	}
	if collide.HasAxis(cand.Kind) {
		info.Axis = "time"
		if cand.Kind == model.OrderDeclared && transform.WriteOrderKind(cand.Typ) != "time" {
			info.Axis = "value"
		}
	}
	if info.Notes == nil {
		info.Notes = []string{}
	}
	res := orderResult{info: info, heat: heat, kind: cand.Kind, all: wo}
	if cand.Kind != model.OrderArrival {
		collide.SortSubsample(tl.subsample, wo)
		res.wo = wo
	}
	return res
}

// judge judges the key columns and the windows in the order writeOrder chose (the subsample
// sorted into it). It only reads the subsample: the advisor may evaluate its designs meanwhile.
func (r *runner) judge(tl *timeline, res *orderResult, rowsOK int64) {
	s := r.orderSample(tl.subsample, res.all, res.kind != model.OrderArrival)
	res.info.SubsampleRows = len(s.Keys)
	res.info.KeyColumns = r.keyOrders(s, res.kind, rowsOK)
	res.hot = collide.CountHotRows(s.Keys, res.kind, max(r.adv.N, r.d.Plan.Count()))
	if res.kind != model.OrderArrival && len(s.Keys) > 0 {
		res.w, res.up, res.down, res.pairs = collide.OrderWindows(s, r.d.Plan.Count(), r.d.First.Type)
	}
}
