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
// Each hash prefix and DESC design that holds such a column as it is is proposed with the column
// rewritten too (combine): the guide's shortening on top of its spread.
//
// The figures of every row analysed decide too: long() only when every value of the column was
// such an integer, code() only when the column has no more distinct values than the subsample
// holds (its dictionary then covers them). A value the run did not see is rejected when the table
// is migrated (long(): not an integer; code(): on_missing_code, reject unless the mapping says
// keep), never merged.

// rewrite is one key column the guide's shortening applies to: a text source column as the
// mapping's key takes it, stored as long() or code().
type rewrite struct {
	elem int    // the mapping's key element
	col  string // the source column
	kind string // "long" or "code"
	expr string // the rewritten key column: long(`c`) AS c_long, code(`c`, DICT) AS c_code
	dict transform.Dict
	// tradeOff says what the rewrite does, for the mapping with it; note, in a sentence, for a
	// derived design with it
	tradeOff, note string
}

// findRewrites are the long() and code() rewrites of the mapping's key columns, from the values
// the subsample holds and the figures of every row analysed (all).
func findRewrites(prog *transform.Program, m *transform.Mapping, recs []pipeline.Record, all *collide.Acc) []rewrite {
	if m == nil || len(recs) == 0 || all == nil {
		return nil
	}
	elems := prog.KeyElements()
	srcs := prog.KeySourceColumns()
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
	var out []rewrite
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
			out = append(out, rewrite{elem: i, col: col, kind: "long", expr: "long(" + quoteName(col) + ") AS " + quoteName(freeName(col+"_long", taken)),
				tradeOff: fmt.Sprintf("The mapping's design with %s stored as a BIGINT: every value the subsample holds is an integer written as text, 8 bytes instead of up to %d, in numeric order (the guide: '2015122410' as Long(2015122410)). Clients look up %s by its number; a value that is not an integer is rejected.", col, collide.MaxLen(vals), col),
				note:     fmt.Sprintf("%s is stored as a BIGINT (long(), the guide's '2015122410' as Long(2015122410)): 8 bytes instead of up to %d, in numeric order; clients look it up by its number, and a value that is not an integer is rejected.", col, collide.MaxLen(vals))})
		case len(vals) <= codeMaxValues && distinct <= int64(len(vals)) && bytes >= int64(codeMinBytes)*rows:
			d := codeDict(freeName(col+"_codes", dicts), vals)
			out = append(out, rewrite{elem: i, col: col, kind: "code", expr: "code(" + quoteName(col) + ", " + d.Name + ") AS " + quoteName(freeName(col+"_code", taken)), dict: d,
				tradeOff: fmt.Sprintf("The mapping's design with the %d values of %s replaced by %d-character codes in the dictionary %s (the guide: 'taobao' as 'tb'); the codes keep the values' order. Clients look %s up by its code; a value missing from the dictionary follows on_missing_code (reject, the default, sends the row to the rejects file: add the value to target.codes before migrating).", len(vals), col, len(d.Entries[0][1]), d.Name, col),
				note:     fmt.Sprintf("The %d values of %s are stored as %d-character codes in the dictionary %s (code(), the guide's 'taobao' as 'tb'), in the values' order; clients look %s up by its code, and a value missing from the dictionary is rejected unless target.codes gains it.", len(vals), col, len(d.Entries[0][1]), d.Name, col)})
		}
	}
	return out
}

// AddRewrites adds the designs with the guide's shorter keys: the mapping's key with each
// long() or code() rewrite, and each hash prefix or DESC design with it (combine).
func (a *Advisor) AddRewrites(recs []pipeline.Record, all *collide.Acc) {
	a.rewrites = findRewrites(a.prog, a.mapping, recs, all)
	if len(a.rewrites) == 0 {
		return
	}
	combined := combine(a.Specs, a.rewrites)
	texts, err := transform.KeyElementTexts(a.mapping.Target.PrimaryKey)
	if err != nil || len(texts) != len(a.prog.KeyElements()) {
		a.Specs = append(a.Specs, combined...)
		return
	}
	elems := a.prog.KeyElements()
	for _, rw := range a.rewrites {
		// the key as the mapping writes it, the rewritten element replaced
		pk := ""
		for k, t := range texts {
			if k == rw.elem {
				t = rw.expr
				if elems[k].Desc {
					t += " DESC"
				}
			}
			pk += "[" + t + "]"
		}
		a.Specs = append(a.Specs, altSpec{id: rw.kind + "_" + elems[rw.elem].Name, name: "the mapping with " + rw.kind + "(" + rw.col + ")", pk: pk,
			keepMapping: true, rewrite: true, dict: rw.dict, tradeOff: rw.tradeOff})
	}
	a.Specs = append(a.Specs, combined...)
}

// combinable are the derived designs (by id suffix) a shorter key column combines with: the hash
// prefixes and the guide's DESC for a newest-first query.
var combinable = []string{"hash_prefix", "hash_prefix_newest_first", "newest_first", "hash_next", "bucket_newest_first"}

// combine gives, for each derived design of combinable kind that holds a rewritten column as it
// is (or DESC), the design with the column rewritten: one-to-one, so it overwrites what the
// design overwrites, with a shorter key. A long() ranks by its shorter key; a code() ranks with
// the design it shortens, after it (its dictionary must be kept complete). Neither is listed
// on top of a design graded poor.
func combine(specs []altSpec, rws []rewrite) []altSpec {
	var out []altSpec
	for _, s := range specs {
		if s.rewrite || s.keepMapping || !slices.ContainsFunc(combinable, func(k string) bool { return s.id == k || strings.HasSuffix(s.id, "_"+k) }) {
			continue
		}
		texts, err := transform.KeyElementTexts(s.pk)
		if err != nil {
			continue
		}
		for _, rw := range rws {
			q := quoteName(rw.col)
			at := slices.IndexFunc(texts, func(t string) bool { return t == q || t == q+" DESC" })
			if at < 0 || s.dict.Name != "" {
				continue
			}
			pk := ""
			for k, t := range texts {
				if k == at {
					t = strings.Replace(t, q, rw.expr, 1)
				}
				pk += "[" + t + "]"
			}
			c := s
			c.id, c.name, c.pk, c.dict = s.id+"_"+rw.kind+"_"+rw.col, s.name+", "+rw.kind+"("+rw.col+")", pk, rw.dict
			c.tradeOff = s.tradeOff + " " + rw.note
			c.shortens = s.id
			if rw.kind == "code" {
				c.codeOf = s.id
			}
			out = append(out, c)
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
