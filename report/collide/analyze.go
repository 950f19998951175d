// Package collide is what the data says: the accumulators and sketches a report's pass fills
// (routing to regions, heavy hitters, distinct counts, key lengths), the spilled exact collision
// check, windows of writes, the time heatmap, the write-order model and the hot rows.
package collide

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/axiomhq/hyperloglog"
	"golang.org/x/sys/cpu"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// Design is a compiled key design with the region plan it is judged against.
type Design struct {
	prog    *transform.Program
	Plan    pipeline.RegionPlan
	KeyLen  int
	First   pipeline.Column
	SrcCols []int    // source indexes the key is computed from (union, key order)
	SrcName []string // their names
	// StoreKey: the collision check's temp files keep each row's key values. Otherwise the key
	// of an example is recomputed from the source values it is computed from, which is exact
	// unless the key has a salt (random(n) hashes every value of the record).
	StoreKey bool
	// split values for fast routing (see fastRoute)
	textSplits []string
	textPrefix []uint64
	intSplits  []int64
}

func NewDesign(prog *transform.Program, plan pipeline.RegionPlan) *Design {
	t := prog.Target()
	d := &Design{prog: prog, Plan: plan, KeyLen: t.KeyLen, First: t.Columns[0], StoreKey: prog.UsesSalt()}
	d.fastRoute()
	seen := map[string]bool{}
	for _, cols := range prog.KeySourceColumns() {
		for _, c := range cols {
			if !seen[c] {
				seen[c] = true
				if i := prog.Source().Index(c); i >= 0 {
					d.SrcCols = append(d.SrcCols, i)
					d.SrcName = append(d.SrcName, c)
				}
			}
		}
	}
	return d
}

