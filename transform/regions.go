package transform

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// ErrNoSample is matched (errors.Is) by the error of PlanRegions when a quantile plan was given
// no sample rows: its caller, which knows whether it sampled a source, can say why there were none.
var ErrNoSample = errors.New("no sample rows to place quantile split keys from")

type noSample struct{ error }

func (noSample) Is(target error) bool { return target == ErrNoSample }

// RegionRequest is what PlanRegions needs beyond the mapping.
type RegionRequest struct {
	Count          int                // the CLI's --regions: overrides the mapping's regions: when > 0
	Sample         [][]pipeline.Value // target rows from a source sample (already Apply'd and cloned)
	EstimatedBytes int64              // total target bytes, for regions.size
}

// PlanRegions chooses the pre-split of the table: split values of the first key column.
//
//   - hex_prefix: the first column starts with k characters of a hex digest (md5(x).substr(0,k),
//     maybe + more): N equal slices of the hex space, splits floor(i*16^k/N) as k lowercase hex
//     digits (16 regions over 4 characters: "1000", "2000", ... "f000").
//   - int_bucket: the first column is x % n or random(n) (values 0..n-1): with N >= n regions,
//     one region per bucket (splits 1..n-1); with fewer, buckets grouped evenly.
//   - quantile: otherwise, split points at equal cumulative RowBytes of the sample's sorted first
//     column, deduplicated (never an empty range), so there may be fewer regions than asked;
//     a sample of no more distinct values than the regions asked gets one region per value. A
//     text value SPLITKEYS cannot carry (a comma, a backslash, a control character:
//     pipeline.SplitTextProblem) is never a split point: the next sample value is taken instead.
//   - explicit: regions.split_keys.
//   - single: one region (no regions: section and no Count, or a count of 1).
//
// The count is req.Count, else regions.count, else ceil(EstimatedBytes / regions.size) (at least
// 1). A DESC first column orders regions by descending values (plan.Desc).
// RegionsAsked is the region count a plan for req aims at: req.Count, else the mapping's count,
// its split keys plus one, or its size over req.EstimatedBytes; 1 without any. A quantile plan
// over fewer distinct first-column values places fewer regions than this.
func (p *Program) RegionsAsked(req RegionRequest) int {
	switch r := p.regions; {
	case req.Count > 0:
		return req.Count
	case r == nil:
		return 1
	case len(r.SplitKeys) > 0:
		return len(p.splits) + 1
	case r.Count > 0:
		return r.Count
	case r.Size > 0 && req.EstimatedBytes > 0:
		return int(min((req.EstimatedBytes+r.Size-1)/r.Size, 1<<20))
	}
	return 1
}

func (p *Program) PlanRegions(req RegionRequest) (pipeline.RegionPlan, error) {
	first := p.cols[0]
	plan := pipeline.RegionPlan{Type: first.typ.T, Desc: first.desc, Strategy: "single"}
	n := 1
	switch r := p.regions; {
	case req.Count < 0:
		return plan, fmt.Errorf("regions: count %d must be positive", req.Count)
	case req.Count > 0:
		n = req.Count
	case r == nil:
		return plan, nil
	case len(r.SplitKeys) > 0:
		plan.Splits = append([]pipeline.Value(nil), p.splits...)
		plan.Strategy = "explicit"
		return plan, nil
	case r.Count > 0:
		n = r.Count
	case r.Size > 0:
		if req.EstimatedBytes < 0 {
			return plan, errors.New("regions.size: the data size estimate is negative")
		}
		c := (req.EstimatedBytes + r.Size - 1) / r.Size
		if c > 1<<20 {
			c = 1 << 20
		}
		n = int(max(c, 1))
	}
	if n == 1 {
		return plan, nil
	}
	asked := req.Count > 0 || (p.regions != nil && p.regions.Count > 0) // not derived from a size estimate
	if k, exact, ok := hexPrefixWidth(first, p.cols); ok {
		if most := 1 << (4 * uint(k)); asked && n > most {
			return plan, fmt.Errorf("regions: %d regions asked for, but the first key column %q is a %d-hex-digit prefix, which splits into at most %d regions: ask for at most %d, or lengthen the prefix", n, first.name, k, most, most)
		}
		plan.Strategy = "hex_prefix"
		plan.Splits = hexSplits(n, k, plan.Desc, exact)
	} else if b, ok := bucketCount(first, p.cols); ok && isIntegral(first.typ.T) {
		if asked && int64(n) > b {
			return plan, fmt.Errorf("regions: %d regions asked for, but the first key column %q takes only %d values (a modulo bucket): ask for at most %d regions, or more buckets", n, first.name, b, b)
		}
		plan.Strategy = "int_bucket"
		plan.Splits = bucketSplits(n, b, plan.Desc)
	} else {
		if len(req.Sample) == 0 {
			return plan, noSample{fmt.Errorf("regions: %d regions on the first key column %q need a sample of the source to place quantile split keys (the column is not a hex-digest prefix or a modulo bucket); give a source to sample, or set regions.split_keys", n, first.name)}
		}
		plan.Strategy = "quantile"
		plan.Splits = p.quantileSplits(n, req.Sample)
	}
	return plan, nil
}

