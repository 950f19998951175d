package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// The advisor: the same analysis for key designs derived from the mapping, on the run's
// order-preserving subsample, each judged against a plan of the same region count.
//
// The source key is the mapping's key without its rewrites: the source columns the key is
// computed from, in key order ([md5(userid).substr(0,4) + userid][orderid] -> [userid][orderid];
// [ts % 16][ts][hostname] -> [ts][hostname]). Call its first column B and the rest R. Derived:
//
//	source_key   [B][R...]                                  no rewrite
//	hash_prefix  [md5(B).substr(0,4) + B][R...]              the guide's hash prefix
//	reverse      [reverse(B)][R...]                          the guide's reverse index
//	bucket       [B % N][B][R...]   (B an integer or time)   the guide's modulo bucket
//	salt         [random(N)][B][R...]                        a salt leading the key
//
// N is the number of regions analysed. The guide writes its salt last ([userId][orderid]
// [random(100)]); in a range-partitioned table only the first column places a row, so a trailing
// salt spreads nothing: the advisor leads with it, which is what spreading writes takes.

type altSpec struct {
	id, name string
	pk       string
	reads    Reads
	tradeOff string
}

// altSubsampleForPlan bounds the rows a derived design's quantile plan is placed from.
const altPlanRows = 20000

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func isIntegralCQL(t string) bool {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "bigint", "int", "smallint", "tinyint", "varint", "counter", "timestamp", "date", "time":
		return true
	}
	return false
}

func isTimeCQL(t string) bool {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "timestamp", "date", "time", "timeuuid":
		return true
	}
	return false
}

func timeNote(t string) string {
	if isTimeCQL(t) {
		return " (a time range)"
	}
	return ""
}

