package advise

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/transform"
)

// The guide's shorter keys: "replace the STRING data type with the LONG or INT data type"
// ('2015122410' as Long(2015122410)) and "replace names with codes" ('taobao' as 'tb'). Where a
// key column of the mapping is a text source column as it is, the advisor proposes the mapping's
// design with that column rewritten, judged on the subsample like every design:
//
//	long(c)        every value is an integer written canonically (no sign +, no leading zeros),
//	               so the rewrite is one-to-one and keeps the numeric order
//	code(c, DICT)  at most codeMaxValues distinct values averaging codeMinBytes or more; DICT maps
//	               them, sorted, to fixed-width base-36 codes, so the codes keep the values' order
//	               and the same values always get the same codes
//
// The figures of every row analysed decide too: long() only when every value of the column was
// such an integer, code() only when the column has no more distinct values than the subsample
// holds (its dictionary then covers them). A value the run did not see is rejected when the table
// is migrated (long(): not an integer; code(): on_missing_code, reject unless the mapping says
// keep), never merged.

// RewriteSpecs are the long() and code() designs for the mapping's key columns, from the values
// the subsample holds and the figures of every row analysed (all).
func RewriteSpecs(prog *transform.Program, m *transform.Mapping, recs []pipeline.Record, all *collide.Acc) []altSpec {
	if m == nil || len(recs) == 0 || all == nil {
		return nil
	}
	elems := prog.KeyElements()
	srcs := prog.KeySourceColumns()
	texts, err := transform.KeyElementTexts(m.Target.PrimaryKey)
	if err != nil || len(texts) != len(elems) {
		return nil
	}
	// the key as the mapping writes it, element i replaced by expr
	keyWith := func(i int, expr string) string {
		s := ""
		for k, t := range texts {
			if k == i {
				t = expr
				if elems[i].Desc {
					t += " DESC"
				}
			}
			s += "[" + t + "]"
		}
		return s
	}
	dicts := map[string]bool{}
	for _, d := range m.Target.Codes {
		dicts[strings.ToLower(d.Name)] = true
	}
	// the rewritten key column gets a name of its own: the source column stays a value column,
	// so every row still holds the value as it was
	taken := map[string]bool{}
	for _, c := range prog.Source() {
		taken[strings.ToLower(c.Name)] = true
	}
	for _, ke := range elems {
		taken[strings.ToLower(ke.Name)] = true
	}
	for _, e := range m.Target.Columns {
		taken[strings.ToLower(e.Name)] = true
	}
	var out []altSpec
	for i, ke := range elems {
		if len(srcs[i]) != 1 || ke.Type != pipeline.TypeVarchar || ke.Expr != quoteName(srcs[i][0]) {
			continue // only a text source column taken as it is
		}
		col := srcs[i][0]
		idx := prog.Source().Index(col)
		if idx < 0 {
			continue
		}
		vals, numeric, bytes, rows := columnValues(recs, idx)
		if len(vals) < 2 || i >= len(all.Cols) {
			continue
		}
		c := &all.Cols[i]
		numeric = numeric && c.Text && c.Numeric && c.N > 0
		var distinct int64
		switch {
		case i == 0:
			distinct, _ = all.Distinct()
		case c.Hll != nil:
			distinct = int64(c.Hll.Estimate())
		default:
			distinct = math.MaxInt64 // not counted: no dictionary
		}
		switch {
		case numeric:
			expr := "long(" + quoteName(col) + ") AS " + quoteName(freeName(col+"_long", taken))
			out = append(out, altSpec{id: "long_" + ke.Name, name: "the mapping with long(" + col + ")", pk: keyWith(i, expr), keepMapping: true, rewrite: true,
				tradeOff: fmt.Sprintf("The mapping's design with %s stored as a BIGINT: every value the subsample holds is an integer written as text, 8 bytes instead of up to %d, in numeric order (the guide: '2015122410' as Long(2015122410)). Clients look up %s by its number; a value that is not an integer is rejected.", col, collide.MaxLen(vals), col)})
		case len(vals) <= codeMaxValues && distinct <= int64(len(vals)) && bytes >= int64(codeMinBytes)*rows:
			d := codeDict(freeName(col+"_codes", dicts), vals)
			expr := "code(" + quoteName(col) + ", " + d.Name + ") AS " + quoteName(freeName(col+"_code", taken))
			out = append(out, altSpec{id: "code_" + ke.Name, name: "the mapping with code(" + col + ")", pk: keyWith(i, expr), keepMapping: true, rewrite: true, dict: d,
				tradeOff: fmt.Sprintf("The mapping's design with the %d values of %s replaced by %d-character codes in the dictionary %s (the guide: 'taobao' as 'tb'); the codes keep the values' order. Clients look %s up by its code; a value missing from the dictionary follows on_missing_code (reject, the default, sends the row to the rejects file: add the value to target.codes before migrating).", len(vals), col, len(d.Entries[0][1]), d.Name, col)})
		}
	}
	return out
}

// columnValues are the distinct non-null values of source column idx on the records, whether all
// of them are canonical 64-bit integers, and the bytes and count of the non-null values.
func columnValues(recs []pipeline.Record, idx int) (vals []string, numeric bool, bytes, rows int64) {
	seen := map[string]bool{}
	numeric = true
	for i := range recs {
		if idx >= len(recs[i].Values) {
			continue
		}
		v := recs[i].Values[idx]
		if v.Kind != pipeline.KindText {
			if v.Kind != pipeline.KindNull {
				numeric = false
			}
			continue
		}
		rows++
		bytes += int64(len(v.Str))
		if seen[v.Str] {
			continue
		}
		if len(seen) <= codeMaxValues || numeric {
			seen[v.Str] = true
		}
		if numeric {
			n, err := strconv.ParseInt(v.Str, 10, 64)
			numeric = err == nil && strconv.FormatInt(n, 10) == v.Str
		}
	}
	for s := range seen {
		vals = append(vals, s)
	}
	slices.Sort(vals)
	return vals, numeric, bytes, rows
}

// codeDict maps the sorted values to fixed-width base-36 codes ("0".."z", then "00".."zz"), in
// the values' order.
func codeDict(name string, vals []string) transform.Dict {
	width := 1
	for n := 36; n < len(vals); n *= 36 {
		width++
	}
	d := transform.Dict{Name: name}
	for i, v := range vals {
		code := strconv.FormatInt(int64(i), 36)
		d.Entries = append(d.Entries, [2]string{v, strings.Repeat("0", width-len(code)) + code})
	}
	return d
}

// keyText writes the key elements as the mapping language reads them.
func keyText(elems []transform.KeyElement) string {
	var s string
	for _, ke := range elems {
		e := ke.Expr
		if ke.Expr != ke.Name && ke.Expr != quoteName(ke.Name) {
			e += " AS " + quoteName(ke.Name)
		}
		if ke.Desc {
			e += " DESC"
		}
		s += "[" + e + "]"
	}
	return s
}