// EstimateBytes extrapolates the target data size from a sample of target rows and the
// source's row estimate; 0 when either is missing.
func (p *Program) EstimateBytes(sample [][]pipeline.Value, sourceRows int64) int64 {
	if sourceRows <= 0 || len(sample) == 0 {
		return 0
	}
	var total int64
	for _, r := range sample {
		total += int64(p.RowBytes(r))
	}
	return total / int64(len(sample)) * sourceRows
}

// SpreadRows maps a spread of at most n of recs (pipeline.SpreadIndexes: one in each of n equal
// stretches, not every k-th, which would line up with a key cycling with the row number) to
// target rows, for a plan placed from a subsample.
func (p *Program) SpreadRows(recs []pipeline.Record, n int) [][]pipeline.Value {
	idx := pipeline.SpreadIndexes(int64(len(recs)), n)
	spread := make([]pipeline.Record, len(idx))
	for k, i := range idx {
		spread[k] = recs[i]
	}
	return p.SampleRows(spread)
}

// PlanNeedsSample tells whether PlanRegions needs a sample of the source for this Count: for
// quantile split keys, or to size a regions.size plan. Hex-prefix, bucket, explicit and
// single-region plans do not look at the data, so a run can skip sampling them.
func (p *Program) PlanNeedsSample(count int) bool {
	r := p.regions
	if count <= 0 {
		switch {
		case r == nil || len(r.SplitKeys) > 0:
			return false
		case r.Count == 0 && r.Size > 0:
			return true
		}
		count = r.Count
	}
	if count <= 1 {
		return false
	}
	first := p.cols[0]
	if _, _, ok := hexPrefixWidth(first, p.cols); ok {
		return false
	}
	if _, ok := bucketCount(first, p.cols); ok && isIntegral(first.typ.T) {
		return false
	}
	return true
}

// CountFromSize tells whether a plan for count regions (0: the mapping's) takes its count from
// the data size (regions.size, without a count or split keys), so needs an estimate of it.
func (p *Program) CountFromSize(count int) bool {
	r := p.regions
	return count <= 0 && r != nil && r.Count == 0 && len(r.SplitKeys) == 0 && r.Size > 0
}

// descBoundaries turns ascending region boundaries (the first value of each region but the
// first, increasing) into split values for a DESC column, where a split starts a region in
// descending order: the regions are the same sets of values, listed from the highest, so each
// split is the largest value below a boundary. For exact-width values that is boundary-1; when
// longer values follow the prefix (md5(x).substr(0,4) + x), the boundary itself already sorts
// after every longer value sharing the previous prefix, so it stays.
func descBoundaries(b []uint64, exact bool) []uint64 {
	out := make([]uint64, 0, len(b))
	for i := len(b) - 1; i >= 0; i-- {
		v := b[i]
		if exact {
			v--
		}
		out = append(out, v)
	}
	return out
}

// definition follows a key column to the expression that computes it.
func definition(col colDef, cols []colDef) *texpr {
	t := col.expr
	for t != nil && t.op == opTgt {
		t = cols[t.idx].expr
	}
	return t
}