// sourceKey is the mapping's key without rewrites: the source columns the key reads, in order.
func sourceKey(prog *transform.Program) []string {
	var out []string
	seen := map[string]bool{}
	for _, cols := range prog.KeySourceColumns() {
		for _, c := range cols {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

func freeName(base string, taken map[string]bool) string {
	name := base
	for i := 2; taken[strings.ToLower(name)]; i++ {
		name = base + strconv.Itoa(i)
	}
	return name
}

func deriveSpecs(prog *transform.Program, m *transform.Mapping, n int) []altSpec {
	key := sourceKey(prog)
	if len(key) == 0 {
		return nil
	}
	b := key[0]
	rest := ""
	for _, c := range key[1:] {
		rest += "[" + quoteName(c) + "]"
	}
	taken := map[string]bool{}
	for _, c := range prog.Source() {
		taken[strings.ToLower(c.Name)] = true
	}
	for _, e := range m.Target.Columns {
		taken[strings.ToLower(e.Name)] = true
	}
	bq := quoteName(b)
	ns := strconv.Itoa(n)
	btype := ""
	if i := prog.Source().Index(b); i >= 0 {
		btype = prog.Source()[i].Type
	}
	specs := []altSpec{
		{id: "source_key", name: "source key (no rewrite)", pk: "[" + bq + "]" + rest,
			reads:    Reads{Get: 1, PrefixScan: 1, RangeScan: 1},
			tradeOff: fmt.Sprintf("Every query stays as it is: GET by the full key, a SCAN of one %s and a range of %s are single key ranges. Writes go wherever %s's values fall: monotonic or few values make hotspots.", b, b, b)},
		{id: "hash_prefix", name: "hash prefix", pk: "[md5(" + bq + ").substr(0,4) + " + bq + " AS " + freeName("rk_hash", taken) + "]" + rest,
			reads:    Reads{Get: 1, PrefixScan: 1, RangeScan: -1},
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (the client computes md5(%s).substr(0,4) + %s). A range of %s values is no longer a key range: it becomes a scan of every region.", b, b, b, b)},
		{id: "reverse", name: "reversed first column", pk: "[reverse(" + bq + ") AS " + freeName("rk_rev", taken) + "]" + rest,
			reads:    Reads{Get: 1, PrefixScan: 1, RangeScan: -1},
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (the client reverses the value). Ranges of %s are lost (a scan of every region); it spreads only when the end of %s varies fastest (sequence numbers, ids).", b, b, b)},
	}
	if isIntegralCQL(btype) {
		specs = append(specs, altSpec{id: "bucket", name: "modulo bucket", pk: "[" + bq + " % " + ns + " AS " + freeName("rk_bucket", taken) + "][" + bq + "]" + rest,
			reads:    Reads{Get: 1, PrefixScan: 1, RangeScan: n},
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (bucket = %s %% %d). A range of %s%s becomes %d scans, one per bucket, merged by the client.", b, b, n, b, timeNote(btype), n)})
	}
	specs = append(specs, altSpec{id: "salt", name: "salt", pk: "[random(" + ns + ") AS " + freeName("rk_salt", taken) + "][" + bq + "]" + rest,
		reads:    Reads{Get: n, PrefixScan: n, RangeScan: n},
		tradeOff: fmt.Sprintf("Writes spread evenly whatever %s looks like, but the salt cannot be computed from the key: a GET becomes %d lookups, a SCAN of one %s or of a range %d scans.", b, n, b, n)})
	// drop designs with too many key columns
	out := specs[:0]
	for _, s := range specs {
		if strings.Count(s.pk, "][")+1 <= transform.MaxKeyColumns {
			out = append(out, s)
		}
	}
	return out
}

// compileAlt builds a derived design: the mapping with another primary key and no regions:
// section. target.columns entries named like a source key column are dropped (so [channel] is the
// source's channel, not code(channel)); if it still does not compile, every entry is dropped.
func compileAlt(prog *transform.Program, m *transform.Mapping, pk string) (*transform.Program, error) {
	key := map[string]bool{}
	for _, c := range sourceKey(prog) {
		key[strings.ToLower(c)] = true
	}
	m2 := *m
	m2.Regions = nil
	m2.Target.PrimaryKey = pk
	m2.Target.Columns = nil
	for _, e := range m.Target.Columns {
		if !key[strings.ToLower(e.Name)] {
			m2.Target.Columns = append(m2.Target.Columns, e)
		}
	}
	m2.Target.Exclude = nil
	for _, x := range m.Target.Exclude {
		if !key[strings.ToLower(x)] {
			m2.Target.Exclude = append(m2.Target.Exclude, x)
		}
	}
	p, err := transform.Compile(&m2, prog.Source())
	if err != nil && len(m2.Target.Columns) > 0 {
		m2.Target.Columns = nil
		p, err = transform.Compile(&m2, prog.Source())
	}
	return p, err
}

// altResult is one design's figures on the subsample.
type altResult struct {
	Alternative
	keysHash uint64 // identity of the key tuples produced, to recognise the mapping's own design
}

// evalDesign analyses a design on the subsample with a plan of n regions.
func evalDesign(prog *transform.Program, recs []pipeline.Record, n int) (altResult, error) {
	var res altResult
	// the plan, from an even spread of the subsample
	step := max(1, len(recs)/altPlanRows)
	var planRecs []pipeline.Record
	for i := 0; i < len(recs); i += step {
		planRecs = append(planRecs, recs[i])
	}
	plan, err := prog.PlanRegions(transform.RegionRequest{Count: n, Sample: prog.SampleRows(planRecs)})
	if err != nil {
		return res, err
	}
	d := newDesign(prog, plan)
	a := newAcc(d)
	w := newWindows(plan.Count(), int64(len(recs)), altWindows, altWindowsMax)
	ev := prog.NewEvaluator()
	out := make([]pipeline.Value, len(prog.Target().Columns))
	b := &pipeline.Batch{Stream: "subsample"}
	pairs := make([]spillRec, 0, len(recs))
	var ident uint64 = 1
	for i := range recs {
		if i%1024 == 1023 {
			ev.Reset()
		}
		if e := ev.Apply(b, &recs[i], out); e != nil {
			a.rejected++
			a.codes[e.Code]++
			ident = mix64(ident, 0x5eed)
			continue
		}
		region := d.route(out[0])
		a.row(out, region)
		w.add(region)
		kh := hashValues(out[:d.keyLen])
		ident = mix64(ident^kh, uint64(i))
		pairs = append(pairs, spillRec{key: kh, src: hashRecord(recs[i].Values)})
	}
	ev.Reset()
	res.keysHash = ident
	res.Regions = plan.Count()
	res.Strategy = plan.Strategy
	res.RegionRows = a.regRows
	res.RowsMaxMean, res.CV, _, _ = regionStats(a.regRows)
	ws := w.result()
	hs := summarize(ws, plan.Count(), w.per)
	res.MeanTopShare, res.HotFactor = hs.MeanTopShare, hs.HotFactor
	for _, x := range ws {
		res.WindowTop = append(res.WindowTop, x.TopShare)
	}
	if a.pairs > 0 {
		res.Monotonic = float64(max(a.up, a.down)) / float64(a.pairs)
	}
	res.Distinct, _ = a.distinct()
	res.Rejected = a.rejected
	res.Rows = a.rows
	if a.keyHist.n > 0 {
		res.MeanKeyBytes = float64(a.keyHist.sum) / float64(a.keyHist.n)
	}
	// collisions among the subsample's rows: sort by key, count distinct sources per key
	pairs, _ = radixSortBits(pairs, nil, 64)
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].key == pairs[i].key {
			j++
		}
		if j-i > 1 {
			srcs := make([]uint64, 0, j-i)
			for _, p := range pairs[i:j] {
				srcs = append(srcs, p.src)
			}
			slices.Sort(srcs)
			res.Collisions += int64(len(slices.Compact(srcs)) - 1)
		}
		i = j
	}
	var ks []string
	for _, ke := range prog.KeyElements() {
		s := ke.Expr
		if ke.Expr != ke.Name && ke.Expr != quoteName(ke.Name) {
			s += " AS " + ke.Name
		}
		if ke.Desc {
			s += " DESC"
		}
		ks = append(ks, "["+s+"]")
	}
	res.PrimaryKey = strings.Join(ks, "")
	return res, nil
}

// classifyMapping guesses the reads of the mapping's own design from its first key column.
func classifyMapping(prog *transform.Program, plan pipeline.RegionPlan, b string, n int) (Reads, string) {
	ke := prog.KeyElements()[0]
	e := strings.ToLower(ke.Expr)
	switch {
	case plan.Strategy == "int_bucket" && strings.Contains(e, "random("):
		return Reads{Get: n, PrefixScan: n, RangeScan: n}, "The key leads with a salt: writes spread, but a GET becomes one lookup per salt value and every SCAN one scan per salt value."
	case plan.Strategy == "int_bucket":
		return Reads{Get: 1, PrefixScan: 1, RangeScan: n}, fmt.Sprintf("A modulo bucket leads the key: GET and a SCAN of one %s stay single when the bucket is computed from the key; a range becomes one scan per bucket.", b)
	case plan.Strategy == "hex_prefix":
		return Reads{Get: 1, PrefixScan: 1, RangeScan: -1}, fmt.Sprintf("A hash prefix leads the key: GET and a SCAN of one %s stay single (the client computes the prefix); a range of %s values scans every region.", b, b)
	case strings.HasPrefix(e, "reverse("):
		return Reads{Get: 1, PrefixScan: 1, RangeScan: -1}, fmt.Sprintf("A reversed value leads the key: GET and a SCAN of one %s stay single; ranges of %s scan every region.", b, b)
	case ke.Expr == ke.Name || ke.Expr == quoteName(ke.Name):
		return Reads{Get: 1, PrefixScan: 1, RangeScan: 1}, fmt.Sprintf("The first key column is %s as stored in the source: GET, a SCAN of one value and a range are single key ranges.", ke.Name)
	}
	return Reads{Get: 1, PrefixScan: 1, RangeScan: -1}, "A computed first key column: GET stays single when the client computes it; ranges of the source values are not key ranges."
}

// advise analyses the alternatives, ranked. n is the region count analysed.
func (r *runner) advise(recs []pipeline.Record, n int) []Alternative {
	out := []Alternative{}
	m := r.cfg.Mapping
	if m == nil || len(recs) == 0 {
		return out
	}
	key := sourceKey(r.prog)
	b := ""
	if len(key) > 0 {
		b = key[0]
	}
	// the mapping's own design and the derived ones, evaluated in parallel
	specs := deriveSpecs(r.prog, m, n)
	results := make([]altResult, len(specs)+1)
	errs := make([]error, len(specs)+1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, r.cfg.Workers))
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			prog := r.prog
			if i > 0 {
				if prog, errs[i] = compileAlt(r.prog, m, specs[i-1].pk); errs[i] != nil {
					return
				}
			}
			results[i], errs[i] = evalDesign(prog, recs, n)
		}()
	}
	wg.Wait()
	if errs[0] != nil {
		return out
	}
	own := results[0]
	own.ID, own.Name, own.IsMapping = "mapping", "the mapping", true
	own.PrimaryKey = mappingInfo(r.prog, m).PrimaryKey
	ownPlan := pipeline.RegionPlan{Strategy: own.Strategy}
	own.Reads, own.TradeOff = classifyMapping(r.prog, ownPlan, b, n)
	list := []altResult{own}
	for k, s := range specs {
		res, err := results[k+1], errs[k+1]
		if err != nil {
			res = altResult{}
			res.Error = firstLine(err.Error())
			res.PrimaryKey = s.pk
		}
		res.ID, res.Name, res.Reads, res.TradeOff = s.id, s.name, s.reads, s.tradeOff
		if err == nil && res.keysHash == own.keysHash && res.Regions == own.Regions {
			list[0].SameAs = s.id
			list[0].Name = "the mapping = " + s.name
			list[0].Reads, list[0].TradeOff = s.reads, s.tradeOff
			continue
		}
		list = append(list, res)
	}
	for i := range list {
		list[i].Grade = grade(&list[i].Alternative)
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := &list[i].Alternative, &list[j].Alternative
		if (a.Error == "") != (b.Error == "") {
			return a.Error == ""
		}
		if ga, gb := gradeOrder(a.Grade), gradeOrder(b.Grade); ga != gb {
			return ga < gb
		}
		if ca, cb := readCost(a.Reads, a.Regions), readCost(b.Reads, b.Regions); ca != cb {
			return ca < cb
		}
		return a.HotFactor < b.HotFactor
	})
	for i := range list {
		list[i].Rank = i + 1
		if list[i].RegionRows == nil {
			list[i].RegionRows = []int64{}
		}
		if list[i].WindowTop == nil {
			list[i].WindowTop = []float64{}
		}
		out = append(out, list[i].Alternative)
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}

// grade: poor when the design loses rows or concentrates writes (the busiest region of a window
// takes more than 4x its share, or half of them, or one region holds 4x the mean); good when
// both stay within 2x; fair in between.
func grade(a *Alternative) string {
	switch {
	case a.Error != "":
		return "poor"
	case a.Collisions > 0 || a.Rejected*100 > a.Rows+a.Rejected:
		return "poor"
	case a.Regions <= 1:
		return "fair"
	case a.HotFactor > 4 || a.MeanTopShare >= 0.5 && a.Regions >= 4 || a.RowsMaxMean > 4:
		return "poor"
	case a.HotFactor <= 2 && a.RowsMaxMean <= 2:
		return "good"
	}
	return "fair"
}

func gradeOrder(g string) int {
	switch g {
	case "good":
		return 0
	case "fair":
		return 1
	}
	return 2
}

// readCost sums the regions the three typical queries touch (a full scan counts as all regions).
func readCost(r Reads, n int) int {
	c := 0
	for _, x := range []int{r.Get, r.PrefixScan, r.RangeScan} {
		if x < 0 {
			x = max(n, 1)
		}
		c += x
	}
	return c
}
