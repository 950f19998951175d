package report

import (
	"encoding/binary"
	"math"
	"sort"
	"strings"
	"unsafe"

	"github.com/axiomhq/hyperloglog"
	"golang.org/x/sys/cpu"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// design is a compiled key design with the region plan it is judged against.
type design struct {
	prog    *transform.Program
	plan    pipeline.RegionPlan
	keyLen  int
	first   pipeline.Column
	srcCols []int    // source indexes the key is computed from (union, key order)
	srcName []string // their names
	// storeKey: the collision check's temp files keep each row's key values. Otherwise the key
	// of an example is recomputed from the source values it is computed from, which is exact
	// unless the key has a salt (random(n) hashes every value of the record).
	storeKey bool
	// split values for fast routing (see fastRoute)
	textSplits []string
	textPrefix []uint64
	intSplits  []int64
}

func newDesign(prog *transform.Program, plan pipeline.RegionPlan) *design {
	t := prog.Target()
	d := &design{prog: prog, plan: plan, keyLen: t.KeyLen, first: t.Columns[0], storeKey: prog.UsesSalt()}
	d.fastRoute()
	seen := map[string]bool{}
	for _, cols := range prog.KeySourceColumns() {
		for _, c := range cols {
			if !seen[c] {
				seen[c] = true
				if i := prog.Source().Index(c); i >= 0 {
					d.srcCols = append(d.srcCols, i)
					d.srcName = append(d.srcName, c)
				}
			}
		}
	}
	return d
}

// fastRoute prepares region routing without the generic comparison for the common cases: an
// ascending text or integer first column (the same answers as RegionPlan.Route).
func (d *design) fastRoute() {
	p := d.plan
	if p.Desc || len(p.Splits) == 0 {
		return
	}
	text, ints := true, true
	for _, v := range p.Splits {
		text = text && (v.Kind == pipeline.KindText || v.Kind == pipeline.KindBytes)
		ints = ints && v.Kind == pipeline.KindInt
	}
	switch {
	case text && (p.Type == pipeline.TypeVarchar || p.Type == pipeline.TypeVarbinary):
		for _, v := range p.Splits {
			d.textSplits = append(d.textSplits, v.Str)
			d.textPrefix = append(d.textPrefix, prefix8(v.Str))
		}
	case ints && isIntType(p.Type):
		for _, v := range p.Splits {
			d.intSplits = append(d.intSplits, v.Num)
		}
	}
}

// prefix8 is the first 8 bytes of s as a big-endian integer, zero-padded: prefix8(a) < prefix8(b)
// implies a < b, and equal prefixes leave the order to the rest.
func prefix8(s string) uint64 {
	if len(s) >= 8 {
		return binary.BigEndian.Uint64(unsafeBytes(s[:8]))
	}
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

func isIntType(t pipeline.Type) bool {
	switch t {
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeTimestamp, pipeline.TypeDate:
		return true
	}
	return false
}

// linearRouteSplits: plans with up to this many text splits route by counting them.
const linearRouteSplits = 64

// route is the region of a first-column value: the number of splits <= v.
func (d *design) route(v pipeline.Value) int {
	switch {
	case d.textSplits != nil && (v.Kind == pipeline.KindText || v.Kind == pipeline.KindBytes):
		// compare the first 8 bytes as a big-endian integer, the whole strings only on a tie
		pv := prefix8(v.Str)
		if len(d.textPrefix) <= linearRouteSplits {
			// count the splits below: no branch to mispredict, where a binary search
			// mispredicts about every other step
			n, tie := 0, false
			for _, ps := range d.textPrefix {
				if ps < pv {
					n++
				}
				tie = tie || ps == pv
			}
			if !tie {
				return n
			}
		}
		lo, hi := 0, len(d.textSplits)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if ps := d.textPrefix[m]; ps < pv || ps == pv && d.textSplits[m] <= v.Str {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	case d.intSplits != nil && v.Kind == pipeline.KindInt:
		lo, hi := 0, len(d.intSplits)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if d.intSplits[m] <= v.Num {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	return d.plan.Route(v)
}

// acc accumulates one design's figures over rows. Workers each own one and they are merged at the
// end; everything in it is order-independent except the within-run monotonicity counts, which
// the caller keeps consistent (see Monotonic).
//
// Pads: see worker.
type acc struct {
	_        cpu.CacheLinePad
	d        *design
	rows     int64
	rejected int64
	codes    map[string]int64
	rejEx    []RejectExample
	keyHist  *lengthHist
	rowBytes int64
	regRows  []int64
	regBytes []int64
	hll      *hyperloglog.Sketch
	ss       *spaceSaving
	lcp      []byte
	lcpSet   bool
	cols     []colAcc

	// monotonicity between consecutive accepted rows that this acc saw in sequence
	prev            pipeline.Value
	hasPrev         bool
	up, down, pairs int64
	scratch         []byte
	ssTick          uint32
	_               cpu.CacheLinePad
}

// ssSampleEvery: see acc.row.
const ssSampleEvery = 16

type colAcc struct {
	text     bool
	minLen   int
	maxLen   int
	sumLen   int64
	n        int64
	jsonLike int64
	longText int64
	// distinct values of a key column after the first (the first column's are acc.hll)
	hll *hyperloglog.Sketch
	// text columns: the longest prefix every value shares, and whether every value so far is a
	// number long() can store (digits only, within int64)
	lcp     []byte
	lcpSet  bool
	numeric bool
}

// maxNumericDigits: a digit string up to this long always fits a BIGINT (long()).
const maxNumericDigits = 18

// longTextBytes is the length above which a key value counts as long text.
const longTextBytes = 256

// rejectExamplesPerCode bounds the reject examples kept per code.
const rejectExamplesPerCode = 3

// heavyHitters is the number of Space-Saving counters for the first column's top values.
const heavyHitters = 128

func newAcc(d *design) *acc {
	a := &acc{d: d, codes: map[string]int64{}, keyHist: newLengthHist(),
		regRows: make([]int64, d.plan.Count()), regBytes: make([]int64, d.plan.Count()),
		hll: hyperloglog.New16NoSparse(), ss: newSpaceSaving(heavyHitters)}
	t := d.prog.Target()
	for i, c := range t.Columns[:d.keyLen] {
		ca := colAcc{text: c.Type == pipeline.TypeVarchar || c.Type == pipeline.TypeVarbinary, minLen: math.MaxInt, numeric: true}
		if i > 0 {
			// precision 14 (about 0.8% error, 16 KiB): its rules only ask below 16, 256 or a
			// region count, and the smaller registers stay in cache on the per-row path
			ca.hll = hyperloglog.NewNoSparse()
		}
		a.cols = append(a.cols, ca)
	}
	return a
}

// wantReject tells whether a reject with this ordinal would be kept as an example (so that its
// position is only formatted when needed).
func (a *acc) wantReject(code string, ord int64) bool {
	n, later := 0, false
	for _, e := range a.rejEx {
		if e.Code == code {
			n++
			later = later || e.ord > ord
		}
	}
	return n < rejectExamplesPerCode || later
}

func (a *acc) reject(code string, ord int64, ex func() RejectExample) {
	a.rejected++
	a.codes[code]++
	if !a.wantReject(code, ord) {
		return
	}
	e := ex()
	e.ord = ord
	a.rejEx = append(a.rejEx, e)
	a.trimRejects()
}

func (a *acc) trimRejects() {
	sort.SliceStable(a.rejEx, func(i, j int) bool { return a.rejEx[i].ord < a.rejEx[j].ord })
	per := map[string]int{}
	out := a.rejEx[:0]
	for _, e := range a.rejEx {
		if per[e.Code] < rejectExamplesPerCode {
			per[e.Code]++
			out = append(out, e)
		}
	}
	a.rejEx = out
}

// row adds an accepted target row routed to region.
func (a *acc) row(out []pipeline.Value, region int) {
	rb := int64(a.d.prog.RowBytes(out))
	a.rowBytes += rb
	a.regBytes[region] += rb
	a.keyRow(out, region)
}

// keyRow adds all of a row routed to region but its bytes (rowBytes, regBytes): out needs to
// hold only the key's values.
func (a *acc) keyRow(out []pipeline.Value, region int) {
	kb := a.d.prog.KeyBytes(out)
	a.rows++
	a.keyHist.add(kb)
	a.regRows[region]++
	v := out[0]
	h := hashValue(v, 0)
	a.hll.InsertHash(h)
	// Heavy hitters: every row while the counters are exact; once a value had to be evicted
	// (more than heavyHitters distinct values: the counts are estimates anyway), one row in
	// ssSampleEvery feeds them, with that weight. Shares above a few percent are unaffected,
	// and a high-cardinality column stops paying an eviction per row.
	if !a.ss.evicted {
		a.ss.add(h, v)
	} else if a.ssTick++; a.ssTick%ssSampleEvery == 0 {
		a.ss.addN(h, v, ssSampleEvery, 0)
	}
	// longest common prefix of the canonical text
	var txt []byte
	switch v.Kind {
	case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
		txt = unsafeBytes(v.Str)
	default:
		a.scratch = v.AppendCanonical(a.scratch[:0])
		txt = a.scratch
	}
	if !a.lcpSet {
		a.lcp = append(a.lcp[:0], txt...)
		a.lcpSet = true
	} else if len(a.lcp) > 0 {
		a.lcp = a.lcp[:commonPrefix(a.lcp, txt)]
	}
	for i := range a.cols {
		c := &a.cols[i]
		if c.hll != nil {
			c.hll.InsertHash(hashValue(out[i], 0))
		}
		if !c.text {
			continue
		}
		s := out[i].Str
		if i > 0 {
			// the first column's prefix is acc.lcp
			if !c.lcpSet {
				c.lcp, c.lcpSet = append(c.lcp[:0], s...), true
			} else if len(c.lcp) > 0 {
				c.lcp = c.lcp[:commonPrefix(c.lcp, unsafeBytes(s))]
			}
		}
		if c.numeric {
			c.numeric = isDigits(s)
		}
		n := len(s)
		c.n++
		c.sumLen += int64(n)
		c.maxLen = max(c.maxLen, n)
		c.minLen = min(c.minLen, n)
		if n > longTextBytes {
			c.longText++
		}
		if n >= 2 && looksJSON(s) {
			c.jsonLike++
		}
	}
	// monotonicity against the previous accepted row
	if a.hasPrev {
		c := pipeline.Compare(a.d.first.Type, a.prev, v)
		if c <= 0 {
			a.up++
		}
		if c >= 0 {
			a.down++
		}
		a.pairs++
	}
	a.prev, a.hasPrev = v, true
}

// isDigits: a non-empty decimal number without sign or leading zero that long() stores exactly
// ('2015122410'); a leading zero would be lost.
func isDigits(s string) bool {
	if len(s) == 0 || len(s) > maxNumericDigits || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// looksJSON: a JSON object or array (first and last non-space characters), as key columns holding
// documents show.
func looksJSON(s string) bool {
	i, j := 0, len(s)-1
	for i < j && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	for j > i && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
		j--
	}
	if j-i < 1 {
		return false
	}
	return s[i] == '{' && s[j] == '}' && (j-i == 1 || s[i+1] == '"' || s[i+1] == ' ' || s[i+1] == '\n') ||
		s[i] == '[' && s[j] == ']' && (j-i == 1 || s[i+1] == '{' || s[i+1] == '"' || s[i+1] == '[' || s[i+1] == ' ')
}

func (a *acc) merge(o *acc) {
	a.rows += o.rows
	a.rejected += o.rejected
	for k, v := range o.codes {
		a.codes[k] += v
	}
	a.rejEx = append(a.rejEx, o.rejEx...)
	a.trimRejects()
	a.keyHist.merge(o.keyHist)
	a.rowBytes += o.rowBytes
	for i := range a.regRows {
		a.regRows[i] += o.regRows[i]
		a.regBytes[i] += o.regBytes[i]
	}
	a.hll.Merge(o.hll)
	a.ss.merge(o.ss)
	switch {
	case !o.lcpSet:
	case !a.lcpSet:
		a.lcp, a.lcpSet = append([]byte(nil), o.lcp...), true
	default:
		a.lcp = a.lcp[:commonPrefix(a.lcp, o.lcp)]
	}
	for i := range a.cols {
		c, oc := &a.cols[i], &o.cols[i]
		c.maxLen = max(c.maxLen, oc.maxLen)
		c.minLen = min(c.minLen, oc.minLen)
		c.sumLen += oc.sumLen
		c.n += oc.n
		c.jsonLike += oc.jsonLike
		c.longText += oc.longText
		if c.hll != nil {
			c.hll.Merge(oc.hll)
		}
		c.numeric = c.numeric && oc.numeric
		switch {
		case !oc.lcpSet:
		case !c.lcpSet:
			c.lcp, c.lcpSet = append([]byte(nil), oc.lcp...), true
		default:
			c.lcp = c.lcp[:commonPrefix(c.lcp, oc.lcp)]
		}
	}
	a.up += o.up
	a.down += o.down
	a.pairs += o.pairs
}

// distinct is the first column's distinct count: exact while Space-Saving never evicted.
func (a *acc) distinct() (int64, bool) {
	if !a.ss.evicted {
		return int64(len(a.ss.entries)), true
	}
	return int64(a.hll.Estimate()), false
}

// regionStats are a plan's max/mean and coefficient of variation of rows per region.
func regionStats(rows []int64) (maxMean, cv float64, empty int, hottest []int) {
	n := len(rows)
	if n == 0 {
		return 0, 0, 0, nil
	}
	var sum, top int64
	for _, r := range rows {
		sum += r
		top = max(top, r)
		if r == 0 {
			empty++
		}
	}
	if sum == 0 {
		return 0, 0, empty, nil
	}
	mean := float64(sum) / float64(n)
	maxMean = float64(top) / mean
	var ss float64
	for _, r := range rows {
		d := float64(r) - mean
		ss += d * d
	}
	cv = math.Sqrt(ss/float64(n)) / mean
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return rows[idx[i]] > rows[idx[j]] })
	for _, i := range idx[:min(5, n)] {
		if rows[i] > 0 {
			hottest = append(hottest, i)
		}
	}
	return
}

// unsafeBytes views a string's bytes without copying; the bytes must not be modified.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// exampleKey is the key of a collision example: stored, or recomputed from the key's source
// values (the other source columns null, which no key column reads).
func (d *design) exampleKey(o origin) []pipeline.Value {
	if len(o.key) > 0 || o.trunc {
		return o.key
	}
	vals := make([]pipeline.Value, len(d.prog.Source()))
	for k, c := range d.srcCols {
		if k < len(o.src) {
			vals[c] = o.src[k]
		}
	}
	out := make([]pipeline.Value, len(d.prog.Target().Columns))
	ev := d.prog.NewEvaluator()
	rec := pipeline.Record{Values: vals, Seq: o.seq}
	// rec holds only the columns the key reads: its other values are null
	if ev.ApplyKey(&pipeline.Batch{Stream: o.stream}, &rec, out) != nil {
		return nil
	}
	key := out[:d.keyLen]
	for i := range key {
		key[i].Str = strings.Clone(key[i].Str)
	}
	return key
}
