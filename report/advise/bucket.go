package advise

import (
	"fmt"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
)

// The modulo bucket must spread. The guide's [ts % n] assumes ts varies in its low digits; a
// timestamp that advances in whole seconds (multiples of 1000 ms) gives ts % 16 only two
// values, and the bucket design then looks poor for a reason that is not the bucket's. So the
// advisor takes the guide's form where it spreads on the subsample, else the column over its
// step (ts / 1000 % 16: still computed from ts alone), else another integer column of the key
// that varies in its low digits (the incrementing id), else a hash of the column.

// bucketInput is the expression a modulo bucket is computed by, and why when it is not B % N.
type bucketInput struct {
	expr  string
	why   string
	other bool // computed from another key column: a SCAN of one B value needs every bucket
}

// bucketSpreads: the values modulo n fall into buckets no fuller than twice the even share.
func bucketSpreads(vals []int64, n int64) bool {
	if len(vals) == 0 || n <= 1 {
		return true
	}
	counts := map[int64]int{}
	most := 0
	for _, v := range vals {
		counts[v%n]++
		most = max(most, counts[v%n])
	}
	return int64(most)*n <= 2*int64(len(vals))
}

// intValues are the integer values of source column col over the records (nil if another kind
// or null appears).
func intValues(recs []pipeline.Record, col int) []int64 {
	out := make([]int64, 0, len(recs))
	for i := range recs {
		if col >= len(recs[i].Values) || recs[i].Values[col].Kind != pipeline.KindInt {
			return nil
		}
		out = append(out, recs[i].Values[col].Num)
	}
	return out
}

// SpreadBuckets picks each base key's bucket input on the subsample and derives the designs
// again with it.
func (a *Advisor) SpreadBuckets(recs []pipeline.Record) {
	if a.mapping == nil || len(recs) == 0 {
		return
	}
	src := a.prog.Source()
	n := int64(a.N)
	a.buckets = map[string]bucketInput{}
	for _, base := range a.bases {
		b := base.cols[0]
		if _, done := a.buckets[b]; done {
			continue
		}
		bi := src.Index(b)
		if bi < 0 || !isIntegralCQL(src[bi].Type) {
			continue
		}
		vals := intValues(recs, bi)
		if vals == nil || bucketSpreads(vals, n) {
			continue // the guide's b % n
		}
		bq := quoteName(b)
		few := fmt.Sprintf("%s %% %d takes few values here", b, n)
		if g := collide.Step(vals); g > 1 {
			scaled := make([]int64, len(vals))
			for i, v := range vals {
				scaled[i] = v / g
			}
			few = fmt.Sprintf("%s advances in steps of %d, so %s %% %d takes few values", b, g, b, n)
			if bucketSpreads(scaled, n) {
				a.buckets[b] = bucketInput{expr: fmt.Sprintf("%s / %d %% %d", bq, g, n), why: few + ": the bucket divides by the step first. "}
				continue
			}
		}
		chosen := false
		for _, c := range base.cols[1:] {
			ci := src.Index(c)
			if ci < 0 || !isIntegralCQL(src[ci].Type) {
				continue
			}
			if cv := intValues(recs, ci); cv != nil && bucketSpreads(cv, n) {
				a.buckets[b] = bucketInput{expr: fmt.Sprintf("%s %% %d", quoteName(c), n), other: true,
					why: fmt.Sprintf("%s; %s varies in its low digits, so the bucket is taken over it. ", few, c)}
				chosen = true
				break
			}
		}
		if !chosen {
			a.buckets[b] = bucketInput{expr: fmt.Sprintf("crc32(%s) %% %d", bq, n), why: few + ": the bucket is taken over a hash of it. "}
		}
	}
	a.Specs = nil
	for _, base := range a.bases {
		a.Specs = append(a.Specs, deriveSpecs(a.prog, a.mapping, base, nil, a.N, a.buckets)...)
	}
}
