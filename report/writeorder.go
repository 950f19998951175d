package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// The write-order model: the order in which the application creates rows, which is the order
// Lindorm will receive new rows after the cut-over. A Cassandra token scan (and a dsbulk
// unload) delivers rows in hash order and an export may be sorted by anything, so the order a
// report reads rows in says little about hotspots. Each row gets a write-order value from the
// best evidence available (a declared column, Cassandra's WRITETIME(), a Kafka message's
// timestamp, a time column of the row, Kafka offsets, arrival as a last resort); windows,
// monotonicity and the advisor's subsample are judged in that order. Memory stays bounded: the
// values go to the time heatmap's bins and to the advisor's bounded subsample, which is sorted
// by them once the pass is over.

// Write-order evidence, best first (WriteOrder.Evidence).
const (
	OrderDeclared    = "declared"        // a column source.write_order or --write-order names
	OrderWriteTime   = "writetime"       // Cassandra WRITETIME() of the row's regular cells
	OrderKafkaTime   = "kafka_timestamp" // the Kafka message's timestamp
	OrderTimeColumn  = "time_column"     // a timestamp, date or timeuuid column of the row, inferred
	OrderKafkaOffset = "kafka_offset"    // offset order within each partition
	OrderArrival     = "arrival"         // the order the report read rows in
)

// OrderHints is what the caller knows about the source's order.
type OrderHints struct {
	// Column is the declared write-order column (source.write_order, or --write-order), "" for none.
	Column       string
	ColumnOrigin string // "source.write_order" or "--write-order"
	// WriteTimes is OrderWriteTime or OrderKafkaTime when the source fills Batch.WriteTimes.
	WriteTimes string
	// Offsets: records' Seq are Kafka offsets, in order within each partition.
	Offsets bool
	// OffsetWindow gives the offsets [first, end) a stream (a partition) is read over, so that
	// partitions of different lengths are put side by side by each message's share of its
	// partition; nil or !ok: raw offsets.
	OffsetWindow func(stream string) (first, end int64, ok bool)
	// Arrival says what the order of reading is, for the arrival finding: "a Cassandra token-range
	// scan (hash order)", "file order".
	Arrival string
	// Notes say why better evidence is missing (a key-only Cassandra table has no WRITETIME()).
	Notes []string
}

// orderCand is one way of giving a row its write-order value.
type orderCand struct {
	kind string
	col  int  // source column (declared, time column)
	date bool // the column is a DATE (days)
	uuid bool // the column is a timeuuid (text)
	name string
	typ  string
	// window: kafka_offset's partition windows (OrderHints.OffsetWindow)
	window func(stream string) (first, end int64, ok bool)
}

// offsetScale is the write-order value of a partition window's end: a message's value is its
// share of its partition's window on this scale.
const offsetScale = 1 << 40

// value is the write-order value of record i of b (ord: its ordinal in arrival order); noTime
// when the row has none.
func (c *orderCand) value(b *pipeline.Batch, i int, ord int64) int64 {
	rec := &b.Records[i]
	switch c.kind {
	case OrderDeclared, OrderTimeColumn:
		if c.col >= len(rec.Values) {
			return noTime
		}
		v := rec.Values[c.col]
		switch {
		case v.Kind == pipeline.KindNull:
			return noTime
		case c.uuid:
			return timeUUIDMillis(v.Str)
		case v.Kind != pipeline.KindInt:
			return noTime
		case c.date:
			return v.Num * 86400000
		}
		return v.Num
	case OrderWriteTime, OrderKafkaTime:
		if i < len(b.WriteTimes) {
			return b.WriteTimes[i]
		}
		return noTime
	case OrderKafkaOffset:
		if c.window != nil {
			if first, end, ok := c.window(b.Stream); ok && end > first {
				return int64(float64(rec.Seq-first) / float64(end-first) * offsetScale)
			}
		}
		return rec.Seq
	}
	return ord
}

