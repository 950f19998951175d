package collide

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// orderCand is one way of giving a row its write-order value.
type orderCand struct {
	Kind string
	col  int  // source column (declared, time column)
	date bool // the column is a DATE (days)
	uuid bool // the column is a timeuuid (text)
	Name string
	Typ  string
	// window: kafka_offset's partition windows (OrderHints.OffsetWindow)
	window func(stream string) (first, end int64, ok bool)
}

// offsetScale is the write-order value of a partition window's end: a message's value is its
// share of its partition's window on this scale.
const offsetScale = 1 << 40

// Value is the write-order value of record i of b (ord: its ordinal in arrival order); noTime
// when the row has none.
func (c *orderCand) Value(b *pipeline.Batch, i int, ord int64) int64 {
	rec := &b.Records[i]
	switch c.Kind {
	case model.OrderDeclared, model.OrderTimeColumn:
		if c.col >= len(rec.Values) {
			return NoTime
		}
		v := rec.Values[c.col]
		switch {
		case v.Kind == pipeline.KindNull:
			return NoTime
		case c.uuid:
			return timeUUIDMillis(v.Str)
		case v.Kind != pipeline.KindInt:
			return NoTime
		case c.date:
			return v.Num * 86400000
		}
		return v.Num
	case model.OrderWriteTime, model.OrderKafkaTime:
		if i < len(b.WriteTimes) {
			return b.WriteTimes[i]
		}
		return NoTime
	case model.OrderKafkaOffset:
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
		return NoTime
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
				return NoTime
			}
			t = t<<4 | uint64(d)
		}
	}
	const gregorianToUnix = 0x01B21DD213814000 // 100 ns intervals from 1582-10-15 to 1970-01-01
	ticks := int64(t) - gregorianToUnix
	ms := ticks / 10000
	if ticks%10000 < 0 {
		ms-- // before 1970: the millisecond that holds the instant, not the next one
	}
	return ms
}

// OrderModel holds the candidates: the best evidence, and the one to fall back on when the
// best gives no order (every row with the same WRITETIME(), as after a bulk load).
type OrderModel struct {
	Hints   model.OrderHints
	Primary orderCand
	Backup  *orderCand
	Notes   []string
}

func NewOrderModel(prog *transform.Program, h model.OrderHints) *OrderModel {
	src := prog.Source()
	m := &OrderModel{Hints: h, Notes: append([]string{}, h.Notes...)}
	column := func(kind string, i int) orderCand {
		t := pipeline.NormalizeSourceType(src[i].Type)
		return orderCand{Kind: kind, col: i, Name: src[i].Name, Typ: src[i].Type,
			date: t == "date", uuid: t == "timeuuid"}
	}
	var cands []orderCand
	declared := -1
	if h.Column != "" {
		if declared = src.Index(h.Column); declared >= 0 {
			cands = append(cands, column(model.OrderDeclared, declared))
		}
	}
	if h.WriteTimes != "" {
		cands = append(cands, orderCand{Kind: h.WriteTimes})
	}
	// a Kafka partition's offsets are its creation order: known, where a time column is a guess
	if h.Offsets {
		cands = append(cands, orderCand{Kind: model.OrderKafkaOffset, window: h.OffsetWindow})
	} else {
		// the declared column again, inferred, would be no fallback for it: the next time column is
		if i := inferTimeColumn(src, declared); i >= 0 {
			cands = append(cands, column(model.OrderTimeColumn, i))
		}
		cands = append(cands, orderCand{Kind: model.OrderArrival})
	}
	m.Primary = cands[0]
	if len(cands) > 1 {
		b := cands[1]
		m.Backup = &b
	}
	return m
}

// Informative tells whether the candidate's values (the subsample's) order rows at all. A
// declared column is the user's word: it gives way only when it orders nothing (most rows
// without a value, or one value), where other evidence gives way when it takes few values.
func (c *orderCand) Informative(vals []int64) bool {
	if c.Kind != model.OrderDeclared {
		return OrderInformative(vals)
	}
	var dated int
	first, distinct := int64(NoTime), false
	for _, v := range vals {
		if v == NoTime {
			continue
		}
		if dated == 0 {
			first = v
		}
		distinct = distinct || v != first
		dated++
	}
	return 2*dated >= len(vals) && distinct
}

