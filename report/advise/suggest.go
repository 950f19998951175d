package advise

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// The uniqueness rule's advice: the smallest key change that removes the collisions. The
// collision check compares the distinct source rows of every colliding key pairwise, column by
// column, and keeps for each pair the set of columns in which the two rows differ (a bit mask,
// counted by mask). Adding columns S to the key separates a pair exactly when S meets its mask,
// so the change is the smallest S that meets every mask (a hitting set: tried by size, 1 to
// maxSuggestColumns, columns in order of preference), that keeps the key within Lindorm's limit
// and that compiles as a key column.

// maxSuggestColumns bounds the columns a suggestion adds.
const maxSuggestColumns = 3

// SuggestKey finds the smallest key change for the collisions in res (pair masks over the
// source columns of prog); compile checks that a primary key compiles. It returns nil when
// nothing collides.
func SuggestKey(res collide.CollisionResult, prog *transform.Program, pk string, compile func(pk string) (*transform.Program, error)) *model.KeySuggestion {
	if res.Colliding == 0 {
		return nil
	}
	src := prog.Source()
	s := &model.KeySuggestion{Add: []string{}, DifferIn: []model.ColumnDiff{}, CheckedKeys: res.CheckedKeys, PartlyKeys: res.PartialKeys,
		Pairs: res.Pairs, Checked: res.PartialKeys == 0 && res.Unrecorded == 0 && res.NoDiff == 0}
	masks, union, per := sortedMasks(res)
	cands, measures := candidates(s, src, union, per)
	keyLen := len(prog.KeyElements())
	names := func(set []int) []string {
		var out []string
		for _, c := range set {
			out = append(out, src[c].Name)
		}
		return out
	}
	found, smallest := smallestSet(masks, cands, min(transform.MaxKeyColumns-keyLen, maxSuggestColumns), func(cols []int) bool {
		_, err := compile(pk + Bracketed(names(cols)))
		return err == nil // else not a valid key column (JSON, VARBINARY not last...): try the next
	})
	differ := func(max int) string {
		var parts []string
		for i, d := range s.DifferIn {
			if i == max {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, fmt.Sprintf("%s (%s pairs)", d.Column, model.Count(d.Pairs)))
		}
		return strings.Join(parts, ", ")
	}
	scope := comparedScope(res, s.Checked)
	switch {
	case found != nil:
		s.Add = names(found)
		s.PrimaryKey = pk + Bracketed(s.Add)
		if p, err := compile(s.PrimaryKey); err == nil {
			s.PrimaryKey = MappingInfo(p, nil).PrimaryKey
		}
		s.SeparatesAll = true
		it := "it"
		if len(s.Add) > 1 {
			it = "them"
		}
		s.Message = fmt.Sprintf("add %s to the key (%s): every pair of colliding rows differs in %s (%s)", ListText(quoted(s.Add)), s.PrimaryKey, it, scope)
		if !s.Checked {
			s.Message += "; rerun the report after the change to check the rest"
		}
	case len(masks) == 0:
		s.Message = fmt.Sprintf("the colliding rows differ in no column the report compares (%s)", scope)
	case len(measures) > 0 && !hits(masks, colSet(src, cands)):
		s.Message = fmt.Sprintf("the colliding rows differ only in %s, which hold quantities, not identities (%s): they are versions of one record (the guide: \"Different row versions share the same primary key\"), and a measure in the key would make every update of it a new row; the key identifies the record: keep it and let the latest version win (bulkload and upserts keep the last one written), or key every version apart with a version column (the time of the change or a sequence number; add one to the source if it has none)",
			ListText(quoted(measures)), scope)
	case smallest > 0:
		s.Message = fmt.Sprintf("no column can be added within Lindorm's %d key columns: the colliding rows differ only in combinations of %s, and telling them apart takes %d more key columns (%d in all); the source has no column that identifies a row: add one (a sequence number or event id) and key on it",
			transform.MaxKeyColumns, differ(6), smallest, keyLen+smallest)
	default:
		s.Message = fmt.Sprintf("no set of up to %d columns tells the colliding rows apart: they differ in %s; the source has no column that identifies a row: add one (a sequence number or event id) and key on it",
			maxSuggestColumns, differ(6))
	}
	s.PairsLeft = res.Pairs
	if found != nil {
		s.PairsLeft = res.NoDiff + res.Unrecorded // never separable, or not kept to check
	}
	return s
}

// maskCount is a set of columns two colliding rows differ in, and how many pairs do.
type maskCount struct {
	m uint64
	n int64
}

// sortedMasks are the collision check's pair masks, most frequent first (a failing candidate
// fails early), with their union and the pairs each column separates.
func sortedMasks(res collide.CollisionResult) (masks []maskCount, union uint64, per []int64) {
	masks = make([]maskCount, 0, len(res.Masks))
	per = make([]int64, collide.MaxHashedColumns)
	for m, n := range res.Masks {
		masks = append(masks, maskCount{m, n})
		union |= m
		for b := m; b != 0; b &= b - 1 {
			per[bits.TrailingZeros64(b)] += n
		}
	}
	slices.SortFunc(masks, func(a, b maskCount) int {
		if a.n != b.n {
			if a.n > b.n {
				return -1
			}
			return 1
		}
		if a.m < b.m {
			return -1
		}
		return 1
	})
	return masks, union, per
}

