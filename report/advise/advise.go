// Package advise is what to do about it: the findings as a table of rules, the advisor that
// derives key designs from the mapping and ranks them on the subsample, the uniqueness fix,
// index offers, the declared queries, the next steps and the designs as mapping files.
package advise

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
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
//	hash_prefix  [md5(B).substr(0,4) + B][R...]              the guide's hash prefix ([md5(B).substr(0,4)][B] of a blob)
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
	tradeOff string
	cols     []string // source columns the key reads (it tells their values apart)
	salted   bool     // led by random(n): rows also need the same salt to collide
	add      []string // columns appended for uniqueness (the smallest key change)
	// keepMapping: the mapping as it is but for the key (the mapping with the key change)
	keepMapping bool
	// rewrite: the mapping's key with a column rewritten one-to-one (long(), code()): it
	// overwrites what the mapping overwrites
	rewrite bool
	dict    transform.Dict // a dictionary the key's code() reads, added to target.codes
	// shortens: the derived design of this id with a long() or code() rewrite on top (combine);
	// codeOf: the same for a code()
	shortens, codeOf string
}

// baseKey is a source-column order the advisor derives designs from: the source key, or the
// order a declared query wants (its equality columns, its range column, then the rest).
type baseKey struct {
	prefix string // id prefix: "" for the source key, "query_order_" ...
	label  string // name prefix for humans
	cols   []string
	// newest: a column a declared newest-first query reads right after the columns it fixes,
	// so the key can store it DESC (the guide's [hostname][log-event][timestamp DESC]); "" for none
	newest string
}

// maxQueryBases bounds the query-ordered keys derived (one per declared query, distinct).
const maxQueryBases = 2

// altSubsampleForPlan bounds the rows a derived design's quantile plan is placed from.
const AltPlanRows = 20000