// timeUUIDMillis is the time of a version-1 UUID in epoch milliseconds (noTime if s is not one).
func timeUUIDMillis(s string) int64 {
	if len(s) != 36 || s[14] != '1' {
		return noTime
	}
	var t uint64
	for _, part := range []string{s[15:18], s[9:13], s[0:8]} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				return noTime
			}
			t = t<<4 | uint64(d)
		}
	}
	const gregorianToUnix = 0x01B21DD213814000 // 100 ns intervals from 1582-10-15 to 1970-01-01
	return (int64(t) - gregorianToUnix) / 10000
}

// orderModel holds the candidates: the best evidence, and the one to fall back on when the
// best gives no order (every row with the same WRITETIME(), as after a bulk load).
type orderModel struct {
	hints   OrderHints
	primary orderCand
	backup  *orderCand
	notes   []string
}

func newOrderModel(prog *transform.Program, h OrderHints) *orderModel {
	src := prog.Source()
	m := &orderModel{hints: h, notes: append([]string{}, h.Notes...)}
	column := func(kind string, i int) orderCand {
		t := pipeline.NormalizeSourceType(src[i].Type)
		return orderCand{kind: kind, col: i, name: src[i].Name, typ: src[i].Type,
			date: t == "date", uuid: t == "timeuuid"}
	}
	var cands []orderCand
	if h.Column != "" {
		if i := src.Index(h.Column); i >= 0 {
			cands = append(cands, column(OrderDeclared, i))
		}
	}
	if h.WriteTimes != "" {
		cands = append(cands, orderCand{kind: h.WriteTimes})
	}
	// a Kafka partition's offsets are its creation order: known, where a time column is a guess
	if h.Offsets {
		cands = append(cands, orderCand{kind: OrderKafkaOffset, window: h.OffsetWindow})
	} else {
		if i := inferTimeColumn(src); i >= 0 {
			cands = append(cands, column(OrderTimeColumn, i))
		}
		cands = append(cands, orderCand{kind: OrderArrival})
	}
	m.primary = cands[0]
	if m.primary.kind != OrderDeclared && len(cands) > 1 {
		b := cands[1]
		m.backup = &b
	}
	return m
}