// fastRoute prepares region routing without the generic comparison for the common cases: an
// ascending text or integer first column (the same answers as RegionPlan.Route).
func (d *Design) fastRoute() {
	p := d.Plan
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
	case ints && IsIntType(p.Type):
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

func IsIntType(t pipeline.Type) bool {
	switch t {
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeTimestamp, pipeline.TypeDate:
		return true
	}
	return false
}

// linearRouteSplits: plans with up to this many text splits route by counting them.
const linearRouteSplits = 64

// Route is the region of a first-column value: the number of splits <= v.
func (d *Design) Route(v pipeline.Value) int {
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
	return d.Plan.Route(v)
}

// Acc accumulates one design's figures over rows. Workers each own one and they are merged at the
// end; everything in it is order-independent except the within-run monotonicity counts, which
// the caller keeps consistent (see Monotonic).
//
// Pads: see worker.
type Acc struct {
	_        cpu.CacheLinePad
	d        *Design
	Rows     int64
	Rejected int64
	// SourceRejected is the rejected rows the source itself gave as errors (Record.Err: a
	// message that is no JSON, a delete), which every key design rejects alike
	SourceRejected int64
	Codes          map[string]int64
	RejEx          []model.RejectExample
	KeyHist        *lengthHist
	RowBytes       int64
	RegRows        []int64
	RegBytes       []int64
	Hll            *hyperloglog.Sketch
	Ss             *spaceSaving
	Lcp            []byte
	lcpSet         bool
	Cols           []colAcc

	// monotonicity between consecutive accepted rows that this acc saw in sequence
	Prev            pipeline.Value
	HasPrev         bool
	Up, Down, Pairs int64
	scratch         []byte
	ssTick          uint32
	_               cpu.CacheLinePad
}

// ssSampleEvery: see acc.row.
const ssSampleEvery = 16

type colAcc struct {
	Text     bool
	MinLen   int
	MaxLen   int
	SumLen   int64
	N        int64
	JsonLike int64
	LongText int64
	// distinct values of a key column after the first (the first column's are acc.hll)
	Hll *hyperloglog.Sketch
	// text columns: the longest prefix every value shares, and whether every value so far is a
	// number long() can store (digits only, within int64)
	Lcp     []byte
	lcpSet  bool
	Numeric bool
}

// maxNumericDigits: a digit string up to this long always fits a BIGINT (long()).
const maxNumericDigits = 18

// LongTextBytes is the length above which a key value counts as long text.
const LongTextBytes = 256

// RejectExamplesPerCode bounds the reject examples kept per code.
const RejectExamplesPerCode = 3

// heavyHitters is the number of Space-Saving counters for the first column's top values.
const heavyHitters = 128

func NewAcc(d *Design) *Acc {
	a := &Acc{d: d, Codes: map[string]int64{}, KeyHist: newLengthHist(),
		RegRows: make([]int64, d.Plan.Count()), RegBytes: make([]int64, d.Plan.Count()),
		Hll: hyperloglog.New16NoSparse(), Ss: newSpaceSaving(heavyHitters)}
	t := d.prog.Target()
	for i, c := range t.Columns[:d.KeyLen] {
		ca := colAcc{Text: c.Type == pipeline.TypeVarchar || c.Type == pipeline.TypeVarbinary, MinLen: math.MaxInt, Numeric: true}
		if i > 0 {
			// precision 14 (about 0.8% error, 16 KiB): its rules only ask below 16, 256 or a
			// region count, and the smaller registers stay in cache on the per-row path
			ca.Hll = hyperloglog.NewNoSparse()
		}
		a.Cols = append(a.Cols, ca)
	}
	return a
}

// wantReject tells whether a reject with this ordinal would be kept as an example (so that its
// position is only formatted when needed).
func (a *Acc) wantReject(code string, ord int64) bool {
	n, later := 0, false
	for _, e := range a.RejEx {
		if e.Code == code {
			n++
			later = later || e.Ord > ord
		}
	}
	return n < RejectExamplesPerCode || later
}

func (a *Acc) Reject(code string, ord int64, ex func() model.RejectExample) {
	a.Rejected++
	a.Codes[code]++
	if !a.wantReject(code, ord) {
		return
	}
	e := ex()
	e.Ord = ord
	a.RejEx = append(a.RejEx, e)
	a.trimRejects()
}

func (a *Acc) trimRejects() {
	sort.SliceStable(a.RejEx, func(i, j int) bool { return a.RejEx[i].Ord < a.RejEx[j].Ord })
	per := map[string]int{}
	out := a.RejEx[:0]
	for _, e := range a.RejEx {
		if per[e.Code] < RejectExamplesPerCode {
			per[e.Code]++
			out = append(out, e)
		}
	}
	a.RejEx = out
}

// Row adds an accepted target row routed to region.
func (a *Acc) Row(out []pipeline.Value, region int) {
	rb := int64(a.d.prog.RowBytes(out))
	a.RowBytes += rb
	a.RegBytes[region] += rb
	a.KeyRow(out, region)
}

// KeyRow adds all of a row routed to region but its bytes (rowBytes, regBytes): out needs to
// hold only the key's values.
func (a *Acc) KeyRow(out []pipeline.Value, region int) {
	kb := a.d.prog.KeyBytes(out)
	a.Rows++
	a.KeyHist.add(kb)
	a.RegRows[region]++
	v := out[0]
	h := HashValue(v, 0)
	a.Hll.InsertHash(h)
	// Heavy hitters: every row while the counters are exact; once a value had to be evicted
	// (more than heavyHitters distinct values: the counts are estimates anyway), one row in
	// ssSampleEvery feeds them, with that weight. Shares above a few percent are unaffected,
	// and a high-cardinality column stops paying an eviction per row.
	if !a.Ss.Evicted {
		a.Ss.add(h, v)
	} else if a.ssTick++; a.ssTick%ssSampleEvery == 0 {
		a.Ss.addN(h, v, ssSampleEvery, 0)
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
		a.Lcp = append(a.Lcp[:0], txt...)
		a.lcpSet = true
	} else if len(a.Lcp) > 0 {
		a.Lcp = a.Lcp[:commonPrefix(a.Lcp, txt)]
	}
	for i := range a.Cols {
		c := &a.Cols[i]
		if c.Hll != nil {
			c.Hll.InsertHash(HashValue(out[i], 0))
		}
		if !c.Text {
			continue
		}
		s := out[i].Str
		if i > 0 {
			// the first column's prefix is acc.lcp
			if !c.lcpSet {
				c.Lcp, c.lcpSet = append(c.Lcp[:0], s...), true
			} else if len(c.Lcp) > 0 {
				c.Lcp = c.Lcp[:commonPrefix(c.Lcp, unsafeBytes(s))]
			}
		}
		if c.Numeric {
			c.Numeric = isDigits(s)
		}
		n := len(s)
		c.N++
		c.SumLen += int64(n)
		c.MaxLen = max(c.MaxLen, n)
		c.MinLen = min(c.MinLen, n)
		if n > LongTextBytes {
			c.LongText++
		}
		if n >= 2 && looksJSON(s) {
			c.JsonLike++
		}
	}
	// monotonicity against the previous accepted row
	if a.HasPrev {
		c := pipeline.Compare(a.d.First.Type, a.Prev, v)
		if c <= 0 {
			a.Up++
		}
		if c >= 0 {
			a.Down++
		}
		a.Pairs++
	}
	a.Prev, a.HasPrev = v, true
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
	if s[i] == '[' && s[j] == ']' && j-i > 1 && strings.IndexByte("-0123456789tfn", s[i+1]) >= 0 {
		// an array of numbers, booleans or nulls (a list<int> or tuple in the key): JSON only if
		// it parses, so that text such as [tag] is not taken for it
		return json.Valid(unsafeBytes(s[i : j+1]))
	}
	return s[i] == '{' && s[j] == '}' && (j-i == 1 || s[i+1] == '"' || s[i+1] == ' ' || s[i+1] == '\n') ||
		s[i] == '[' && s[j] == ']' && (j-i == 1 || s[i+1] == '{' || s[i+1] == '"' || s[i+1] == '[' || s[i+1] == ' ')
}

func (a *Acc) Merge(o *Acc) {
	a.Rows += o.Rows
	a.Rejected += o.Rejected
	a.SourceRejected += o.SourceRejected
	for k, v := range o.Codes {
		a.Codes[k] += v
	}
	a.RejEx = append(a.RejEx, o.RejEx...)
	a.trimRejects()
	a.KeyHist.merge(o.KeyHist)
	a.RowBytes += o.RowBytes
	for i := range a.RegRows {
		a.RegRows[i] += o.RegRows[i]
		a.RegBytes[i] += o.RegBytes[i]
	}
	a.Hll.Merge(o.Hll)
	a.Ss.merge(o.Ss)
	switch {
	case !o.lcpSet:
	case !a.lcpSet:
		a.Lcp, a.lcpSet = append([]byte(nil), o.Lcp...), true
	default:
		a.Lcp = a.Lcp[:commonPrefix(a.Lcp, o.Lcp)]
	}
	for i := range a.Cols {
		c, oc := &a.Cols[i], &o.Cols[i]
		c.MaxLen = max(c.MaxLen, oc.MaxLen)
		c.MinLen = min(c.MinLen, oc.MinLen)
		c.SumLen += oc.SumLen
		c.N += oc.N
		c.JsonLike += oc.JsonLike
		c.LongText += oc.LongText
		if c.Hll != nil {
			c.Hll.Merge(oc.Hll)
		}
		c.Numeric = c.Numeric && oc.Numeric
		switch {
		case !oc.lcpSet:
		case !c.lcpSet:
			c.Lcp, c.lcpSet = append([]byte(nil), oc.Lcp...), true
		default:
			c.Lcp = c.Lcp[:commonPrefix(c.Lcp, oc.Lcp)]
		}
	}
	a.Up += o.Up
	a.Down += o.Down
	a.Pairs += o.Pairs
}

// Distinct is the first column's distinct count: exact while Space-Saving never evicted.
func (a *Acc) Distinct() (int64, bool) {
	if !a.Ss.Evicted {
		return int64(len(a.Ss.entries)), true
	}
	return int64(a.Hll.Estimate()), false
}

// RegionStats are a plan's max/mean and coefficient of variation of rows per region.
func RegionStats(rows []int64) (maxMean, cv float64, empty int, hottest []int) {
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

// ExampleKey is the key of a collision example: stored, or recomputed from the key's source
// values (the other source columns null, which no key column reads).
func (d *Design) ExampleKey(o origin) []pipeline.Value {
	if len(o.key) > 0 || o.trunc {
		return o.key
	}
	vals := make([]pipeline.Value, len(d.prog.Source()))
	for k, c := range d.SrcCols {
		if k < len(o.Src) {
			vals[c] = o.Src[k]
		}
	}
	out := make([]pipeline.Value, len(d.prog.Target().Columns))
	ev := d.prog.NewEvaluator()
	rec := pipeline.Record{Values: vals, Seq: o.Seq}
	// rec holds only the columns the key reads: its other values are null
	if ev.ApplyKey(&pipeline.Batch{Stream: o.Stream}, &rec, out) != nil {
		return nil
	}
	key := out[:d.KeyLen]
	for i := range key {
		key[i].Str = strings.Clone(key[i].Str)
	}
	return key
}

func MinTextLen(a *Acc) int {
	if c := a.Cols[0]; c.N > 0 {
		return c.MinLen
	}
	return 0
}

// DisplayValue renders a value for humans: canonical text, non-printable bytes and backslashes
// escaped, capped.
func DisplayValue(v pipeline.Value, maxLen int) string {
	s := v.String()
	if v.Kind == pipeline.KindNull {
		return "null"
	}
	var sb strings.Builder
	n := 0
	for i, r := range s {
		if n >= maxLen {
			sb.WriteString("…")
			break
		}
		switch {
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\\':
			sb.WriteString(`\\`) // else a\nb would read as the line break's escape
		case r == utf8.RuneError && invalidByte(s[i:]):
			// a byte that is not UTF-8 (text cut inside a character): the byte itself
			sb.WriteString("\\x")
			sb.WriteString(hex2(s[i]))
		case r < 0x20 || r == 0x7f:
			sb.WriteString("\\x")
			sb.WriteString(hex2(byte(r)))
		default:
			sb.WriteRune(r)
		}
		n++
	}
	return sb.String()
}

// invalidByte tells whether s starts with a byte that is not UTF-8 (where ranging over s gives
// U+FFFD for one byte).
func invalidByte(s string) bool {
	r, w := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && w == 1
}

func hex2(b byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[b>>4], h[b&15]})
}

func MaxLen(vals []string) int {
	n := 0
	for _, v := range vals {
		n = max(n, len(v))
	}
	return n
}
