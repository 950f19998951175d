package report

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// Every key column, and regions bounded by the full key. Lindorm pre-splits a table only between
// first-column values, but it splits any region that passes its size threshold (8 GiB) wherever
// the full key falls: the wide-table guide's "alipay" rows end up in Region_1, Region_2 and
// Region_3. So a heavy first-column value is spread by the columns after it once it is big
// enough, unless the next column rises with time (every new row of the value lands at the end of
// its range: one hot range per value). The figures here are gathered per key column: distinct
// values, shared prefix and numeric text on every row (acc), and on the advisor's subsample the
// order of each column within its prefix and the spread over equal full-key ranges.

// Thresholds of the per-column rules (README lists them).
const (
	// key_column_cardinality: a key column after the first with this few distinct values (and
	// fewer than the regions) splits a heavy prefix into at most that many ranges.
	fewColumnValues = 16
	// code(): a text column with at most this many distinct values is a dictionary candidate.
	codeMaxValues = 256
	// code(): and its values are at least this long (shorter codes save little).
	codeMinBytes = 4
)

// splitHotFactor cuts the keys (rows in order) into n equal ranges of the full key, as regions
// split by size end up, and measures the write hotspot over them in windows of rows in order.
// Keys are sorted by an order-preserving byte encoding (see appendOrdered), or by comparing
// values when a column holds decimals.
func splitHotFactor(keys [][]pipeline.Value, types []pipeline.Type, desc []bool, n int) float64 {
	if n <= 1 || len(keys) < 2 {
		return 0
	}
	idx := make([]int32, len(keys))
	// the encodings, one after the other in buf (key i's at off[i]:off[i+1]), and their first 8
	// bytes as a big-endian integer: most comparisons end there
	off := make([]int, len(keys)+1)
	heads := make([]headIndex, len(keys))
	var first []byte
	for c, v := range keys[0] {
		first, _ = appendOrdered(first, v, desc[c])
	}
	buf := make([]byte, 0, (len(first)+8)*len(keys)) // the first key's size, with room
	encoded := true
	for i, k := range keys {
		for c, v := range k {
			var ok bool
			if buf, ok = appendOrdered(buf, v, desc[c]); !ok {
				encoded = false
			}
		}
		off[i+1] = len(buf)
	}
	// the heads start after the prefix every encoding shares ("\x01u000" of ids like
	// u0001234567), where they tell keys apart
	first = buf[:off[1]]
	lcp := len(first)
	for i := 1; i < len(keys) && lcp > 0; i++ {
		lcp = min(lcp, commonPrefix(first[:lcp], buf[off[i]:off[i+1]]))
	}
	for i := range keys {
		var h [8]byte
		copy(h[:], buf[off[i]+lcp:off[i+1]])
		heads[i] = headIndex{binary.BigEndian.Uint64(h[:]), int32(i)}
	}
	// the order of the encodings (a shorter one that is a prefix of another first), or of the
	// values when a column has no encoding
	compare := func(a, b int32) int { return bytes.Compare(buf[off[a]:off[a+1]], buf[off[b]:off[b+1]]) }
	if !encoded {
		compare = func(a, b int32) int {
			ka, kb := keys[a], keys[b]
			for c := range types {
				x := pipeline.Compare(types[c], ka[c], kb[c])
				if desc[c] {
					x = -x
				}
				if x != 0 {
					return x
				}
			}
			return 0
		}
	}
	if encoded {
		// by their heads (a radix sort), then the runs of equal heads by the whole encoding
		heads = sortHeads(heads, make([]headIndex, len(heads)))
		for i := 0; i < len(heads); {
			j := i + 1
			for j < len(heads) && heads[j].head == heads[i].head {
				j++
			}
			if j-i > 1 {
				slices.SortFunc(heads[i:j], func(a, b headIndex) int {
					if c := compare(a.i, b.i); c != 0 {
						return c
					}
					return cmp.Compare(a.i, b.i)
				})
			}
			i = j
		}
		for k, h := range heads {
			idx[k] = h.i
		}
	} else {
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int {
			if c := compare(a, b); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	// equal keys are one row in Lindorm and no split falls between them: they share the piece
	// of the first
	piece := make([]int, len(keys))
	for rank, i := range idx {
		if rank > 0 && compare(idx[rank-1], i) == 0 {
			piece[i] = piece[idx[rank-1]]
			continue
		}
		piece[i] = rank * n / len(keys)
	}
	w := newWindows(n, int64(len(keys)), altWindows, altWindowsMax)
	for _, p := range piece {
		w.add(p)
	}
	return summarize(w.result(), n, w.per).HotFactor
}

// headIndex is a key's first 8 encoded bytes and its index.
type headIndex struct {
	head uint64
	i    int32
}

// sortHeads orders hs by head, ties in index order (an LSD radix sort, 16 bits a pass; tmp is
// scratch of the same length). It returns the sorted slice (hs or tmp).
func sortHeads(hs, tmp []headIndex) []headIndex {
	if len(hs) == 0 {
		return hs
	}
	counts := make([]int, 1<<16)
	for shift := uint(0); shift < 64; shift += 16 {
		clear(counts)
		for _, h := range hs {
			counts[h.head>>shift&0xffff]++
		}
		if counts[hs[0].head>>shift&0xffff] == len(hs) {
			continue // one digit for all: nothing moves
		}
		sum := 0
		for d, c := range counts {
			counts[d] = sum
			sum += c
		}
		for _, h := range hs {
			d := h.head >> shift & 0xffff
			tmp[counts[d]] = h
			counts[d]++
		}
		hs, tmp = tmp, hs
	}
	return hs
}

// appendOrdered appends v so that byte order is the table's order (pipeline.Compare; null
// first), inverted for a DESC column: integers big-endian with the sign bit flipped, floats by
// their sortable bits, text and bytes with 0x00 escaped and a 0x00 0x00 terminator. ok is false
// for a decimal, which has no such encoding here.
func appendOrdered(dst []byte, v pipeline.Value, desc bool) ([]byte, bool) {
	start := len(dst)
	ok := true
	switch v.Kind {
	case pipeline.KindNull:
		dst = append(dst, 0)
	case pipeline.KindInt, pipeline.KindBool:
		dst = binary.BigEndian.AppendUint64(append(dst, 1), uint64(v.Num)^(1<<63))
	case pipeline.KindFloat:
		b := uint64(v.Num)
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		dst = binary.BigEndian.AppendUint64(append(dst, 1), b)
	case pipeline.KindText, pipeline.KindBytes:
		dst = append(dst, 1)
		for i := 0; i < len(v.Str); i++ {
			if v.Str[i] == 0 {
				dst = append(dst, 0, 0xff)
			} else {
				dst = append(dst, v.Str[i])
			}
		}
		dst = append(dst, 0, 0)
	default:
		ok = false
	}
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst, ok
}

// mappingRegionCount is the region count the mapping asks for: its regions.count, or for a
// regions.size the estimated data over it (0 when it sets neither).
func (r *runner) mappingRegionCount(est int64) int {
	m := r.cfg.Mapping
	switch {
	case m == nil || m.Regions == nil:
		return 0
	case m.Regions.Count > 0:
		return m.Regions.Count
	case m.Regions.Size > 0:
		return bulkRegions(est, m.Regions.Size)
	}
	return 0
}

// columnFindings are the per-column rules for the key columns after the first (the first has
// its own first_column_* findings) and the rewrites the guide proposes for any key column.
func columnFindings(rep *Report) []Finding {
	var fs []Finding
	if rep.Totals.RowsOK == 0 {
		return nil
	}
	n := max(rep.Plan.Regions, rep.Plan.Asked, rep.Recommendation.Bulkload.Regions)
	kcs := rep.Mapping.KeyColumns
	for i, kc := range kcs {
		about := ""
		if !kc.DistinctExact {
			about = "about "
		}
		prefix := func() string {
			var names []string
			for _, p := range kcs[:i] {
				names = append(names, p.Name)
			}
			return strings.Join(names, ", ")
		}
		if i > 0 {
			ev := map[string]float64{"column": float64(i + 1), "distinct": float64(kc.Distinct), "regions": float64(n)}
			if kc.Distinct < fewColumnValues && kc.Distinct < int64(n) && rep.Totals.RowsOK > int64(fewColumnValues) {
				fs = append(fs, finding("key_column_cardinality", SevInfo, fmt.Sprintf("key column %s has only %s%s distinct values: a region split inside one value of %s can cut it into at most %s ranges", kc.Name, about, count(kc.Distinct), prefix(), count(kc.Distinct)), ev))
			}
			if kc.PrefixBytes >= prefixBytes && 2*kc.PrefixBytes >= kc.MinBytes && kc.Distinct > 1 {
				fs = append(fs, finding("key_column_prefix", SevInfo, fmt.Sprintf("every value of key column %s starts with \"%s\" (%d of at least %d bytes): the shared prefix is stored in every key and spreads nothing (the guide: keep keys short)", kc.Name, kc.CommonPrefix, kc.PrefixBytes, kc.MinBytes),
					map[string]float64{"column": float64(i + 1), "prefix_bytes": float64(kc.PrefixBytes), "min_bytes": float64(kc.MinBytes)}))
			}
		}
		if kc.Numeric && kc.Distinct > 1 && kc.MeanBytes > 8 && !strings.Contains(strings.ToLower(kc.Expr), "long(") && !hashedColumn(kc) {
			fs = append(fs, finding("key_column_long", SevInfo, fmt.Sprintf("key column %s holds only numbers written as text (up to %d bytes): long(%s) stores each in 8 bytes and keeps their numeric order (the guide: '2015122410' as a long)", kc.Name, kc.MaxBytes, kc.Expr),
				map[string]float64{"column": float64(i + 1), "max_bytes": float64(kc.MaxBytes)}))
		} else if isTextType(kc.Type) && kc.Distinct > 1 && kc.Distinct <= codeMaxValues && kc.MinBytes >= codeMinBytes && !strings.Contains(strings.ToLower(kc.Expr), "code(") && !hashedColumn(kc) {
			fs = append(fs, finding("key_column_code", SevInfo, fmt.Sprintf("key column %s has only %s%s distinct values of %s: code(%s, DICT) with a codes: dictionary stores each in a short code (the guide: 'taobao' as 'tb')", kc.Name, about, count(kc.Distinct), byteRange(kc.MinBytes, kc.MaxBytes), kc.Expr),
				map[string]float64{"column": float64(i + 1), "distinct": float64(kc.Distinct), "max_bytes": float64(kc.MaxBytes)}))
		}
	}
	return fs
}

// hashedColumn: the column's expression already leads with a hash (md5(id).substr(0,4) + id).
func hashedColumn(kc KeyColumn) bool {
	e := strings.ToLower(kc.Expr)
	for _, f := range []string{"md5(", "hash(", "sha1(", "sha256(", "crc32(", "murmur3(", "reverse("} {
		if strings.HasPrefix(e, f) {
			return true
		}
	}
	return false
}

// splitByNext: the first column's most frequent value passes the region size and the next key
// column spreads its rows (not incremental within it, enough values): Lindorm splits it.
func splitByNext(rep *Report) bool {
	kcs := rep.Mapping.KeyColumns
	if len(kcs) < 2 || len(rep.FirstColumn.Top) == 0 {
		return false
	}
	size := rep.Recommendation.RegionSize
	if size <= 0 {
		size = transform.DefaultRegionSize
	}
	bytes := int64(rep.FirstColumn.Top[0].Share * float64(rep.Totals.EstimatedTargetBytes))
	next := kcs[1]
	return bytes > size && !next.Incremental && next.Distinct >= (bytes+size-1)/size
}

// skewFinding judges the heaviest first-column value with regions bounded by the full key:
// a value whose rows pass the region size is split by the next key columns, and stays one hot
// range only when it is small or the next column rises within it.
func skewFinding(rep *Report, top TopValue, limit float64) Finding {
	fc := rep.FirstColumn
	ev := map[string]float64{"top_share": top.Share, "top_rows_min": float64(top.RowsMin), "limit": limit}
	msg := fmt.Sprintf("the most frequent value of %s holds %s of the rows", fc.Name, pct(top.Share))
	if top.Share <= limit || fc.Distinct <= 1 {
		return finding("first_column_skew", SevInfo, msg, ev)
	}
	size := rep.Recommendation.RegionSize
	if size <= 0 {
		size = transform.DefaultRegionSize
	}
	bytes := int64(top.Share * float64(rep.Totals.EstimatedTargetBytes))
	pieces := (bytes + size - 1) / size
	ev["value_bytes"], ev["region_size"], ev["split_regions"] = float64(bytes), float64(size), float64(pieces)
	head := fmt.Sprintf("skewed first column: %s = \"%s\" holds %s of the rows (about %s)", fc.Name, top.Value, pct(top.Share), transform.FormatSize(bytes))
	if asked := max(rep.Plan.Regions, rep.Plan.Asked); fc.Distinct < int64(asked) {
		head += fmt.Sprintf(", and %s takes %s values for %d regions: enumerated data (the primary-key guide: \"Do not specify a column that contains enumerated data, such as order types, ... as the first primary key column\")", fc.Name, count(fc.Distinct), asked)
	}
	kcs := rep.Mapping.KeyColumns
	switch {
	case len(kcs) < 2:
		return finding("first_column_skew", SevWarning, head+"; the key has no other column to split it by: its key range stays hot however the table is split", ev)
	case bytes <= size:
		return finding("first_column_skew", SevWarning, fmt.Sprintf("%s; under the region size (%s), it stays in one region, a hot range: pre-split can only cut between values of %s", head, transform.FormatSize(size), fc.Name), ev)
	}
	next := kcs[1]
	ev["next_rises"] = b2f(next.Incremental)
	ev["next_distinct"] = float64(next.Distinct)
	split := fmt.Sprintf("%s; past the region size (%s) Lindorm splits it into about %d regions by the next key column %s", head, transform.FormatSize(size), pieces, next.Name)
	switch {
	case next.Incremental:
		return finding("first_column_skew", SevWarning, split+", but "+next.Name+" is incremental within it: every new row lands in the last of them, one hot range", ev)
	case next.Distinct < pieces:
		return finding("first_column_skew", SevWarning, fmt.Sprintf("%s, but %s has only %s values: at most that many ranges share its writes", split, next.Name, count(next.Distinct)), ev)
	}
	return finding("first_column_skew", SevInfo, split+", which spreads its writes over them; pre-split can only cut between values of "+fc.Name+", so a bulk load writes it into one region that Lindorm splits afterwards", ev)
}

// byteRange is "6 bytes" or "5 to 13 bytes".
func byteRange(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("%d bytes", lo)
	}
	return fmt.Sprintf("%d to %d bytes", lo, hi)
}