// quoteName writes a column name for a key expression: as it is when it is a plain name
// (letters, digits, _ and -, as the mapping language reads them), else in backquotes.
func quoteName(s string) string {
	plain := s != ""
	for i, c := range s {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c == '-' || c >= '0' && c <= '9'):
		default:
			plain = false
		}
	}
	switch strings.ToLower(s) {
	case "as", "asc", "desc", "null", "true", "false", "and", "or", "not":
		plain = false
	}
	if plain && !strings.HasSuffix(s, "-") {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// scalarCQL is a scalar CQL type's name as the checks below know it: normalized, and a
// timestamp without the unit a mapping gives it (timestamp(us) is a timestamp).
func scalarCQL(t string) string {
	t = pipeline.NormalizeSourceType(t)
	if strings.HasPrefix(t, "timestamp(") {
		return "timestamp"
	}
	return t
}

func isIntegralCQL(t string) bool {
	switch scalarCQL(t) {
	case "bigint", "int", "smallint", "tinyint", "varint", "counter", "timestamp", "date", "time":
		return true
	}
	return false
}

func isTimeCQL(t string) bool {
	switch scalarCQL(t) {
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

// SourceKey is the mapping's key without rewrites: the source columns the key reads, in order.
func SourceKey(prog *transform.Program) []string {
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

// baseKeys are the source-column orders designs are derived from: the source key, then for each
// declared query (at most maxQueryBases distinct ones) the guide's order for it: the columns it
// compares by equality (those of the source key first, in key order), its range column, then the
// rest of the source key ([hostname][log-event][ts] for "hostname, log-event = ? and ts range").
func baseKeys(prog *transform.Program, queries []transform.Query) []baseKey {
	sk := SourceKey(prog)
	if len(sk) == 0 {
		return nil
	}
	out := []baseKey{{cols: sk}}
	seen := map[string]bool{strings.Join(sk, "\x00"): true}
	for _, q := range queries {
		if len(q.Equal) == 0 {
			continue // a range alone: the source key or its bucket already lead with what they can
		}
		order := queryOrder(prog, sk, q)
		k := strings.Join(order, "\x00")
		if seen[k] || len(out)-1 >= maxQueryBases {
			continue
		}
		seen[k] = true
		prefix, label := "query_order_", "query order"
		if len(out) > 1 {
			prefix, label = fmt.Sprintf("query%d_order_", len(out)), fmt.Sprintf("query %d order", len(out))
		}
		out = append(out, baseKey{prefix: prefix, label: label, cols: order})
	}
	for i := range out {
		for _, q := range queries {
			if q.NewestFirst && readsInOrder(out[i].cols, q) {
				out[i].newest = q.Range
				break
			}
		}
	}
	return out
}

// queryOrder is the guide's key for query q over source key sk: its equality columns (those of
// the source key first, in key order), its range column, then the rest of the source key.
func queryOrder(prog *transform.Program, sk []string, q transform.Query) []string {
	var order []string
	has := map[string]bool{}
	push := func(c string) {
		if !has[c] && prog.Source().Index(c) >= 0 {
			has[c] = true
			order = append(order, c)
		}
	}
	eq := map[string]bool{}
	for _, c := range q.Equal {
		eq[c] = true
	}
	for _, c := range sk {
		if eq[c] {
			push(c)
		}
	}
	for _, c := range q.Equal {
		push(c)
	}
	if q.Range != "" {
		push(q.Range)
	}
	for _, c := range sk {
		push(c)
	}
	return order
}

// readsInOrder: the key columns cols start with the query's equality columns (in any order),
// then its range column: a scan returns the rows in the range column's order.
func readsInOrder(cols []string, q transform.Query) bool {
	n := len(q.Equal)
	if q.Range == "" || len(cols) <= n || cols[n] != q.Range {
		return false
	}
	for _, c := range cols[:n] {
		if !slices.Contains(q.Equal, c) {
			return false
		}
	}
	return true
}

// bracketedDesc writes key columns as bracketed, the column desc declared DESC.
func bracketedDesc(cols []string, desc string) string {
	s := ""
	for _, c := range cols {
		if c == desc {
			s += "[" + quoteName(c) + " DESC]"
		} else {
			s += "[" + quoteName(c) + "]"
		}
	}
	return s
}

// deriveSpecs are the designs derived from one base key [B][R...] (plus add, appended), over n
// regions.
func deriveSpecs(prog *transform.Program, m *transform.Mapping, base baseKey, add []string, n int, buckets map[string]bucketInput) []altSpec {
	key := base.cols
	b := key[0]
	taken := takenNames(prog, m)
	bq := quoteName(b)
	ns := strconv.Itoa(n)
	btype := ""
	if i := prog.Source().Index(b); i >= 0 {
		btype = prog.Source()[i].Type
	}
	id, name := specNames{base}.id, specNames{base}.name
	// columns of the change the key already reads need not be added again
	in := map[string]bool{}
	for _, c := range key {
		in[c] = true
	}
	var extra []string
	for _, c := range add {
		if !in[c] {
			extra = append(extra, c)
		}
	}
	add = extra
	cols := append(append([]string(nil), key...), add...)
	rest := Bracketed(key[1:]) + Bracketed(add)
	hashPk, hashHow := hashPrefix(bq, freeName("rk_hash", taken), blobColumn(prog, b))
	specs := []altSpec{
		{id: id("source_key"), name: name("source key (no rewrite)"), pk: "[" + bq + "]" + rest,
			tradeOff: fmt.Sprintf("Every query stays as it is: GET by the full key, a SCAN of one %s and a range of %s are single key ranges. Writes go wherever %s's values fall: monotonic or few values make hotspots.", b, b, b)},
		{id: id("hash_prefix"), name: name("hash prefix"), pk: hashPk + rest,
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (the client computes %s). A range of %s values is no longer a key range: it becomes a scan of every region.", b, fmt.Sprintf(hashHow, b, b), b)},
	}
	if !blobColumn(prog, b) { // reverse() is text: a blob's bytes are not
		specs = append(specs, altSpec{id: id("reverse"), name: name("reversed first column"), pk: "[reverse(" + bq + ") AS " + freeName("rk_rev", taken) + "]" + rest,
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (the client reverses the value). Ranges of %s are lost (a scan of every region); it spreads only when the end of %s varies fastest (sequence numbers, ids).", b, b, b)})
	}
	if base.newest != "" {
		// the guide's DESC for a newest-first query: a SCAN returns the latest rows first
		specs = append(specs, altSpec{id: id("newest_first"), name: name("newest first (" + base.newest + " DESC)"), pk: bracketedDesc(key, base.newest) + Bracketed(add),
			tradeOff: fmt.Sprintf("As the source key, with %s stored DESC: a SCAN returns the newest rows first, without reading backwards or sorting (the guide's [hostname][log-event][timestamp DESC]). An oldest-first read of %s becomes the backwards one.", base.newest, base.newest)})
	}
	if base.newest != "" && base.newest != b {
		// the hash prefix and the guide's DESC together: spread writes of an incremental first
		// column, and a SCAN of one of its values returns the newest rows first
		specs = append(specs, altSpec{id: id("hash_prefix_newest_first"), name: name("hash prefix, " + base.newest + " DESC"), pk: hashPk + bracketedDesc(key[1:], base.newest) + Bracketed(add),
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single (the client computes %s), and the SCAN returns the newest rows first (%s DESC, the guide's [userid][orderid DESC]). A range of %s values is no longer a key range: it becomes a scan of every region.", b, fmt.Sprintf(hashHow, b, b), base.newest, b)})
	}
	if len(key) > 1 {
		specs = append(specs, nextColumnSpecs(key, add, taken, id, name, blobColumn(prog, key[1]))...)
	}
	if isIntegralCQL(btype) {
		specs = append(specs, bucketSpecs(base, btype, rest, n, buckets, taken, id, name)...)
	}
	specs = append(specs, altSpec{id: id("salt"), name: name("salt"), pk: "[random(" + ns + ") AS " + freeName("rk_salt", taken) + "][" + bq + "]" + rest, salted: true,
		tradeOff: fmt.Sprintf("Writes spread evenly whatever %s looks like, but the salt cannot be computed from the key: %s.", b, transform.SaltCost(int64(n)))})
	// drop designs with too many key columns
	out := specs[:0]
	for _, s := range specs {
		if strings.Count(s.pk, "][")+1 <= transform.MaxKeyColumns {
			s.cols, s.add = cols, add
			out = append(out, s)
		}
	}
	return out
}

// takenNames are the column names a design's new key columns must not take: the source's and
// the mapping's target columns, in lower case.
func takenNames(prog *transform.Program, m *transform.Mapping) map[string]bool {
	taken := map[string]bool{}
	for _, c := range prog.Source() {
		taken[strings.ToLower(c.Name)] = true
	}
	for _, e := range m.Target.Columns {
		taken[strings.ToLower(e.Name)] = true
	}
	return taken
}

// specNames names the designs derived from a base: ids with its prefix, names with its label.
type specNames struct{ base baseKey }

func (n specNames) id(s string) string {
	if n.base.prefix == "" {
		return s
	}
	if s == "source_key" {
		return strings.TrimSuffix(n.base.prefix, "_")
	}
	return n.base.prefix + s
}

func (n specNames) name(s string) string {
	if n.base.label == "" {
		return s
	}
	if s == "source key (no rewrite)" {
		return n.base.label + " (" + strings.Join(n.base.cols, ", ") + ")"
	}
	return n.base.label + " + " + s
}

// nextColumnSpecs are the designs that rewrite the key column after the first (the guide's
// reverse(id) and hash(id) + id), for a key of two columns or more.
func nextColumnSpecs(key, add []string, taken map[string]bool, id, name func(string) string, blob bool) []altSpec {
	// the guide's reverse(id) on the column after the first: the writes of one value of the
	// first column spread over its key range when the end of the id varies fastest
	r0, b := key[1], key[0]
	bq, rq := quoteName(b), quoteName(r0)
	hashPk, hashHow := hashPrefix(rq, freeName("rk_hash", taken), blob)
	var specs []altSpec
	if !blob { // reverse() is text: a blob's bytes are not
		specs = append(specs, altSpec{id: id("reverse_next"), name: name("reversed " + r0), pk: "[" + bq + "][reverse(" + rq + ") AS " + freeName("rk_rev", taken) + "]" + Bracketed(key[2:]) + Bracketed(add),
			tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single key ranges (the client reverses %s); the writes of one %s spread over its key range when the end of %s varies fastest (sequence numbers, ids). A range of %s within one %s becomes a scan of the whole %s.", b, r0, b, r0, r0, b, b)})
	}
	// the guide's hash(id) + id on the column after the first: an id that rises within each
	// value of the first column no longer writes at the end of the value's range
	return append(specs, altSpec{id: id("hash_next"), name: name("hash prefix on " + r0), pk: "[" + bq + "]" + hashPk + Bracketed(key[2:]) + Bracketed(add),
		tradeOff: fmt.Sprintf("GET and a SCAN of one %s stay single key ranges (the client computes %s); the writes of one %s spread over its whole key range, so the regions Lindorm splits it into share them. A range of %s within one %s becomes a scan of the whole %s.", b, fmt.Sprintf(hashHow, r0, r0), b, r0, b, b)})
}

// hashPrefix is the guide's hash(id) + id on column q (quoted), the prefix named as: the key
// element(s) and how the client computes it (a format of the column's name, twice). A blob's
// bytes are not text: its prefix is a key column of its own, before the blob, which stays last as
// Lindorm's VARBINARY key column must ("md5(b).substr(0,4) + b" would reject every blob that is
// not UTF-8).
func hashPrefix(q, as string, blob bool) (pk, how string) {
	if blob {
		return "[md5(" + q + ").substr(0,4) AS " + as + "][" + q + "]", "md5(%s).substr(0,4), then %s"
	}
	return "[md5(" + q + ").substr(0,4) + " + q + " AS " + as + "]", "md5(%s).substr(0,4) + %s"
}

// blobColumn tells whether source column name is a blob (a VARBINARY key column).
func blobColumn(prog *transform.Program, name string) bool {
	i := prog.Source().Index(name)
	return i >= 0 && pipeline.NormalizeSourceType(prog.Source()[i].Type) == "blob"
}

// bucketSpecs are the designs that put a modulo bucket of an integral first column before it
// (buckets: the bucket the mapping suggests for a column, if any), newest first too when the
// base is newest first by that column.
func bucketSpecs(base baseKey, btype, rest string, n int, buckets map[string]bucketInput, taken map[string]bool, id, name func(string) string) []altSpec {
	b, bq, ns := base.cols[0], quoteName(base.cols[0]), strconv.Itoa(n)
	bk, ok := buckets[b]
	if !ok {
		bk = bucketInput{expr: bq + " % " + ns}
	}
	tradeOff := fmt.Sprintf("GET and a SCAN of one %s stay single (bucket = %s). A range of %s%s becomes %d scans, one per bucket, merged by the client.", b, bk.expr, b, timeNote(btype), n)
	if bk.other {
		tradeOff = fmt.Sprintf("GET stays single (bucket = %s). A SCAN of one %s and a range of %s%s become %d scans, one per bucket, merged by the client.", bk.expr, b, b, timeNote(btype), n)
	}
	specs := []altSpec{{id: id("bucket"), name: name("modulo bucket"), pk: "[" + bk.expr + " AS " + freeName("rk_bucket", taken) + "][" + bq + "]" + rest,
		tradeOff: bk.why + tradeOff}}
	if base.newest == b {
		specs = append(specs, altSpec{id: id("bucket_newest_first"), name: name("modulo bucket, " + b + " DESC"), pk: "[" + bk.expr + " AS " + freeName("rk_bucket", taken) + "][" + bq + " DESC]" + rest,
			tradeOff: bk.why + strings.Replace(tradeOff, "merged by the client.", fmt.Sprintf("each newest first (%s DESC), merged by the client.", b), 1)})
	}
	return specs
}

// colMask is the bit mask of source columns (bit i: column i); ok is false when a column is not
// among the first maxHashedColumns (the collision check cannot count it).
func colMask(src pipeline.SourceSchema, cols []string) (uint64, bool) {
	var m uint64
	for _, c := range cols {
		i := src.Index(c)
		if i < 0 || i >= collide.MaxHashedColumns {
			return 0, false
		}
		m |= 1 << uint(i)
	}
	return m, true
}

// CompileAlt builds a derived design: the mapping with another primary key and no regions:
// section. target.columns entries named like a source key column are dropped (so [channel] is the
// source's channel, not code(channel)); if it still does not compile, every entry is dropped.
// With keep, only the primary key changes (the mapping's own design with a column added).
func CompileAlt(prog *transform.Program, m *transform.Mapping, pk string, keep bool, dict transform.Dict) (*transform.Program, model.MappingEdit, error) {
	ed := model.MappingEdit{Pk: pk, KeepRegions: keep, Codes: dict}
	m2 := *m
	m2.Target.PrimaryKey = pk
	if dict.Name != "" {
		m2.Target.Codes = append(slices.Clip(m.Target.Codes), dict)
	}
	if keep {
		p, err := transform.Compile(&m2, prog.Source())
		return p, ed, err
	}
	key := map[string]bool{}
	for _, c := range SourceKey(prog) {
		key[strings.ToLower(c)] = true
	}
	m2.Regions = nil
	m2.Target.Columns = nil
	for _, e := range m.Target.Columns {
		if !key[strings.ToLower(e.Name)] {
			m2.Target.Columns = append(m2.Target.Columns, e)
		} else {
			ed.DropColumns = append(ed.DropColumns, e.Name)
		}
	}
	m2.Target.Exclude = nil
	for _, x := range m.Target.Exclude {
		if !key[strings.ToLower(x)] {
			m2.Target.Exclude = append(m2.Target.Exclude, x)
		} else {
			ed.DropExclude = append(ed.DropExclude, x)
		}
	}
	p, err := transform.Compile(&m2, prog.Source())
	if err != nil && len(m2.Target.Columns) > 0 {
		m2.Target.Columns = nil
		ed.DropAll = true
		p, err = transform.Compile(&m2, prog.Source())
	}
	return p, ed, err
}

// altResult is one design's figures on the subsample.
type altResult struct {
	model.Alternative
	keysHash uint64 // identity of the key tuples produced, to recognise the mapping's own design
	prog     *transform.Program
}

// evalDesign analyses a design on the subsample (in write order) with a plan of n regions. wo
// are the subsample's write-order values (nil in arrival order), analysed the rows it was drawn
// from: the first key column is judged by the write-order model. srcHashes are hashRecord of
// each subsample record (the same for every design). The keys are routed once the plan, placed
// from their sample, is known.
func evalDesign(prog *transform.Program, recs []pipeline.Record, srcHashes []uint64, n int, wo []int64, analysed int64, inferred bool) (altResult, error) {
	k := designKeysOf(prog, recs, srcHashes, n, wo)
	// each part its own variable, each dead once used: k would keep them all alive (and scanned
	// by the collector, which a memory limit runs) until the last is used
	keys, pairs, sample, firsts, firstWO := k.keys, k.pairs, k.sample, k.firsts, k.firstWO
	types, desc, ident, rejected, codes := k.types, k.desc, k.ident, k.rejected, k.codes
	var res altResult
	plan, err := prog.PlanRegions(transform.RegionRequest{Count: n, Sample: sample})
	if err != nil {
		return res, err
	}
	d := collide.NewDesign(prog, plan)
	a := collide.NewAcc(d)
	a.Rejected, a.Codes = rejected, codes
	w := collide.NewWindows(plan.Count(), int64(len(recs)), collide.AltWindows, collide.AltWindowsMax)
	for _, key := range keys {
		region := d.Route(key[0])
		a.KeyRow(key, region)
		w.Add(region)
	}
	firstDistinct, _ := a.Distinct()
	_, res.Incremental, _ = collide.IncrementalColumn(types[0], firsts, firstDistinct, firstWO, analysed, prog.TimeKey(0), inferred)
	res.SplitHotFactor = collide.SplitHotFactor(keys, types, desc, n)
	res.keysHash = ident
	res.Regions = plan.Count()
	res.Strategy = plan.Strategy
	res.RegionRows = a.RegRows
	res.RowsMaxMean, res.CV, _, _ = collide.RegionStats(a.RegRows)
	ws := w.Result()
	hs := collide.Summarize(ws, plan.Count(), w.Per)
	res.MeanTopShare, res.HotFactor = hs.MeanTopShare, hs.HotFactor
	for _, x := range ws {
		res.WindowTop = append(res.WindowTop, x.TopShare)
	}
	if a.Pairs > 0 {
		res.Monotonic = float64(max(a.Up, a.Down)) / float64(a.Pairs)
	}
	res.Distinct = firstDistinct
	res.Rejected = a.Rejected
	res.Rows = a.Rows
	if a.KeyHist.N > 0 {
		res.MeanKeyBytes = float64(a.KeyHist.Sum) / float64(a.KeyHist.N)
	}
	res.Collisions = subsampleCollisions(pairs)
	res.PrimaryKey = keyText(prog.KeyElements())
	if _, ns := prog.SaltColumns(); len(ns) > 0 {
		res.Salt = ns[0]
	}
	return res, nil
}

// designKeys are the subsample's keys under a design (designKeysOf), before they are routed.
type designKeys struct {
	keys     [][]pipeline.Value // each accepted record's key values
	pairs    []collide.SpillRec // each accepted record's key hash and source hash
	ident    uint64             // identity of the key tuples produced
	sample   [][]pipeline.Value // the whole rows a quantile plan is placed from
	types    []pipeline.Type    // the key columns' types
	desc     []bool             // and which are stored DESC
	firsts   []pipeline.Value   // the first key column of the accepted rows with a write order
	firstWO  []int64            // their write order (nil in arrival order)
	rejected int64              // records the design rejects
	codes    map[string]int64   // by code
}

// designKeysOf puts every subsample record through the design once: its key is kept, and so is
// the whole target row of the records a quantile plan is placed from (prog.SpreadRows'
// spread, none when the plan of n regions does not look at the data).
func designKeysOf(prog *transform.Program, recs []pipeline.Record, srcHashes []uint64, n int, wo []int64) designKeys {
	keyLen := prog.Target().KeyLen
	ev := prog.NewEvaluator()
	out := make([]pipeline.Value, len(prog.Target().Columns))
	b := &pipeline.Batch{Stream: "subsample", Records: recs} // the records in it: hash prefixes computed eight at a time
	// locals, not the result's fields, in the loop: it runs for every subsample row of every design
	pairs := make([]collide.SpillRec, 0, len(recs))
	var ident uint64 = 1
	types := make([]pipeline.Type, keyLen)
	desc := make([]bool, keyLen)
	for i, ke := range prog.KeyElements() {
		types[i], desc[i] = ke.Type, ke.Desc
		if ke.Desc {
			ident = collide.Mix64(ident, uint64(i)+0xde5c) // the same values stored DESC are another design
		}
	}
	var sample [][]pipeline.Value
	var picks []int64
	if prog.PlanNeedsSample(n) {
		picks = pipeline.SpreadIndexes(int64(len(recs)), AltPlanRows)
		sample = make([][]pipeline.Value, 0, len(picks))
	}
	flat := make([]pipeline.Value, 0, len(recs)*keyLen) // the keys' values, keyLen a row
	var text stringArena
	keys := make([][]pipeline.Value, 0, len(recs))
	var rejected int64
	codes := map[string]int64{}
	firsts := make([]pipeline.Value, 0, len(recs))
	var firstWO []int64
	if wo != nil {
		firstWO = make([]int64, 0, len(recs))
	}
	for i := range recs {
		if i%1024 == 1023 {
			ev.Reset()
		}
		picked := len(picks) > 0 && picks[0] == int64(i)
		if picked {
			picks = picks[1:]
		}
		if e := ev.Apply(b, &recs[i], out); e != nil {
			rejected++
			codes[e.Code]++
			ident = collide.Mix64(ident, 0x5eed)
			continue
		}
		if picked && recs[i].Err == nil {
			row := slices.Clone(out)
			for k := range row {
				row[k].Str = text.clone(row[k].Str)
			}
			sample = append(sample, row)
		}
		kh := collide.HashValues(out[:keyLen])
		ident = collide.Mix64(ident^kh, uint64(i))
		pairs = append(pairs, collide.SpillRec{Key: kh, Src: srcHashes[i]})
		at := len(flat)
		for _, v := range out[:keyLen] {
			v.Str = text.clone(v.Str)
			flat = append(flat, v)
		}
		key := flat[at:len(flat):len(flat)]
		keys = append(keys, key)
		if wo == nil || wo[i] != collide.NoTime {
			firsts = append(firsts, key[0])
			if wo != nil {
				firstWO = append(firstWO, wo[i])
			}
		}
	}
	ev.Reset()
	return designKeys{keys: keys, pairs: pairs, ident: ident, sample: sample, types: types, desc: desc,
		firsts: firsts, firstWO: firstWO, rejected: rejected, codes: codes}
}

// subsampleCollisions counts the rows the subsample's keys overwrite: pairs sorted by key, the
// distinct sources of a key beyond its first.
func subsampleCollisions(pairs []collide.SpillRec) int64 {
	var n int64
	pairs, _ = collide.RadixSortBits(pairs, nil, 64)
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].Key == pairs[i].Key {
			j++
		}
		if j-i > 1 {
			srcs := make([]uint64, 0, j-i)
			for _, p := range pairs[i:j] {
				srcs = append(srcs, p.Src)
			}
			slices.Sort(srcs)
			n += int64(len(slices.Compact(srcs)) - 1)
		}
		i = j
	}
	return n
}

// Advisor derives the alternative designs, tells the collision check which column sets to count
// exactly (before the pass), evaluates the designs on the subsample (while the check runs) and
// puts the exact figures together (after it).
type Advisor struct {
	prog     *transform.Program
	mapping  *transform.Mapping
	workers  int    // designs evaluated at once
	workload string // transform.WorkloadReadsFirst or WorkloadWriteHeavy
	N        int    // regions analysed
	queries  []transform.Query
	bases    []baseKey
	Sets     []uint64 // column sets the collision check counts: one per base key (see setOf)
	setOf    map[uint64]int
	Specs    []altSpec
	rewrites []rewrite              // the mapping's key columns the guide's shortening applies to (AddRewrites)
	std      [3]transform.Query     // the standard reads of the source key: GET, one-value SCAN, range (Finish)
	buckets  map[string]bucketInput // the modulo bucket's input per first column (see spreadBuckets)
	// Wo are the subsample's write-order values (nil in arrival order), analysed the rows the
	// subsample was drawn from: designs are judged in the write-order model
	Wo       []int64
	Analysed int64
	// Inferred: Wo is a guess (a time column inferred as the creation time): a sequence is
	// judged incremental whatever it says
	Inferred bool
	Results  []altResult // [0] the mapping, then specs
	Errs     []error
}

func NewAdvisor(prog *transform.Program, m *transform.Mapping, queries []transform.Query, workers int, workload string, n int) *Advisor {
	a := &Advisor{prog: prog, mapping: m, workers: workers, workload: workload, N: n, queries: queries, setOf: map[uint64]int{}}
	if a.mapping == nil {
		return a
	}
	a.bases = baseKeys(a.prog, a.queries)
	for _, b := range a.bases {
		if m, ok := colMask(a.prog.Source(), b.cols); ok {
			if _, dup := a.setOf[m]; !dup {
				a.setOf[m] = len(a.Sets)
				a.Sets = append(a.Sets, m)
			}
		}
		a.Specs = append(a.Specs, deriveSpecs(a.prog, a.mapping, b, nil, n, nil)...)
	}
	return a
}

// Evaluate compiles and analyses the mapping's design and specs on the subsample, in parallel.
func (a *Advisor) Evaluate(recs []pipeline.Record, specs []altSpec, withMapping bool) ([]altResult, []error) {
	off := 0
	if withMapping {
		off = 1
	}
	results := make([]altResult, len(specs)+off)
	errs := make([]error, len(specs)+off)
	srcHashes := make([]uint64, len(recs))
	for i := range recs {
		srcHashes[i] = collide.HashRecord(recs[i].Values)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, a.workers))
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			prog := a.prog
			var ed model.MappingEdit
			if i >= off {
				s := specs[i-off]
				if prog, ed, errs[i] = CompileAlt(a.prog, a.mapping, s.pk, s.keepMapping, s.dict); errs[i] != nil {
					return
				}
				if prog.KeyOnly() {
					errs[i] = errors.New("key-only: " + prog.KeyOnlyMessage())
					return
				}
			}
			results[i], errs[i] = evalDesign(prog, recs, srcHashes, a.N, a.Wo, a.Analysed, a.Inferred)
			results[i].prog = prog
			results[i].Edit = ed
		}()
	}
	wg.Wait()
	return results, errs
}

// ExactFigures is what the collision check found for the advisor.
type ExactFigures struct {
	Mapping  collide.CollisionResult // the mapping's own key
	Sets     collide.CollisionResult // SetRows and SaltRows for advisor.sets (the same result unless the key has a salt)
	Suggest  *model.KeySuggestion    // the smallest key change for the mapping
	Derived  []string                // columns appended to every derived design (a verified suggestion), or nil
	Analysed int64                   // rows run through the mapping
	Rejected int64                   // rows the mapping rejected
	// SourceRejected is the part of Rejected the source gave as errors, which every design
	// rejects alike (the subsample holds none of them)
	SourceRejected int64
	SetsExact      bool // the collision check counted advisor.sets (over the rows analysed, as the uniqueness rule)
}

// Finish puts the advisor's table together: the mapping's design, the mapping with the suggested
// key change, and the derived designs (with the change appended when it is verified), with the
// exact overwritten rows of the collision check, ranked.
func (a *Advisor) Finish(recs []pipeline.Record, ex ExactFigures) []model.Alternative {
	if a.mapping == nil || len(recs) == 0 || len(a.Results) == 0 || a.Errs[0] != nil {
		return []model.Alternative{}
	}
	key := SourceKey(a.prog)
	a.std = standardQueries(key)
	own := a.mappingDesign(key, ex)
	list := []altResult{own}
	if x, ok := a.uniqueDesign(recs, ex); ok {
		list = append(list, x)
	}
	// derived designs: with the verified change appended (re-evaluated), else as analysed
	d := derived{specs: a.Specs, results: a.Results[1:], errs: a.Errs[1:]}
	if enumerated(&own.Alternative, a.N) && len(key) > 1 {
		d = a.withFirstLast(recs, key, d)
	}
	if len(ex.Derived) > 0 {
		d = a.withChange(recs, ex.Derived, d)
	}
	// the subsample is drawn from the rows the source gave without an error
	list = a.addDerived(list, d, ex, float64(ex.Analysed-ex.SourceRejected)/float64(max(len(recs), 1)))
	return a.rank(list, d)
}

// derived are the derived designs with their figures on the subsample, in step.
type derived struct {
	specs   []altSpec
	results []altResult
	errs    []error
}

// withReads plans the standard reads and the declared queries on a design's key.
func (a *Advisor) withReads(res *altResult, prog *transform.Program) {
	shape := KeyShape(prog)
	res.Reads = model.Reads{Get: readsOf(PlanQuery(shape, a.std[0])), PrefixScan: readsOf(PlanQuery(shape, a.std[1])), RangeScan: readsOf(PlanQuery(shape, a.std[2]))}
	res.Queries = []model.QueryPlan{}
	for _, q := range a.queries {
		res.Queries = append(res.Queries, PlanQuery(shape, q))
	}
}

// mappingDesign is the mapping's own design, with the collision check's exact figures.
func (a *Advisor) mappingDesign(key []string, ex ExactFigures) altResult {
	b := ""
	if len(key) > 0 {
		b = key[0]
	}
	own := a.Results[0]
	own.ID, own.Name, own.IsMapping = "mapping", "the mapping", true
	own.PrimaryKey = MappingInfo(a.prog, a.mapping).PrimaryKey
	own.Overwritten, own.OverwrittenExact = ex.Mapping.Rows, true
	own.RejectedRows = ex.Rejected
	a.withReads(&own, a.prog)
	own.TradeOff = mappingTradeOff(own.Reads, b)
	if a.prog.KeyOnly() {
		// the figures stand, but Lindorm cannot write a row of it: it ranks after every design it can
		own.Error = "key-only: " + a.prog.KeyOnlyMessage()
	}
	return own
}

// uniqueDesign is the mapping with the smallest key change that removes its collisions, when
// the collision check found one.
func (a *Advisor) uniqueDesign(recs []pipeline.Record, ex ExactFigures) (altResult, bool) {
	s := ex.Suggest
	if s == nil || !s.SeparatesAll || len(s.Add) == 0 {
		return altResult{}, false
	}
	spec := altSpec{id: "mapping_unique", name: "the mapping + " + strings.Join(s.Add, ", "), pk: a.mapping.Target.PrimaryKey + Bracketed(s.Add), add: s.Add, keepMapping: true,
		tradeOff: "The mapping's design with " + ListText(s.Add) + " appended to the key, the smallest change that tells every colliding row apart; reads and spread as the mapping's."}
	res, errs := a.Evaluate(recs, []altSpec{spec}, false)
	if errs[0] != nil {
		return altResult{}, false
	}
	x := res[0]
	x.ID, x.Name, x.TradeOff, x.Added = spec.id, spec.name, spec.tradeOff, spec.add
	// every compared pair differs in the change: exact when every pair was compared
	x.Overwritten, x.OverwrittenExact = 0, s.Checked
	x.RejectedRows = ex.Rejected
	a.withReads(&x, x.prog)
	return x, true
}

// withFirstLast adds, for an enumerated first column (order types, channels), the same key with
// it last, plain, hashed and reversed: the guide's "Do not specify a column that contains
// enumerated data, such as order types ... as the first primary key column".
func (a *Advisor) withFirstLast(recs []pipeline.Record, key []string, d derived) derived {
	last := baseKey{prefix: "first_last_", label: key[0] + " last", cols: append(slices.Clone(key[1:]), key[0])}
	var more []altSpec
	for _, s := range deriveSpecs(a.prog, a.mapping, last, nil, a.N, a.buckets) {
		switch s.id {
		case "first_last", "first_last_hash_prefix", "first_last_reverse":
			more = append(more, s)
		}
	}
	res, es := a.Evaluate(recs, more, false)
	return derived{append(slices.Clip(d.specs), more...), append(slices.Clip(d.results), res...), append(slices.Clip(d.errs), es...)}
}

// withChange re-derives the designs with the verified key change appended and evaluates them;
// a design that would exceed the key column limit with the change keeps its plain form.
func (a *Advisor) withChange(recs []pipeline.Record, change []string, d derived) derived {
	var withAdd []altSpec
	for _, base := range a.bases {
		withAdd = append(withAdd, deriveSpecs(a.prog, a.mapping, base, change, a.N, a.buckets)...)
	}
	withAdd = append(withAdd, combine(withAdd, a.rewrites)...)
	for _, s := range d.specs {
		// the mapping's key rewritten: with the change, as the mapping_unique design
		if s.rewrite && strings.Count(s.pk, "][")+1+len(change) <= transform.MaxKeyColumns {
			s.pk, s.add = s.pk+Bracketed(change), change
			withAdd = append(withAdd, s)
		}
	}
	res, errs := a.Evaluate(recs, withAdd, false)
	byID := map[string]int{}
	for i, s := range withAdd {
		byID[s.id] = i
	}
	var out derived
	for i, s := range d.specs {
		if k, ok := byID[s.id]; ok {
			out.specs, out.results, out.errs = append(out.specs, withAdd[k]), append(out.results, res[k]), append(out.errs, errs[k])
		} else {
			out.specs, out.results, out.errs = append(out.specs, s), append(out.results, d.results[i]), append(out.errs, d.errs[i])
		}
	}
	return out
}

// addDerived lists the derived designs after the mapping's, with their rows lost (scale: rows
// analysed per subsample row); a design with the same keys as one listed folds into it.
func (a *Advisor) addDerived(list []altResult, d derived, ex ExactFigures, scale float64) []altResult {
	for k, s := range d.specs {
		res, err := d.results[k], d.errs[k]
		if err != nil {
			res = altResult{}
			res.Error = FirstLine(err.Error())
			res.PrimaryKey = s.pk
		}
		res.ID, res.Name, res.TradeOff, res.Added = s.id, s.name, s.tradeOff, s.add
		if err == nil {
			a.withReads(&res, res.prog)
			res.RejectedRows = ex.SourceRejected + int64(math.Round(float64(res.Rejected)*scale))
			a.overwritten(&res, s, ex, scale)
		}
		// the same keys as a design already listed: fold it
		dup := false
		for i := range list {
			if err == nil && list[i].Error == "" && res.keysHash == list[i].keysHash && res.Regions == list[i].Regions {
				if list[i].IsMapping && list[i].SameAs == "" {
					list[i].SameAs = s.id
					list[i].Name = "the mapping = " + s.name
					list[i].TradeOff = s.tradeOff
				}
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, res)
		}
	}
	return list
}

// overwritten sets the rows a derived design overwrites: exact from the collision check where
// it counted the columns the design reads, else scaled from the subsample.
func (a *Advisor) overwritten(res *altResult, s altSpec, ex ExactFigures, scale float64) {
	switch mask, ok := colMask(a.prog.Source(), s.cols); {
	case len(s.add) > 0:
		res.Overwritten, res.OverwrittenExact = 0, true // the change separates every colliding row
	case s.rewrite:
		res.Overwritten, res.OverwrittenExact = ex.Mapping.Rows, true // one-to-one: the mapping's collisions
	case ok && ex.SetsExact && a.setIndex(mask) >= 0 && s.salted:
		res.Overwritten, res.OverwrittenExact = ex.Sets.SaltRows[a.setIndex(mask)], true
	case ok && ex.SetsExact && a.setIndex(mask) >= 0:
		res.Overwritten, res.OverwrittenExact = ex.Sets.SetRows[a.setIndex(mask)], true
	default:
		res.Overwritten = int64(math.Round(float64(res.Collisions) * scale)) // only the subsample's
	}
}

// rank grades and ranks the designs listed. A shorter key on top of a design graded poor is
// left out: it shortens a design no one should take.
func (a *Advisor) rank(list []altResult, d derived) []model.Alternative {
	codeOf, shortens := map[string]string{}, map[string]string{}
	for _, s := range d.specs {
		if s.codeOf != "" {
			codeOf[s.id] = s.codeOf
		}
		if s.shortens != "" {
			shortens[s.id] = s.shortens
		}
	}
	for i := range list {
		list[i].LostRows = list[i].Overwritten + list[i].RejectedRows
		list[i].Grade = grade(&list[i].Alternative)
	}
	poor := map[string]bool{}
	for _, b := range list {
		if b.Grade == "poor" || b.Error != "" {
			poor[b.ID], poor[b.SameAs] = true, true
		}
	}
	list = slices.DeleteFunc(list, func(x altResult) bool { return shortens[x.ID] != "" && poor[shortens[x.ID]] })
	for i := range list {
		list[i].RankKeyBytes = list[i].MeanKeyBytes
		if base := codeOf[list[i].ID]; base != "" {
			// the design it shortens may be listed as the mapping it folded into
			for _, b := range list {
				if b.ID == base || b.SameAs == base {
					list[i].RankKeyBytes = b.MeanKeyBytes
				}
			}
		}
		// without declared queries the key's own order is the access pattern: no penalty
		list[i].EnumFirst = len(a.queries) > 0 && enumerated(&list[i].Alternative, a.N) && !scansByFirst(list[i].Queries)
	}
	n, writeHeavy := a.N, a.workload == transform.WorkloadWriteHeavy
	sort.SliceStable(list, func(i, j int) bool { return better(&list[i].Alternative, &list[j].Alternative, n, writeHeavy) })
	out := []model.Alternative{}
	for i := range list {
		list[i].Rank = i + 1
		if list[i].RegionRows == nil {
			list[i].RegionRows = []int64{}
		}
		if list[i].WindowTop == nil {
			list[i].WindowTop = []float64{}
		}
		if list[i].Queries == nil {
			list[i].Queries = []model.QueryPlan{}
		}
		if list[i].Added == nil {
			list[i].Added = []string{}
		}
		out = append(out, list[i].Alternative)
	}
	return out
}

func (a *Advisor) setIndex(mask uint64) int {
	if i, ok := a.setOf[mask]; ok {
		return i
	}
	return -1
}

func Bracketed(cols []string) string {
	s := ""
	for _, c := range cols {
		s += "[" + quoteName(c) + "]"
	}
	return s
}

// standardQueries are the three reads every design is scored on: a GET by the source key, a
// SCAN of one value of its first column, and a range of it.
func standardQueries(sk []string) [3]transform.Query {
	if len(sk) == 0 {
		return [3]transform.Query{}
	}
	return [3]transform.Query{{Equal: sk}, {Equal: sk[:1]}, {Range: sk[0]}}
}

func readsOf(p model.QueryPlan) int {
	if p.Access == "full_scan" || p.Scans < 0 {
		return -1
	}
	return int(min(p.Scans, math.MaxInt32))
}

// mappingTradeOff describes the mapping's own design from its reads.
func mappingTradeOff(r model.Reads, b string) string {
	one := func(n int) string {
		switch {
		case n < 0:
			return "a scan of every region"
		case n == 1:
			return "single"
		}
		return fmt.Sprintf("%d lookups or scans", n)
	}
	return fmt.Sprintf("As the mapping writes it: a GET by the source key is %s, a SCAN of one %s %s, a range of %s %s.", one(r.Get), b, one(r.PrefixScan), b, one(r.RangeScan))
}

// better orders designs: buildable first; then those that lose no rows; then those whose first
// column is not incremental. Then, reads first (the default): designs that do not concentrate
// writes (grade poor), then those without a salt (the primary-key guide salts "only when write
// distribution is more critical than read simplicity"), then the declared queries' cost: scans
// of the whole table, the lookups or scans they take, those that read rows they filter out,
// newest-first queries not served in key order; then the write spread (good before fair). With
// a write-heavy workload the write spread (grade) comes before the queries' cost and a salt is
// judged by its figures alone. Last the three standard reads, the hot factor and the key's length.
func better(a, b *model.Alternative, n int, writeHeavy bool) bool {
	if (a.Error == "") != (b.Error == "") {
		return a.Error == ""
	}
	if la, lb := loses(a), loses(b); la != lb {
		return !la
	}
	// a naive incremental key (every new row at the end of the key space) never ranks first
	if ia, ib := IncrementalFirst(a), IncrementalFirst(b); ia != ib {
		return !ia
	}
	ga, gb := gradeOrder(spreadGrade(a)), gradeOrder(spreadGrade(b))
	if !writeHeavy {
		if pa, pb := ga == 2, gb == 2; pa != pb {
			return !pa
		}
		if sa, sb := a.Salt > 0, b.Salt > 0; sa != sb {
			return !sa
		}
	}
	fa, oa, ua, sa := queryCost(a.Queries, n)
	fb, ob, ub, sb := queryCost(b.Queries, n)
	if fa != fb {
		return fa < fb
	}
	if a.EnumFirst != b.EnumFirst {
		return !a.EnumFirst
	}
	if writeHeavy && ga != gb {
		return ga < gb
	}
	if !writeHeavy && sa != sb {
		return sa < sb
	}
	if oa != ob {
		return oa < ob
	}
	if ua != ub {
		return ua < ub
	}
	if sa != sb {
		return sa < sb
	}
	if ga != gb {
		return ga < gb
	}
	if ca, cb := readCost(a.Reads, a.Regions), readCost(b.Reads, b.Regions); ca != cb {
		return ca < cb
	}
	// hot factors in bands of 0.5: a difference within the subsample's noise (a hash spreads a
	// window's rows at random, 1.2x; a cycling bucket or reversed sequence evenly, 1.0x) does not
	// make one design better than another
	if ha, hb := math.Floor(2*WriteHotFactor(a)), math.Floor(2*WriteHotFactor(b)); ha != hb {
		return ha < hb
	}
	// the same spread: the hash prefix before the reverse, the primary-key guide's first remedy
	// (a reversed value spreads only when its end varies fastest, "Works best when exact-match
	// lookups dominate"), then the shorter key (the guide's long() and code())
	if ra, rb := reversedKey(a), reversedKey(b); ra != rb {
		return !ra
	}
	return a.RankKeyBytes < b.RankKeyBytes
}

// reversedKey: a key column is reverse() of a source column.
func reversedKey(a *model.Alternative) bool {
	return strings.Contains(a.PrimaryKey, "reverse(")
}

// enumerated: the design's first column takes fewer values than the regions asked for (order
// types, status codes, channels), not a bucket or salt made to do so.
func enumerated(a *model.Alternative, n int) bool {
	return a.Error == "" && a.Rows > 0 && a.Distinct < int64(n) && a.Strategy != "int_bucket" && a.Salt == 0
}

// scansByFirst: a declared query is a SCAN of a key range (not a GET, not the whole table): it
// fixes the first key column, which then serves it as the wide-table guide's orders table serves
// a channel's orders.
func scansByFirst(plans []model.QueryPlan) bool {
	for _, p := range plans {
		if p.Access == "scan" {
			return true
		}
	}
	return false
}

// IncrementalFirst: the design's first column is incremental in write order: every new row
// lands at the end of the key space.
func IncrementalFirst(a *model.Alternative) bool {
	return a.Error == "" && a.Distinct > 1 && a.Incremental
}

// WriteHotFactor is the design's write hot factor over regions bounded by the full key (as
// Lindorm's size-based splits leave them) when measured, else over its pre-split plan.
func WriteHotFactor(a *model.Alternative) float64 {
	if a.SplitHotFactor > 0 {
		return a.SplitHotFactor
	}
	return a.HotFactor
}

// loses: rows overwritten, or more than 1% of the rows rejected.
func loses(a *model.Alternative) bool {
	rows := a.Rows + a.Rejected
	return a.Overwritten > 0 || rows > 0 && a.Rejected*100 > rows
}

func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}

// grade: poor when the design loses rows or concentrates writes (over regions bounded by the
// full key, the busiest region of a window takes more than 4x its share; or one region of the
// pre-split holds 4x the mean; or the first column is incremental); good when both stay within
// 2x, or the full-key spread does and the pre-split within 4x; fair in between.
func grade(a *model.Alternative) string {
	switch {
	case a.Error != "":
		return "poor"
	case loses(a):
		return "poor"
	}
	return spreadGrade(a)
}

// spreadGrade grades the write spread alone (ranking puts losses first on their own).
func spreadGrade(a *model.Alternative) string {
	switch {
	case a.Regions <= 1:
		return "fair"
	case WriteHotFactor(a) > 4 || a.RowsMaxMean > 4 || IncrementalFirst(a):
		return "poor"
	case WriteHotFactor(a) <= 2 && a.RowsMaxMean <= 2:
		return "good"
	case a.SplitHotFactor > 0 && a.SplitHotFactor <= 2 && a.RowsMaxMean <= 4:
		// the pre-split can only cut between first-column values; Lindorm splits a heavy value's
		// region by the rest of the key once it grows, and the writes spread over those regions
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
func readCost(r model.Reads, n int) int {
	c := 0
	for _, x := range []int{r.Get, r.PrefixScan, r.RangeScan} {
		if x < 0 {
			x = max(n, 1)
		}
		c += x
	}
	return c
}

// stringArena copies strings into shared blocks: the advisor keeps a key per subsample row, and
// one allocation per value would make its designs' evaluation mostly allocation.
type stringArena struct {
	block []byte
}

const stringArenaBlock = 64 << 10

// clone returns a copy of s that stays valid as long as the arena's blocks are referenced.
func (sa *stringArena) clone(s string) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > stringArenaBlock/8 {
		return strings.Clone(s)
	}
	if cap(sa.block)-len(sa.block) < len(s) {
		sa.block = make([]byte, 0, stringArenaBlock)
	}
	at := len(sa.block)
	sa.block = append(sa.block, s...)
	return unsafe.String(&sa.block[at], len(s))
}

func MappingInfo(prog *transform.Program, m *transform.Mapping) model.MappingInfo {
	mi := model.MappingInfo{Table: prog.Table(), Fingerprint: prog.Fingerprint(), TTLPlan: prog.TTLPlan()}
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
		mi.KeyColumns = append(mi.KeyColumns, model.KeyColumn{Name: ke.Name, Expr: ke.Expr, Type: ke.Type.String(), Desc: ke.Desc})
	}
	mi.PrimaryKey = sb.String()
	return mi
}