// hexPrefixWidth reports how many leading characters of the column are uniformly distributed
// lowercase hex: digest(x).substr(a, b) (b-a characters, exact: nothing follows), a whole digest
// (capped at 8), optionally followed by + anything (not exact).
func hexPrefixWidth(col colDef, cols []colDef) (k int, exact bool, ok bool) {
	if col.typ.T != pipeline.TypeVarchar {
		return 0, false, false
	}
	t := definition(col, cols)
	exact = true
	for t != nil {
		switch t.op {
		case opTgt:
			t = cols[t.idx].expr
			continue
		case opConcat:
			t, exact = t.args[0], false
			continue
		case opCast:
			if t.typ.T != pipeline.TypeVarchar {
				return 0, false, false
			}
			t = t.args[0]
			continue
		case opMD5, opSHA1, opSHA256:
			return 8, false, true
		case opSubstr:
			d := t.args[0]
			if d.op != opMD5 && d.op != opSHA1 && d.op != opSHA256 {
				return 0, false, false
			}
			a, ok := t.args[1].isConstInt()
			if !ok {
				return 0, false, false
			}
			b := int64(digestLen(d.op))
			if len(t.args) == 3 {
				if b, ok = t.args[2].isConstInt(); !ok {
					return 0, false, false
				}
			}
			if a < 0 || b <= a || b > int64(digestLen(d.op)) {
				return 0, false, false
			}
			if b-a > 8 {
				return 8, false, true
			}
			return int(b - a), exact, true
		}
		return 0, false, false
	}
	return 0, false, false
}

// hexSplits: boundaries floor(i*16^k/n) for i in 1..n-1 (deduplicated, never 0) as k lowercase
// hex digits; see descBoundaries for a DESC column.
func hexSplits(n, k int, desc, exact bool) []pipeline.Value {
	space := uint64(1) << (4 * uint(k)) // k <= 8
	var b []uint64
	for i := 1; i < n; i++ {
		v := space * uint64(i) / uint64(n)
		if v == 0 || len(b) > 0 && v == b[len(b)-1] {
			continue
		}
		b = append(b, v)
	}
	if desc {
		b = descBoundaries(b, exact)
	}
	out := make([]pipeline.Value, len(b))
	for i, v := range b {
		s := strconv.FormatUint(v, 16)
		out[i] = pipeline.Text(strings.Repeat("0", k-len(s)) + s)
	}
	return out
}

// bucketCount reports n when the column's values are always in [0, n): x % n with a constant n,
// or random(n).
func bucketCount(col colDef, cols []colDef) (int64, bool) {
	t := definition(col, cols)
	for t != nil {
		switch t.op {
		case opTgt:
			t = cols[t.idx].expr
			continue
		case opCast, opLong, opInt:
			if !isIntegral(t.typ.T) {
				return 0, false
			}
			t = t.args[0]
			continue
		case opMod:
			n, ok := t.args[1].isConstInt()
			if !ok || n == 0 || n == math.MinInt64 {
				return 0, false
			}
			if n < 0 {
				n = -n
			}
			return n, true
		case opRandom:
			return t.args[0].isConstInt()
		}
		return 0, false
	}
	return 0, false
}

// bucketSplits places the boundaries of n regions over buckets 0..b-1: every bucket its own
// region when n >= b, else floor(i*b/n); see descBoundaries for a DESC column.
func bucketSplits(n int, b int64, desc bool) []pipeline.Value {
	var bs []uint64
	if int64(n) >= b {
		for i := int64(1); i < b; i++ {
			bs = append(bs, uint64(i))
		}
	} else {
		for i := 1; i < n; i++ {
			v := new(big.Int).Mul(big.NewInt(b), big.NewInt(int64(i)))
			s := uint64(v.Div(v, big.NewInt(int64(n))).Int64())
			if s == 0 || len(bs) > 0 && s == bs[len(bs)-1] {
				continue
			}
			bs = append(bs, s)
		}
	}
	if desc {
		bs = descBoundaries(bs, true)
	}
	out := make([]pipeline.Value, len(bs))
	for i, v := range bs {
		out[i] = pipeline.Int(int64(v))
	}
	return out
}