// inferTimeColumn picks the source column most likely to be a row's creation time: a
// timestamp, date or timeuuid column, one named like a creation time first; -1 for none.
// writetime_ pseudo-columns are left to the WRITETIME() evidence, and column except (the
// declared one, -1 for none) to the declared evidence.
func inferTimeColumn(src pipeline.SourceSchema, except int) int {
	best, bestScore := -1, 0
	for i, c := range src {
		if i == except || transform.WriteOrderKind(c.Type) != "time" || strings.HasPrefix(c.Name, "writetime_") {
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

// Describe is the evidence in words, as findings and renderings name it.
func (c *orderCand) Describe(h model.OrderHints) string {
	switch c.Kind {
	case model.OrderDeclared:
		return fmt.Sprintf("column %s, declared the row's creation time by %s", c.Name, h.ColumnOrigin)
	case model.OrderWriteTime:
		return "Cassandra WRITETIME() of each row (the earliest of its regular cells)"
	case model.OrderKafkaTime:
		return "the Kafka message timestamps"
	case model.OrderTimeColumn:
		return fmt.Sprintf("column %s (%s), inferred as the row's creation time (declare source.write_order to be sure)", c.Name, c.Typ)
	case model.OrderKafkaOffset:
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

// OrderInformative tells whether write-order values order rows at all: most rows have one and
// they take more than a handful of distinct values.
func OrderInformative(vals []int64) bool {
	if len(vals) < 2 {
		return false
	}
	s := make([]int64, 0, len(vals))
	for _, v := range vals {
		if v != NoTime {
			s = append(s, v)
		}
	}
	if 2*len(s) < len(vals) {
		return false
	}
	slices.Sort(s)
	return int64(len(slices.Compact(s))) >= max(2, min(16, int64(len(vals))/4))
}

// Thresholds of the incremental_key_column rule.
const (
	// IncrementalRho: a key column whose rank correlation with the write order is at least this
	// (or at most its negative) is incremental.
	IncrementalRho = 0.8
	// sequenceDensity: with no write order, an integer column whose distinct values fill at
	// least this share of [min, max] is a sequence.
	sequenceDensity = 0.5
	// sequenceMaxDensity: and at most this share (1, with room for the scaling's error): more
	// rows than values in the range means the values repeat
	sequenceMaxDensity = 1.25
	// A key column after the first is also incremental when, in write order, at least
	// monotonicShare of at least minPrefixPairs successive rows of one prefix keep its direction
	// (a counter per prefix value: [channel][id] where ids rise per channel).
	MinPrefixPairs = 50
	// MinRhoRows: a rank correlation with the write order over fewer rows says nothing (two rows
	// always correlate +1 or -1; five random ones reach 0.8 one time in eight), so a column is not
	// judged incremental by it
	MinRhoRows = 30
)

// OrderedSample is the subsample in write order with each accepted row's target key, its
// region under the main plan, and its write-order value.
type OrderedSample struct {
	Keys    [][]pipeline.Value // accepted rows: key values
	Regions []int
	Wo      []int64
}

// SortSubsample sorts the subsample by write order (stable: ties keep arrival order) and
// returns the values in the new order.
func SortSubsample(recs []pipeline.Record, wo []int64) {
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

// IncrementalColumn judges one key column's values (rows in write order) against the write
// order's ranks (nil in arrival order): a TIMESTAMP or DATE; a time source column as it is or
// cast (timeKey, transform.Program.TimeKey); a rank correlation with the write order of at
// least incrementalRho (or at most its negative); with no write order, or one only guessed
// (inferred: a time column taken for the creation time, which a birth date is not), integers
// that look like a sequence, an auto-increment id whatever order the rows come in. distinct is
// the values' distinct count; analysed the rows the subsample was drawn from. The advisor judges
// each design's first column by it too.
func IncrementalColumn(typ pipeline.Type, vals []pipeline.Value, distinct int64, wo []int64, analysed int64, timeKey string, inferred bool) (rho float64, inc bool, why string) {
	n := len(vals)
	switch {
	case distinct < 2:
		return 0, false, ""
	case typ == pipeline.TypeTimestamp || typ == pipeline.TypeDate:
		return 0, true, fmt.Sprintf("is a %s, and times only grow", typ)
	case timeKey != "":
		// by what the column is: a sample spread over days shows nothing in its windows of what a
		// timeuuid, led by its time's low bits, does within seconds
		return 0, true, timeKey
	case typ == pipeline.TypeVarchar && textTimeUUIDs(vals):
		// the same, held as text (a timeuuid exported to CSV or sent as JSON)
		return 0, true, "holds version-1 UUIDs (timeuuids) as text, whose text begins with the low bits of their time: the rows written in the same seconds sort side by side"
	}
	if wo != nil && n >= MinRhoRows {
		rho = rankCorrelation(typ, vals, wo)
		if math.Abs(rho) >= IncrementalRho {
			dir := "rises"
			if rho < 0 {
				dir = "falls"
			}
			return rho, true, fmt.Sprintf("%s with the write order (rank correlation %.2f)", dir, rho)
		}
	}
	if wo == nil || inferred {
		// a date or time written as text or digits (2024-01-02, 2015122410) sorts as its times
		// do: with no order to judge it in, it is judged by what it holds, as a TIMESTAMP is
		if layout, lo, hi, ok := textTimes(vals); ok {
			return rho, true, fmt.Sprintf("holds dates or times written as %s (%s to %s), and times only grow", layout, lo, hi)
		}
		// a key led by one (20240106 + a suffix) sorts by its dates first
		if layout, lo, hi, ok := textTimePrefix(vals); ok {
			return rho, true, fmt.Sprintf("begins with dates or times written as %s (%s to %s), and times only grow", layout, lo, hi)
		}
		// sparse ids with a time in their high bits grow as it does; no sequence shows
		if layout, lo, hi, ok := snowflakeTimes(vals, distinct); ok {
			return rho, true, fmt.Sprintf("looks like snowflake ids (their high bits hold a time: %s to %s in %s), which grow with the time their rows are created", lo, hi, layout)
		}
	}
	ints, what := vals, "values"
	if !IsIntType(typ) {
		// a counter written as fixed-width text (o0000042) sorts as its numbers do
		ints, what = paddedCounter(vals), "fixed-width counter text"
	}
	if (wo == nil || inferred) && ints != nil {
		if lo, hi, ok := intRange(ints); ok && hi > lo {
			// the subsample keeps about n of analysed rows: scale its distinct count. A sequence's
			// values are unique, so they cannot outnumber their range: beyond it (sequenceMaxDensity)
			// the values repeat, as another table's ids do (userid in an orders table)
			scaled := float64(distinct) * float64(max(analysed, int64(n))) / float64(n)
			seq := func(step int64) bool {
				dens := scaled / ((float64(hi)-float64(lo))/float64(step) + 1)
				return dens >= sequenceDensity && dens <= sequenceMaxDensity && float64(distinct) >= 0.9*float64(n)
			}
			if seq(1) {
				return rho, true, fmt.Sprintf("looks like a sequence (dense %s from %d to %d)", what, lo, hi)
			}
			// an integer sequence may step by more than one (auto_increment_increment: 7, 17,
			// 27, ...): its values, sampled at random, share the step and fill the range's steps
			// (not text: a reversed sequence's digits, 0000001, 0000101, ..., share a step too)
			if IsIntType(typ) {
				if step := intStep(ints, lo); step > 1 && seq(step) {
					return rho, true, fmt.Sprintf("looks like a sequence (dense %s in steps of %d from %d to %d)", what, step, lo, hi)
				}
			}
		}
	}
	return rho, false, ""
}

// snowflakeLayouts are the snowflake id layouts snowflakeTimes reads: a time since epoch (epoch
// milliseconds), in units of unit milliseconds, in the bits above shift.
var snowflakeLayouts = []struct {
	name        string
	shift       uint
	epoch, unit int64
}{
	{"Twitter's layout, which MyBatis-Plus, Hutool and Leaf use", 22, 1288834974657, 1},
	{"Discord's layout", 22, 1420070400000, 1},
	{"Sonyflake's layout", 24, 1409529600000, 10},
}

// minSnowflakes is the fewest values snowflakeTimes judges: a random sample of positive integers
// below a bound has its smallest value near the bound's 1/n-th, which the check below tells from
// ids whose times all fall years after their epoch only when n is large.
const minSnowflakes = 200

// snowflakeTimes says whether the values, positive integers or their decimal text, all unique
// enough, read as one of snowflakeLayouts give times from at least a year after the layout's
// epoch to no later than a day from now, the earliest no closer to the epoch than a twentieth of
// the latest's distance (numbers drawn at random below a bound have their smallest near the
// epoch), with the layout's name and the first and last time.
func snowflakeTimes(vals []pipeline.Value, distinct int64) (layout, first, last string, ok bool) {
	n := len(vals)
	if n < minSnowflakes || float64(distinct) < 0.9*float64(n) {
		return "", "", "", false
	}
	var lo, hi int64
	for i, v := range vals {
		x := v.Num
		switch v.Kind {
		case pipeline.KindInt:
		case pipeline.KindText:
			var err error
			if x, err = strconv.ParseInt(v.Str, 10, 64); err != nil {
				return "", "", "", false
			}
		default:
			return "", "", "", false
		}
		if x <= 0 {
			return "", "", "", false
		}
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	limit := time.Now().Add(24 * time.Hour).UnixMilli()
	const year = 365 * 24 * int64(time.Hour/time.Millisecond)
	for _, l := range snowflakeLayouts {
		from, to := (lo>>l.shift)*l.unit, (hi>>l.shift)*l.unit // since the epoch
		if from >= year && from >= to/20 && l.epoch+to <= limit {
			at := func(ms int64) string { return time.UnixMilli(l.epoch + ms).UTC().Format("2006-01-02") }
			return l.name, at(from), at(to), true
		}
	}
	return "", "", "", false
}

// textTimeUUIDs says whether every value is the text of a version-1 (time-based) UUID:
// 8-4-4-4-12 hex digits, version 1, the RFC 4122 variant.
func textTimeUUIDs(vals []pipeline.Value) bool {
	for _, v := range vals {
		s := v.Str
		if v.Kind != pipeline.KindText || len(s) != 36 || s[14] != '1' || !strings.ContainsRune("89abAB", rune(s[19])) {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
			} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return len(vals) > 0
}

// timeLayouts are the ways text holds a date or time that textTimes recognises: ISO 8601 and the
// compact digits the primary-key guide's '2015122410' is written in. Each sorts as its times.
var timeLayouts = []string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05-0700", "2006-01-02 15:04:05", "2006-01-02", "20060102150405", "200601021504", "2006010215", "20060102"}

// textTimes says whether every value is text, or an integer's digits (20240102), of one date or
// time layout, with the layout and the smallest and largest value.
func textTimes(vals []pipeline.Value) (layout, lo, hi string, ok bool) {
	text := func(v pipeline.Value) (string, bool) {
		switch v.Kind {
		case pipeline.KindText:
			return v.Str, true
		case pipeline.KindInt:
			return strconv.FormatInt(v.Num, 10), true
		}
		return "", false
	}
	if len(vals) == 0 {
		return "", "", "", false
	}
	first, ok := text(vals[0])
	if !ok {
		return "", "", "", false
	}
	for _, l := range timeLayouts {
		if _, err := time.Parse(l, first); err == nil {
			layout = l
			break
		}
	}
	if layout == "" {
		return "", "", "", false
	}
	lo, hi = first, first
	for _, v := range vals[1:] {
		s, ok := text(v)
		if !ok || v.Kind != vals[0].Kind {
			return "", "", "", false
		}
		if _, err := time.Parse(layout, s); err != nil {
			return "", "", "", false
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	return layout, lo, hi, true
}

// prefixLayouts are the fixed-width layouts of timeLayouts, finest first: a key that begins with
// one of them, then more characters (20240106 + 5 digits, 2024-01-06#42), sorts by its times.
var prefixLayouts = []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "20060102150405", "200601021504", "2006010215", "2006-01-02", "20060102"}

// textTimePrefix says whether every value is text, or an integer's digits, longer than one of
// prefixLayouts and beginning with a time of it between 1970 and 2100 (digits that are no dates
// do not all parse), the prefixes taking more than one value; with the layout and the smallest
// and largest prefix.
func textTimePrefix(vals []pipeline.Value) (layout, lo, hi string, ok bool) {
	if len(vals) == 0 {
		return "", "", "", false
	}
	var buf [20]byte
	prefix := func(v pipeline.Value, w int) (string, bool) {
		s := v.Str
		switch {
		case v.Kind == pipeline.KindInt:
			s = string(strconv.AppendInt(buf[:0], v.Num, 10))
		case v.Kind != pipeline.KindText || v.Kind != vals[0].Kind:
			return "", false
		}
		if len(s) <= w {
			return "", false
		}
		return s[:w], true
	}
next:
	for _, l := range prefixLayouts {
		lo, hi = "", ""
		for i, v := range vals {
			if v.Kind != vals[0].Kind {
				return "", "", "", false
			}
			p, ok := prefix(v, len(l))
			if !ok {
				continue next
			}
			t, err := time.Parse(l, p)
			if err != nil || t.Year() < 1970 || t.Year() > 2100 {
				continue next
			}
			if i == 0 {
				lo, hi = strings.Clone(p), strings.Clone(p)
			} else if p < lo {
				lo = strings.Clone(p)
			} else if p > hi {
				hi = strings.Clone(p)
			}
		}
		if lo < hi {
			return l, lo, hi, true
		}
	}
	return "", "", "", false
}

// paddedCounter reads text values that are a shared prefix and then digits, all of one length
// (o0000042, 00017): a zero-padded counter, whose text order is its numbers'. It returns the
// numbers, or nil when the values are not such text.
func paddedCounter(vals []pipeline.Value) []pipeline.Value {
	if len(vals) == 0 || vals[0].Kind != pipeline.KindText {
		return nil
	}
	first := vals[0].Str
	lcp := len(first)
	for _, v := range vals[1:] {
		if v.Kind != pipeline.KindText || len(v.Str) != len(first) {
			return nil
		}
		for lcp > 0 && v.Str[:lcp] != first[:lcp] {
			lcp--
		}
	}
	// the prefix ends before the digits: o000 of o0000042 is o, then the counter's digits
	head := lcp
	for head > 0 && first[head-1] >= '0' && first[head-1] <= '9' {
		head--
	}
	if digits := len(first) - head; digits == 0 || digits > 18 {
		return nil
	}
	out := make([]pipeline.Value, len(vals))
	for i, v := range vals {
		var n int64
		for k := head; k < len(v.Str); k++ {
			c := v.Str[k]
			if c < '0' || c > '9' {
				return nil
			}
			n = n*10 + int64(c-'0')
		}
		out[i] = pipeline.Int(n)
	}
	return out
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

// RisesInPrefix measures, over rows in write order, how each prefix value's successive rows
// move: the share of pairs that keep the dominant direction (ties count for both), and the
// pairs. A column that mostly repeats its value (a status) does not pass: ties only count when
// most pairs move.
func RisesInPrefix(typ pipeline.Type, vals []pipeline.Value, prefix []uint64) (float64, int64) {
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

func DistinctU64(v []uint64) []uint64 {
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

// intStep is the greatest common divisor of the values' distances from lo (the values are
// integers, lo their least): the step of a sequence that counts by more than one; 1 at least.
func intStep(vals []pipeline.Value, lo int64) int64 {
	var g uint64
	for _, v := range vals {
		d := uint64(v.Num) - uint64(lo)
		for d != 0 {
			g, d = d, g%d
		}
		if g == 1 {
			break
		}
	}
	return int64(max(g, 1))
}

// OrderWindows are the windows and monotonicity of the write-ordered subsample under the main
// plan (in arrival order the exact windows of every row are used instead).
func OrderWindows(s OrderedSample, regions int, typ pipeline.Type) (*Windows, int64, int64, int64) {
	w := NewWindows(regions, int64(len(s.Keys)), MainWindows, MainWindowsMax)
	var up, down, pairs int64
	for i, reg := range s.Regions {
		w.Add(reg)
		if i > 0 {
			c := pipeline.Compare(typ, s.Keys[i-1][0], s.Keys[i][0])
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

// HasAxis tells whether an evidence's values can draw the heatmap's axis (times or declared
// values, not arrival ordinals or offsets of several partitions).
func HasAxis(kind string) bool {
	switch kind {
	case model.OrderDeclared, model.OrderWriteTime, model.OrderKafkaTime, model.OrderTimeColumn:
		return true
	}
	return false
}
