package advise

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/report/model"
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

// columnFindings are the per-column rules for the key columns after the first (the first has
// its own first_column_* findings) and the rewrites the guide proposes for any key column.
func columnFindings(rep *model.Report) []model.Finding {
	var fs []model.Finding
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
				fs = append(fs, finding("key_column_cardinality", model.SevInfo, fmt.Sprintf("key column %s has only %s%s distinct values: a region split inside one value of %s can cut it into at most %s ranges", kc.Name, about, model.Count(kc.Distinct), prefix(), model.Count(kc.Distinct)), ev))
			}
			if kc.PrefixBytes >= prefixBytes && 2*kc.PrefixBytes >= kc.MinBytes && kc.Distinct > 1 {
				fs = append(fs, finding("key_column_prefix", model.SevInfo, fmt.Sprintf("every value of key column %s starts with \"%s\" (%d of at least %d bytes): the shared prefix is stored in every key and spreads nothing (the guide: keep keys short)", kc.Name, kc.CommonPrefix, kc.PrefixBytes, kc.MinBytes),
					map[string]float64{"column": float64(i + 1), "prefix_bytes": float64(kc.PrefixBytes), "min_bytes": float64(kc.MinBytes)}))
			}
		}
		if kc.Numeric && kc.Distinct > 1 && kc.MeanBytes > 8 && !strings.Contains(strings.ToLower(kc.Expr), "long(") && !hashedColumn(kc) {
			fs = append(fs, finding("key_column_long", model.SevInfo, fmt.Sprintf("key column %s holds only numbers written as text (up to %d bytes): long(%s) stores each in 8 bytes and keeps their numeric order (the guide: '2015122410' as a long)", kc.Name, kc.MaxBytes, kc.Expr),
				map[string]float64{"column": float64(i + 1), "max_bytes": float64(kc.MaxBytes)}))
		} else if model.IsTextType(kc.Type) && kc.Distinct > 1 && kc.Distinct <= codeMaxValues && kc.MinBytes >= codeMinBytes && !strings.Contains(strings.ToLower(kc.Expr), "code(") && !hashedColumn(kc) {
			fs = append(fs, finding("key_column_code", model.SevInfo, fmt.Sprintf("key column %s has only %s%s distinct values of %s: code(%s, DICT) with a codes: dictionary stores each in a short code (the guide: 'taobao' as 'tb')", kc.Name, about, model.Count(kc.Distinct), byteRange(kc.MinBytes, kc.MaxBytes), kc.Expr),
				map[string]float64{"column": float64(i + 1), "distinct": float64(kc.Distinct), "max_bytes": float64(kc.MaxBytes)}))
		}
	}
	return fs
}

// hashedColumn: the column's expression already leads with a hash (md5(id).substr(0,4) + id).
func hashedColumn(kc model.KeyColumn) bool {
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
func splitByNext(rep *model.Report) bool {
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
func skewFinding(rep *model.Report, top model.TopValue, limit float64) model.Finding {
	fc := rep.FirstColumn
	ev := map[string]float64{"top_share": top.Share, "top_rows_min": float64(top.RowsMin), "limit": limit}
	msg := fmt.Sprintf("the most frequent value of %s holds %s of the rows", fc.Name, model.Pct(top.Share))
	if top.Share <= limit || fc.Distinct <= 1 {
		return finding("first_column_skew", model.SevInfo, msg, ev)
	}
	size := rep.Recommendation.RegionSize
	if size <= 0 {
		size = transform.DefaultRegionSize
	}
	bytes := int64(top.Share * float64(rep.Totals.EstimatedTargetBytes))
	pieces := (bytes + size - 1) / size
	ev["value_bytes"], ev["region_size"], ev["split_regions"] = float64(bytes), float64(size), float64(pieces)
	head := fmt.Sprintf("skewed first column: %s = \"%s\" holds %s of the rows (about %s)", fc.Name, top.Value, model.Pct(top.Share), transform.FormatSize(bytes))
	if asked := max(rep.Plan.Regions, rep.Plan.Asked); fc.Distinct < int64(asked) {
		head += fmt.Sprintf(", and %s takes %s values for %d regions: enumerated data (the primary-key guide: \"Do not specify a column that contains enumerated data, such as order types, ... as the first primary key column\")", fc.Name, model.Count(fc.Distinct), asked)
	}
	kcs := rep.Mapping.KeyColumns
	switch {
	case len(kcs) < 2:
		return finding("first_column_skew", model.SevWarning, head+"; the key has no other column to split it by: its key range stays hot however the table is split", ev)
	case bytes <= size:
		return finding("first_column_skew", model.SevWarning, fmt.Sprintf("%s; under the region size (%s), it stays in one region, a hot range: pre-split can only cut between values of %s", head, transform.FormatSize(size), fc.Name), ev)
	}
	next := kcs[1]
	ev["next_rises"] = model.B2f(next.Incremental)
	ev["next_distinct"] = float64(next.Distinct)
	split := fmt.Sprintf("%s; past the region size (%s) Lindorm splits it into about %d regions by the next key column %s", head, transform.FormatSize(size), pieces, next.Name)
	switch {
	case next.Incremental:
		return finding("first_column_skew", model.SevWarning, split+", but "+next.Name+" is incremental within it: every new row lands in the last of them, one hot range", ev)
	case next.Distinct < pieces:
		return finding("first_column_skew", model.SevWarning, fmt.Sprintf("%s, but %s has only %s values: at most that many ranges share its writes", split, next.Name, model.Count(next.Distinct)), ev)
	}
	return finding("first_column_skew", model.SevInfo, split+", which spreads its writes over them; pre-split can only cut between values of "+fc.Name+", so a bulk load writes it into one region that Lindorm splits afterwards", ev)
}

// byteRange is "6 bytes" or "5 to 13 bytes".
func byteRange(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("%d bytes", lo)
	}
	return fmt.Sprintf("%d to %d bytes", lo, hi)
}