// candidates fills s.DifferIn (the columns the rows differ in, most pairs first) and gives the
// columns a key may gain, preferred first, and the measures (columns that differ but hold a
// quantity, never a key column).
func candidates(s *model.KeySuggestion, src pipeline.SourceSchema, union uint64, per []int64) (cands []int, measures []string) {
	for c := 0; c < min(len(src), collide.MaxHashedColumns); c++ {
		if union&(1<<uint(c)) != 0 {
			s.DifferIn = append(s.DifferIn, model.ColumnDiff{Column: src[c].Name, Pairs: per[c]})
			if isMeasure(src[c]) {
				measures = append(measures, src[c].Name)
				continue
			}
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(s.DifferIn, func(a, b model.ColumnDiff) int {
		if a.Pairs != b.Pairs {
			if a.Pairs > b.Pairs {
				return -1
			}
			return 1
		}
		return 0
	})
	// preferred columns first: fixed-width values make short keys (the guide: prefer fixed-length
	// values such as BIGINT); then the columns that separate most pairs; then schema order
	slices.SortStableFunc(cands, func(a, b int) int {
		fa, fb := fixedWidthCQL(src[a].Type), fixedWidthCQL(src[b].Type)
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		if per[a] != per[b] {
			if per[a] > per[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	return cands, measures
}

// hits says whether adding the columns of set to the key separates every pair.
func hits(masks []maskCount, set uint64) bool {
	for _, x := range masks {
		if x.m&set == 0 {
			return false
		}
	}
	return true
}

// smallestSet is the first set of candidates, by size (1 to maxSuggestColumns) then preference,
// that separates every pair, fits the key's room and compiles (valid); smallest is the size of
// the smallest separating set, even beyond the room.
func smallestSet(masks []maskCount, cands []int, room int, valid func(cols []int) bool) (found []int, smallest int) {
	for size := 1; size <= maxSuggestColumns && found == nil && len(masks) > 0; size++ {
		combos(len(cands), size, func(idx []int) bool {
			var set uint64
			cols := make([]int, 0, size)
			for _, i := range idx {
				set |= 1 << uint(cands[i])
				cols = append(cols, cands[i])
			}
			if !hits(masks, set) {
				return true
			}
			if smallest == 0 {
				smallest = size
			}
			if size > room {
				return false
			}
			if !valid(cols) {
				return true
			}
			found = cols
			return false
		})
	}
	return found, smallest
}

// comparedScope says which colliding rows the suggestion was checked on.
func comparedScope(res collide.CollisionResult, checked bool) string {
	if checked {
		return fmt.Sprintf("all %s colliding keys compared", model.Count(res.CheckedKeys))
	}
	var notes []string
	if res.PartialKeys > 0 {
		notes = append(notes, fmt.Sprintf("%s keys with more than %d distinct rows compared on their first %d", model.Count(res.PartialKeys), collide.MaxPairRows, collide.MaxPairRows))
	}
	if res.NoDiff > 0 {
		notes = append(notes, fmt.Sprintf("%s pairs differ in no column among the first %d", model.Count(res.NoDiff), collide.MaxHashedColumns))
	}
	if res.Unrecorded > 0 {
		notes = append(notes, fmt.Sprintf("%s pairs not kept", model.Count(res.Unrecorded)))
	}
	return fmt.Sprintf("%s pairs of rows from %s colliding keys compared (%s)", model.Count(res.Pairs), model.Count(res.CheckedKeys+res.PartialKeys), strings.Join(notes, "; "))
}

// combos calls fn with every size-combination of 0..n-1 in lexicographic order until fn returns
// false.
func combos(n, size int, fn func(idx []int) bool) {
	idx := make([]int, size)
	var rec func(start, k int) bool
	rec = func(start, k int) bool {
		if k == size {
			return fn(idx)
		}
		for i := start; i <= n-(size-k); i++ {
			idx[k] = i
			if !rec(i+1, k+1) {
				return false
			}
		}
		return true
	}
	rec(0, 0)
}

// quoted marks column names in a message: `seq`.
func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}

// colSet is the bit mask of source columns cols.
func colSet(_ pipeline.SourceSchema, cols []int) uint64 {
	var m uint64
	for _, c := range cols {
		m |= 1 << uint(c)
	}
	return m
}

// isMeasure: a source column that holds a quantity: a counter, a decimal or floating-point
// number (amounts, prices, ratios), or an integer named as a count or an amount (clicks, views,
// quantity, total ...). The uniqueness advice never puts one into the key: the guides key on
// 1-3 columns that identify the record, and an update of a measure would write a new row.
func isMeasure(c pipeline.SourceColumn) bool {
	switch strings.ToLower(strings.TrimSpace(c.Type)) {
	case "counter", "decimal", "float", "double":
		return true
	case "int", "bigint", "smallint", "tinyint", "varint":
	default:
		return false
	}
	n := strings.ToLower(c.Name)
	for _, w := range []string{"click", "count", "cnt", "amount", "amt", "qty", "quantity", "total", "sum", "views", "visits", "hits",
		"likes", "impressions", "price", "cost", "revenue", "sales", "score", "balance", "bytes", "size", "duration", "latency"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// fixedWidthCQL: a CQL type Lindorm stores with a fixed width.
func fixedWidthCQL(t string) bool {
	switch scalarCQL(t) {
	case "bigint", "int", "smallint", "tinyint", "counter", "timestamp", "date", "time", "boolean", "double", "float":
		return true
	}
	return false
}

// DiffColumns names the columns of a pair mask (bit i: source column i).
func DiffColumns(src pipeline.SourceSchema, mask uint64) []string {
	out := []string{}
	for b := mask; b != 0; b &= b - 1 {
		if i := bits.TrailingZeros64(b); i < len(src) {
			out = append(out, src[i].Name)
		}
	}
	return out
}
