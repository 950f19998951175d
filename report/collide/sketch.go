package collide

import (
	"sort"

	"github.com/rekey/rekey/pipeline"
)

// spaceSaving finds the most frequent values of a stream in fixed memory (Metwally et al.'s
// Space-Saving with k counters kept in a min-heap). A value's count is an overestimate by at
// most its err; count-err is a guaranteed lower bound. While the stream has no more than k
// distinct values nothing is evicted and every count is exact.
type spaceSaving struct {
	k       int
	entries []ssEntry
	heap    []int32 // entry indexes, a min-heap by count
	pos     []int32 // entry index -> heap position
	index   map[uint64]int32
	Evicted bool
}

type ssEntry struct {
	hash  uint64
	kind  pipeline.Kind
	i     int64
	s     []byte // the value's text, at most maxValueText bytes, reused across evictions
	trunc bool
	count int64
	err   int64
}

// maxValueText bounds the text kept for a top value (for display).
const maxValueText = 96

func newSpaceSaving(k int) *spaceSaving {
	return &spaceSaving{k: k, index: make(map[uint64]int32, k)}
}

func (ss *spaceSaving) set(e *ssEntry, h uint64, v pipeline.Value) {
	e.hash, e.kind, e.i = h, v.Kind, v.Num
	s := v.Str
	e.trunc = len(s) > maxValueText
	if e.trunc {
		s = s[:maxValueText]
	}
	e.s = append(e.s[:0], s...)
}

// add counts one occurrence of v, whose hash is h.
func (ss *spaceSaving) add(h uint64, v pipeline.Value) { ss.addN(h, v, 1, 0) }

func (ss *spaceSaving) addN(h uint64, v pipeline.Value, n, err int64) {
	if i, ok := ss.index[h]; ok {
		e := &ss.entries[i]
		e.count += n
		e.err += err
		ss.down(int(ss.pos[i]))
		return
	}
	if len(ss.entries) < ss.k {
		i := int32(len(ss.entries))
		ss.entries = append(ss.entries, ssEntry{})
		e := &ss.entries[i]
		ss.set(e, h, v)
		e.count, e.err = n, err
		ss.index[h] = i
		ss.pos = append(ss.pos, int32(len(ss.heap)))
		ss.heap = append(ss.heap, i)
		ss.up(len(ss.heap) - 1)
		return
	}
	// replace the minimum
	ss.Evicted = true
	i := ss.heap[0]
	e := &ss.entries[i]
	delete(ss.index, e.hash)
	minCount := e.count
	ss.set(e, h, v)
	e.count, e.err = minCount+n, minCount+err
	ss.index[h] = i
	ss.down(0)
}

func (ss *spaceSaving) less(a, b int) bool {
	return ss.entries[ss.heap[a]].count < ss.entries[ss.heap[b]].count
}

func (ss *spaceSaving) swap(a, b int) {
	ss.heap[a], ss.heap[b] = ss.heap[b], ss.heap[a]
	ss.pos[ss.heap[a]] = int32(a)
	ss.pos[ss.heap[b]] = int32(b)
}

func (ss *spaceSaving) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !ss.less(j, p) {
			break
		}
		ss.swap(j, p)
		j = p
	}
}

func (ss *spaceSaving) down(j int) {
	n := len(ss.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && ss.less(r, l) {
			m = r
		}
		if !ss.less(m, j) {
			return
		}
		ss.swap(j, m)
		j = m
	}
}

// Min is the smallest count held (0 while there is room: an absent value may not have occurred).
func (ss *spaceSaving) Min() int64 {
	if len(ss.entries) < ss.k || len(ss.heap) == 0 {
		return 0
	}
	return ss.entries[ss.heap[0]].count
}

// merge adds another summary (Agarwal et al.'s mergeable summaries): a value absent from one side
// may have occurred up to that side's minimum count times, which is added to its count and err.
func (ss *spaceSaving) merge(o *spaceSaving) {
	ma, mb := ss.Min(), o.Min()
	type item struct {
		e          ssEntry
		count, err int64
	}
	items := map[uint64]*item{}
	for _, e := range ss.entries {
		items[e.hash] = &item{e: e, count: e.count + mb, err: e.err + mb}
	}
	for _, e := range o.entries {
		if it, ok := items[e.hash]; ok {
			it.count += e.count - mb
			it.err += e.err - mb
			continue
		}
		items[e.hash] = &item{e: e, count: e.count + ma, err: e.err + ma}
	}
	list := make([]*item, 0, len(items))
	for _, it := range items {
		list = append(list, it)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		return list[i].e.hash < list[j].e.hash
	})
	evicted := ss.Evicted || o.Evicted || len(list) > ss.k
	if len(list) > ss.k {
		list = list[:ss.k]
	}
	*ss = *newSpaceSaving(ss.k)
	for _, it := range list {
		e := it.e
		v := pipeline.Value{Kind: e.kind, Num: e.i, Str: string(e.s)}
		ss.addN(e.hash, v, it.count, it.err)
		ss.entries[ss.index[e.hash]].trunc = e.trunc
	}
	ss.Evicted = evicted
}

// topValue is one heavy hitter.
type topValue struct {
	Value     pipeline.Value
	Truncated bool
	Count     int64 // upper bound
	Err       int64 // Count-Err is a lower bound
}

// Top returns the entries by decreasing count.
func (ss *spaceSaving) Top(n int) []topValue {
	out := make([]topValue, 0, len(ss.entries))
	for _, e := range ss.entries {
		out = append(out, topValue{Value: pipeline.Value{Kind: e.kind, Num: e.i, Str: string(e.s)}, Truncated: e.trunc, Count: e.count, Err: e.err})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return pipeline.Compare(pipeline.TypeInvalid, out[i].Value, out[j].Value) < 0
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// lengthHist counts key lengths 0..maxLen in fixed buckets, plus one overflow bucket.
type lengthHist struct {
	counts  []int64
	Sum     int64
	N       int64
	Over    int64 // lengths above maxLen
	MaxSeen int
}

const histMax = 2048

func newLengthHist() *lengthHist { return &lengthHist{counts: make([]int64, histMax+1)} }

func (h *lengthHist) add(n int) {
	if n > histMax {
		h.Over++
	} else {
		h.counts[n]++
	}
	if n > h.MaxSeen {
		h.MaxSeen = n
	}
	h.Sum += int64(n)
	h.N++
}

func (h *lengthHist) merge(o *lengthHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.Sum += o.Sum
	h.N += o.N
	h.Over += o.Over
	h.MaxSeen = max(h.MaxSeen, o.MaxSeen)
}

// Quantile returns the smallest length L such that at least q of the lengths are <= L
// (overflowing lengths count as maxSeen).
func (h *lengthHist) Quantile(q float64) int {
	if h.N == 0 {
		return 0
	}
	need := int64(q*float64(h.N) + 0.999999)
	if need < 1 {
		need = 1
	}
	var cum int64
	for i, c := range h.counts {
		cum += c
		if cum >= need {
			return i
		}
	}
	return h.MaxSeen
}

func (h *lengthHist) Min() int {
	for i, c := range h.counts {
		if c > 0 {
			return i
		}
	}
	if h.Over > 0 {
		return histMax + 1
	}
	return 0
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a []byte, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