// quantileSplits places splits so that each region holds about the same RowBytes of the sample.
// The sample is sorted in the column's order (DESC reverses), so splits come out in that order.
func (p *Program) quantileSplits(n int, sample [][]pipeline.Value) []pipeline.Value {
	typ, desc := p.cols[0].typ.T, p.cols[0].desc
	type item struct {
		v pipeline.Value
		w float64
	}
	items := make([]item, 0, len(sample))
	total := 0.0
	for _, row := range sample {
		if len(row) == 0 || row[0].Kind == pipeline.KindNull {
			continue
		}
		w := float64(p.RowBytes(row))
		items = append(items, item{row[0], w})
		total += w
	}
	if len(items) == 0 {
		return nil
	}
	cmp := func(a, b pipeline.Value) int {
		c := pipeline.Compare(typ, a, b)
		if desc {
			return -c
		}
		return c
	}
	// by value, ties in sample order (the index sort moves 4 bytes where items are 48)
	order := make([]int32, len(items))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp(items[a].v, items[b].v); c != 0 {
			return c
		}
		return int(a - b)
	})
	sorted := make([]item, len(items))
	for i, k := range order {
		sorted[i] = items[k]
	}
	items = sorted
	// No more distinct values than regions (a bucket written as text): every value its own
	// region, as an integer bucket gets; quantiles of uneven counts would fall a row short of a
	// value's start and leave two neighbours in one region.
	var every []pipeline.Value
	for i, last := 1, items[0].v; i < len(items); i++ {
		v := items[i].v
		if cmp(v, last) <= 0 || !splitWritable(typ, v) {
			continue
		}
		if len(every) == n-1 {
			every = nil
			break
		}
		last = v
		if isStringKind(v.Kind) {
			v.Str = strings.Clone(v.Str)
		}
		every = append(every, v)
	}
	if every != nil {
		return every
	}
	var out []pipeline.Value
	last := items[0].v // a split must be after the first value: no empty first region
	cum, j := 0.0, 0
	for i := 1; i < n; i++ {
		target := total * float64(i) / float64(n)
		for j < len(items) && cum+items[j].w/2 < target {
			cum += items[j].w
			j++
		}
		k := j // the next sample value that SPLITKEYS can carry
		for k < len(items) && !splitWritable(typ, items[k].v) {
			k++
		}
		if k >= len(items) {
			break
		}
		v := items[k].v
		if cmp(v, last) <= 0 {
			continue
		}
		last = v
		if isStringKind(v.Kind) {
			v.Str = strings.Clone(v.Str)
		}
		out = append(out, v)
	}
	return out
}

// splitWritable tells whether ddl.sql can write v as a point of SPLITKEYS: text without a
// comma, backslash or control character (pipeline.SplitTextProblem), and no float NaN (which
// sorts after every number; whether SPLITKEYS reads 'NaN' is not documented). Other types are
// written as digits, dates or hex.
func splitWritable(t pipeline.Type, v pipeline.Value) bool {
	if v.Kind == pipeline.KindFloat && math.IsNaN(v.Float()) {
		return false
	}
	if t == pipeline.TypeVarbinary || v.Kind != pipeline.KindText && v.Kind != pipeline.KindBytes {
		return true
	}
	return pipeline.SplitTextProblem(v.Str) == ""
}

// FormatSize writes a byte size for humans in binary units ("512 B", "1.5 GiB"); ParseSize
// reads it back (to the rounding of its one decimal).
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ParseSize reads a byte size: plain bytes ("1048576"), binary units (KiB, MiB, GiB, TiB, PiB)
// or decimal units (kB/KB, MB, GB, TB, PB), optionally with a fraction ("1.5GiB") and a space.
// Single-letter units (8G) are refused as ambiguous.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" || strings.Count(num, ".") > 1 || strings.HasPrefix(num, ".") || strings.HasSuffix(num, ".") {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit, e.g. 8GiB, 512MiB, 8GB", s)
	}
	var mult int64
	switch strings.ToLower(unit) {
	case "", "b":
		mult = 1
	case "kib":
		mult = 1 << 10
	case "mib":
		mult = 1 << 20
	case "gib":
		mult = 1 << 30
	case "tib":
		mult = 1 << 40
	case "pib":
		mult = 1 << 50
	case "kb":
		mult = 1e3
	case "mb":
		mult = 1e6
	case "gb":
		mult = 1e9
	case "tb":
		mult = 1e12
	case "pb":
		mult = 1e15
	case "k", "m", "g", "t", "p":
		return 0, fmt.Errorf("size %q: unit %q is ambiguous: write %siB (powers of 1024) or %sB (powers of 1000)", s, unit, strings.ToUpper(unit), strings.ToUpper(unit))
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB or PB)", s, unit)
	}
	whole, frac, _ := strings.Cut(num, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	n := w * mult
	if frac != "" {
		r, ok := new(big.Rat).SetString("0." + frac)
		if !ok {
			return 0, fmt.Errorf("size %q: bad number", s)
		}
		r.Mul(r, new(big.Rat).SetInt64(mult))
		f := new(big.Int).Quo(r.Num(), r.Denom())
		if !f.IsInt64() || n > math.MaxInt64-f.Int64() {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		n += f.Int64()
	}
	return n, nil
}