// inferTimeColumn picks the source column most likely to be a row's creation time: a
// timestamp, date or timeuuid column, one named like a creation time first; -1 for none.
// writetime_ pseudo-columns are left to the WRITETIME() evidence.
func inferTimeColumn(src pipeline.SourceSchema) int {
	best, bestScore := -1, 0
	for i, c := range src {
		if transform.WriteOrderKind(c.Type) != "time" || strings.HasPrefix(c.Name, "writetime_") {
			continue
		}
		n := strings.ToLower(c.Name)
		score := 1
		switch {
		case strings.Contains(n, "creat") || strings.Contains(n, "insert"):
			score = 3
		case strings.Contains(n, "updat") || strings.Contains(n, "modif") || strings.Contains(n, "delet"):
			score = 0 // changes, not creation: only when nothing else is there
		}
		if best < 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// describe is the evidence in words, as findings and renderings name it.
func (c *orderCand) describe(h OrderHints) string {
	switch c.kind {
	case OrderDeclared:
		return fmt.Sprintf("column %s, declared the row's creation time by %s", c.name, h.ColumnOrigin)
	case OrderWriteTime:
		return "Cassandra WRITETIME() of each row (the earliest of its regular cells)"
	case OrderKafkaTime:
		return "the Kafka message timestamps"
	case OrderTimeColumn:
		return fmt.Sprintf("column %s (%s), inferred as the row's creation time (declare source.write_order to be sure)", c.name, c.typ)
	case OrderKafkaOffset:
		if c.window == nil {
			return "offset order within each Kafka partition, the partitions side by side by offset"
		}
		return "offset order within each Kafka partition, the partitions side by side by each message's share of its partition's window (as if every partition were written at a steady pace over the same time)"
	}
	what := h.Arrival
	if what == "" {
		what = "the source's order"
	}
	return "arrival order (" + what + "), which need not be the application's"
}

// orderInformative tells whether write-order values order rows at all: most rows have one and
// they take more than a handful of distinct values.
func orderInformative(vals []int64) bool {
	if len(vals) < 2 {
		return false
	}
	s := make([]int64, 0, len(vals))
	for _, v := range vals {
		if v != noTime {
			s = append(s, v)
		}
	}
	if 2*len(s) < len(vals) {
		return false
	}
	slices.Sort(s)
	return int64(len(slices.Compact(s))) >= max(2, min(16, int64(len(vals))/4))
}

// WriteOrder is the write-order model the report used (Report.WriteOrder).
type WriteOrder struct {
	// Evidence is declared, writetime, kafka_timestamp, time_column, kafka_offset or arrival.
	Evidence    string `json:"evidence"`
	Column      string `json:"column"`      // the declared or inferred column, "" otherwise
	Description string `json:"description"` // the evidence in words
	// Axis of the time heatmap: time (epoch ms), value (a declared integer column), or rows.
	Axis string `json:"axis"`
	// Notes say why better evidence was not used.
	Notes []string `json:"notes"`
	// SubsampleRows is how many rows the key columns were judged on (in write order).
	SubsampleRows int        `json:"subsample_rows"`
	KeyColumns    []KeyOrder `json:"key_columns"`
}

// KeyOrder is how one key column's values follow the write order.
type KeyOrder struct {
	Name string `json:"name"`
	// RankCorrelation is Spearman's rho between the column and the write order over the
	// subsample (1: rises with it, -1: falls); 0 in arrival order.
	RankCorrelation float64 `json:"rank_correlation"`
	Distinct        int64   `json:"distinct"`        // distinct values in the subsample
	PrefixDistinct  int64   `json:"prefix_distinct"` // distinct values of the key columns before it (0 for the first)
	// RisesInPrefix is, in write order, over pairs of successive rows with the same values of
	// every key column before this one, the share that keep one direction (>=, or <=); near 1,
	// each prefix value's new rows land at one end of its range. PrefixPairs counts the pairs
	// (0 for the first column and in arrival order, where a partition's clustering order would
	// pass for it).
	RisesInPrefix float64 `json:"rises_in_prefix"`
	PrefixPairs   int64   `json:"prefix_pairs"`
	Incremental   bool    `json:"incremental"`
	Why           string  `json:"why"` // the evidence, when incremental
}

// Thresholds of the incremental_key_column rule.
const (
	// incrementalRho: a key column whose rank correlation with the write order is at least this
	// (or at most its negative) is incremental.
	incrementalRho = 0.8
	// sequenceDensity: with no write order, an integer column whose distinct values fill at
	// least this share of [min, max] is a sequence.
	sequenceDensity = 0.5
	// A key column after the first is also incremental when, in write order, at least
	// monotonicShare of at least minPrefixPairs successive rows of one prefix keep its direction
	// (a counter per prefix value: [channel][id] where ids rise per channel).
	minPrefixPairs = 50
)

// orderedSample is the subsample in write order with each accepted row's target key, its
// region under the main plan, and its write-order value.
type orderedSample struct {
	keys    [][]pipeline.Value // accepted rows: key values
	regions []int
	wo      []int64
}

// sortSubsample sorts the subsample by write order (stable: ties keep arrival order) and
// returns the values in the new order.
func sortSubsample(recs []pipeline.Record, wo []int64) {
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(wo[a], wo[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	r2 := make([]pipeline.Record, len(recs))
	w2 := make([]int64, len(wo))
	for k, i := range idx {
		r2[k], w2[k] = recs[i], wo[i]
	}
	copy(recs, r2)
	copy(wo, w2)
}

// orderSample runs the (write-ordered) subsample through the mapping and routes it.
// dated: rows without a write-order value are left out.
func (r *runner) orderSample(recs []pipeline.Record, wo []int64, dated bool) orderedSample {
	var s orderedSample
	ev := r.prog.NewEvaluator()
	out := make([]pipeline.Value, len(r.prog.Target().Columns))
	b := &pipeline.Batch{Stream: "subsample"}
	for i := range recs {
		if dated && wo[i] == noTime || ev.Apply(b, &recs[i], out) != nil {
			continue
		}
		key := make([]pipeline.Value, r.d.keyLen)
		for k, v := range out[:r.d.keyLen] {
			v.Str = strings.Clone(v.Str)
			key[k] = v
		}
		s.keys = append(s.keys, key)
		s.regions = append(s.regions, r.d.route(key[0]))
		s.wo = append(s.wo, wo[i])
		if i%1024 == 1023 {
			ev.Reset()
		}
	}
	ev.Reset()
	return s
}

// keyOrders judges every key column against the write order.
func (r *runner) keyOrders(s orderedSample, evidence string, analysed int64) []KeyOrder {
	cols := r.prog.Target().Columns[:r.d.keyLen]
	out := make([]KeyOrder, len(cols))
	n := len(s.keys)
	var wo []int64 // nil in arrival order
	if evidence != OrderArrival && n > 1 {
		wo = s.wo
	}
	prefix := make([]uint64, n)
	prefixBefore := make([]uint64, n)
	var names []string
	for c, col := range cols {
		ko := KeyOrder{Name: col.Name}
		ko.PrefixDistinct = int64(len(distinctU64(prefix)))
		if c == 0 {
			ko.PrefixDistinct = 0
		}
		copy(prefixBefore, prefix)
		names = append(names, col.Name)
		vals := make([]pipeline.Value, n)
		for i := range s.keys {
			vals[i] = s.keys[i][c]
			prefix[i] = mix64(prefix[i]^hashValue(vals[i], uint64(c)), 0x9e37)
		}
		hashes := make([]uint64, n)
		for i, v := range vals {
			hashes[i] = hashValue(v, 0)
		}
		ko.Distinct = int64(len(distinctU64(hashes)))
		if c > 0 && wo != nil {
			ko.RisesInPrefix, ko.PrefixPairs = risesInPrefix(col.Type, vals, prefixBefore)
		}
		ko.RankCorrelation, ko.Incremental, ko.Why = incrementalColumn(col.Type, vals, ko.Distinct, wo, analysed)
		if !ko.Incremental && ko.Distinct > 1 && wo != nil && ko.PrefixPairs >= minPrefixPairs && ko.RisesInPrefix >= monotonicShare {
			ko.Incremental, ko.Why = true, fmt.Sprintf("keeps its direction within each %s in write order (%s of %s successive rows)", strings.Join(names[:c], ", "), pct(ko.RisesInPrefix), count(ko.PrefixPairs))
		}
		out[c] = ko
	}
	return out
}

// incrementalColumn judges one key column's values (rows in write order) against the write
// order's ranks (nil in arrival order): a TIMESTAMP or DATE; a rank correlation with the write
// order of at least incrementalRho (or at most its negative); with no write order, integers
// that look like a sequence. distinct is the values' distinct count; analysed the rows the
// subsample was drawn from. The advisor judges each design's first column by it too.
func incrementalColumn(typ pipeline.Type, vals []pipeline.Value, distinct int64, wo []int64, analysed int64) (rho float64, inc bool, why string) {
	n := len(vals)
	switch {
	case distinct < 2:
	case typ == pipeline.TypeTimestamp || typ == pipeline.TypeDate:
		return 0, true, fmt.Sprintf("is a %s, and times only grow", typ)
	case wo != nil:
		rho = rankCorrelation(typ, vals, wo)
		if math.Abs(rho) >= incrementalRho {
			dir := "rises"
			if rho < 0 {
				dir = "falls"
			}
			return rho, true, fmt.Sprintf("%s with the write order (rank correlation %.2f)", dir, rho)
		}
	case isIntType(typ):
		if lo, hi, ok := intRange(vals); ok && hi > lo {
			// the subsample keeps about n of analysed rows: scale its distinct count
			dens := float64(distinct) * float64(max(analysed, int64(n))) / float64(n) / (float64(hi) - float64(lo) + 1)
			if dens >= sequenceDensity && float64(distinct) >= 0.9*float64(n) {
				return 0, true, fmt.Sprintf("looks like a sequence (dense values from %d to %d)", lo, hi)
			}
		}
	}
	return rho, false, ""
}

// rhoRows bounds the rows a rank correlation is computed over (evenly spread over the
// subsample): its standard error is then below 0.01, far inside the 0.8 threshold.
const rhoRows = 20000

// rankCorrelation is Spearman's rho between the values and their rows' write-order values.
func rankCorrelation(typ pipeline.Type, vals []pipeline.Value, wo []int64) float64 {
	step := max(1, len(vals)/rhoRows)
	var v []pipeline.Value
	var w []int64
	for i := 0; i < len(vals); i += step {
		v, w = append(v, vals[i]), append(w, wo[i])
	}
	return pearson(ranks(len(w), func(a, b int) int { return cmp.Compare(w[a], w[b]) }),
		ranks(len(v), func(a, b int) int { return pipeline.Compare(typ, v[a], v[b]) }))
}

// risesInPrefix measures, over rows in write order, how each prefix value's successive rows
// move: the share of pairs that keep the dominant direction (ties count for both), and the
// pairs. A column that mostly repeats its value (a status) does not pass: ties only count when
// most pairs move.
func risesInPrefix(typ pipeline.Type, vals []pipeline.Value, prefix []uint64) (float64, int64) {
	idx := make([]int32, len(vals))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(prefix[a], prefix[b]) })
	var up, down, ties, pairs int64
	for k := 1; k < len(idx); k++ {
		a, b := idx[k-1], idx[k]
		if prefix[a] != prefix[b] {
			continue
		}
		pairs++
		switch c := pipeline.Compare(typ, vals[a], vals[b]); {
		case c < 0:
			up++
		case c > 0:
			down++
		default:
			ties++
		}
	}
	if pairs == 0 || 2*ties > pairs {
		return 0, pairs
	}
	return float64(max(up, down)+ties) / float64(pairs), pairs
}

// ranks are the 1-based ranks of n items under cmp, ties given their average rank.
func ranks(n int, compare func(a, b int) int) []float64 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := compare(int(a), int(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && compare(int(idx[i]), int(idx[j])) == 0 {
			j++
		}
		avg := float64(i+j+1) / 2
		for k := i; k < j; k++ {
			out[idx[k]] = avg
		}
		i = j
	}
	return out
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= n
	my /= n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func distinctU64(v []uint64) []uint64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Compact(s)
}

func intRange(vals []pipeline.Value) (lo, hi int64, ok bool) {
	for i, v := range vals {
		if v.Kind != pipeline.KindInt {
			return 0, 0, false
		}
		if i == 0 || v.Num < lo {
			lo = v.Num
		}
		if i == 0 || v.Num > hi {
			hi = v.Num
		}
	}
	return lo, hi, len(vals) > 0
}

// orderWindows are the windows and monotonicity of the write-ordered subsample under the main
// plan (in arrival order the exact windows of every row are used instead).
func orderWindows(s orderedSample, regions int, typ pipeline.Type) (*windows, int64, int64, int64) {
	w := newWindows(regions, int64(len(s.keys)), mainWindows, mainWindowsMax)
	var up, down, pairs int64
	for i, reg := range s.regions {
		w.add(reg)
		if i > 0 {
			c := pipeline.Compare(typ, s.keys[i-1][0], s.keys[i][0])
			if c <= 0 {
				up++
			}
			if c >= 0 {
				down++
			}
			pairs++
		}
	}
	return w, up, down, pairs
}

// writeOrderFindings are the incremental_key_column and write_order_unknown findings.
func writeOrderFindings(rep *Report, add func(Finding)) {
	wo := rep.WriteOrder
	if wo == nil || rep.Totals.RowsOK < 2 {
		return
	}
	if wo.Evidence == OrderArrival {
		add(finding("write_order_unknown", SevInfo, "the order the application creates rows in is unknown: windows and monotonicity are judged in "+wo.Description+
			" (a Cassandra token scan or a dsbulk unload delivers rows in hash order, an export in whatever order it was sorted by); declare the creation-time column as source.write_order or pass --write-order COLUMN", nil))
	}
	regions := incrementalRegions(rep)
	kcs := rep.Mapping.KeyColumns
	for i, ko := range wo.KeyColumns {
		if !ko.Incremental || i >= len(kcs) {
			continue
		}
		add(incrementalFinding(kcs, i, ko, wo.Description, regions))
	}
}

// incrementalRegions is the region count an incremental column's prefix is judged against.
// Each prefix value writes at the end of its own range, so fewer values than regions leave
// regions idle. Lindorm splits a region that grows past 8 GB, inside one prefix value too: a
// table gets at least the analysis' default count in time, however few first-column values the
// plan could split on.
func incrementalRegions(rep *Report) int {
	return max(rep.Plan.Regions, rep.Plan.Asked, rep.Recommendation.Bulkload.Regions, defaultAnalysisRegions)
}

// incrementalFinding is the incremental_key_column finding of key column i: it names the
// column, the evidence and the guide's fix. First in the key, every new row lands at the end of
// the key space: a hash prefix, or for a number or time a modulo bucket, spreads it. After a
// few prefix values, each value's new rows land at the end of its range (one hot range per
// value): the guide keeps a hash on the incrementing id. After a well-spread prefix
// ([userid][orderid]) every region gets some prefixes' new rows: fine.
func incrementalFinding(kcs []KeyColumn, i int, ko KeyOrder, order string, regions int) Finding {
	kc := kcs[i]
	ev := map[string]float64{"column": float64(i + 1), "rank_correlation": ko.RankCorrelation, "distinct": float64(ko.Distinct),
		"prefix_distinct": float64(ko.PrefixDistinct), "rises_in_prefix": ko.RisesInPrefix, "prefix_pairs": float64(ko.PrefixPairs), "regions": float64(regions)}
	x := kc.Expr
	hashed := "md5(" + x + ").substr(0,4) + " + x
	if i == 0 {
		fix := fmt.Sprintf("put a hash prefix before it ([%s]: the guide's hash(id) + id)", hashed)
		if t, _, _, err := pipeline.ParseType(kc.Type); err == nil && isIntType(t) {
			fix = fmt.Sprintf("put a modulo bucket ([%s %% %d][%s], the guide's bucket for time series read by time range) or a hash prefix ([%s]) before it", x, regions, x, hashed)
		}
		return finding("incremental_key_column", SevWarning, fmt.Sprintf("first key column %s is incremental: it %s, judged in write order by %s; every new row lands at the end of the key space, in one region (the design guide's incremental primary key hotspot): %s", kc.Name, ko.Why, order, fix), ev)
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
			return finding("incremental_key_column", SevInfo, fmt.Sprintf("key column %s is incremental too (it %s), behind %s, which is itself incremental: fixing %s's finding fixes this one", kc.Name, ko.Why, p.Name, p.Name), ev)
		}
	}
	if ko.PrefixDistinct < int64(regions) {
		return finding("incremental_key_column", SevWarning, fmt.Sprintf("key column %s is incremental (it %s, judged in write order by %s) and %s before it has only %s distinct values for %d regions: Lindorm splits a big value of %s into several regions, but every new row lands at the end of its value's range, one hot range per value: keep a hash on %s (%s[%s], the guide's hash(id) + id)",
			kc.Name, ko.Why, order, pn, count(ko.PrefixDistinct), regions, pn, kc.Name, strings.Join(prefix, ""), hashed), ev)
	}
	return finding("incremental_key_column", SevInfo, fmt.Sprintf("key column %s is incremental (it %s) behind %s values of %s for %d regions: new rows spread over every region's prefixes, no hot range (the guide's [userid][orderid])", kc.Name, ko.Why, count(ko.PrefixDistinct), pn, regions), ev)
}

// Label is the evidence in a few words, for findings that say which order they judged in.
func (wo *WriteOrder) Label() string {
	switch wo.Evidence {
	case OrderDeclared:
		return "declared column " + wo.Column
	case OrderTimeColumn:
		return "column " + wo.Column + ", inferred"
	case OrderWriteTime:
		return "Cassandra WRITETIME()"
	case OrderKafkaTime:
		return "Kafka message timestamps"
	case OrderKafkaOffset:
		return "Kafka offsets"
	}
	return "arrival order"
}

// hasAxis tells whether an evidence's values can draw the heatmap's axis (times or declared
// values, not arrival ordinals or offsets of several partitions).
func hasAxis(kind string) bool {
	switch kind {
	case OrderDeclared, OrderWriteTime, OrderKafkaTime, OrderTimeColumn:
		return true
	}
	return false
}

// orderResult is the write order the report judges in.
type orderResult struct {
	info *WriteOrder
	heat *timeHeat // nil when the order has no axis
	// w are the windows of the write-ordered subsample, with its first column's monotonicity;
	// nil in arrival order (the exact windows of every row are used)
	w               *windows
	up, down, pairs int64
	// wo are the subsample's write-order values, in its new order; nil in arrival order
	wo []int64

	kind string  // the evidence chosen (Order*)
	all  []int64 // the subsample's values of that evidence (wo, also in arrival order)
	hot  HotRows // the keys written most often within a window of writes
}

// writeOrder picks the evidence (the best one that orders rows at all) and sorts the advisor's
// subsample into that order; judge then judges the key columns and windows in it.
func (r *runner) writeOrder(tl *timeline, rowsOK int64) orderResult {
	m := r.order
	cand, heat, wo := &m.primary, tl.heat, tl.subWO
	notes := m.notes
	if m.backup != nil && !orderInformative(tl.subWO) {
		notes = append(notes, cand.describe(m.hints)+" gives no order here (the same value for most rows, or none): "+m.backup.describe(m.hints)+" is used instead")
		cand, heat, wo = m.backup, tl.heat2, tl.subWO2
	}
	info := &WriteOrder{Evidence: cand.kind, Description: cand.describe(m.hints), Notes: notes, Axis: "rows"}
	if cand.kind == OrderDeclared || cand.kind == OrderTimeColumn {
		info.Column = cand.name
	}
	if hasAxis(cand.kind) {
		info.Axis = "time"
		if cand.kind == OrderDeclared && transform.WriteOrderKind(cand.typ) != "time" {
			info.Axis = "value"
		}
	}
	if info.Notes == nil {
		info.Notes = []string{}
	}
	res := orderResult{info: info, heat: heat, kind: cand.kind, all: wo}
	if cand.kind != OrderArrival {
		sortSubsample(tl.subsample, wo)
		res.wo = wo
	}
	return res
}

// judge judges the key columns and the windows in the order writeOrder chose (the subsample
// sorted into it). It only reads the subsample: the advisor may evaluate its designs meanwhile.
func (r *runner) judge(tl *timeline, res *orderResult, rowsOK int64) {
	s := r.orderSample(tl.subsample, res.all, res.kind != OrderArrival)
	res.info.SubsampleRows = len(s.keys)
	res.info.KeyColumns = r.keyOrders(s, res.kind, rowsOK)
	res.hot = countHotRows(s.keys, res.kind, max(r.adv.n, r.d.plan.Count()))
	if res.kind != OrderArrival && len(s.keys) > 0 {
		res.w, res.up, res.down, res.pairs = orderWindows(s, r.d.plan.Count(), r.d.first.Type)
	}
}

// orderText names the order windows follow, for renderings: "write order (evidence)".
func orderText(rep *Report) string {
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence == OrderArrival {
		return "arrival order"
	}
	return "write order (" + wo.Description + ")"
}
