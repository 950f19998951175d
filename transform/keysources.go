package transform

import (
	"slices"

	"github.com/rekey/rekey/pipeline"
)

// KeySourceColumns lists, for each primary-key column in key order, the source columns its value
// is computed from (following target.columns entries), in order of first use: a bare source
// column lists itself, md5(userid).substr(0,4) + userid lists userid, random(n) and literals list
// nothing. `rekey report` uses it to show the source values behind a key and to derive the
// source's own key for the advisor.
func (p *Program) KeySourceColumns() [][]string {
	out := make([][]string, p.target.KeyLen)
	for i, col := range p.cols[:p.target.KeyLen] {
		seen := map[string]bool{}
		var names []string
		add := func(n string) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		var visit func(c colDef, depth int)
		visit = func(c colDef, depth int) {
			if c.expr == nil {
				if c.src >= 0 && c.src < len(p.source) {
					add(p.source[c.src].Name)
				}
				return
			}
			c.expr.walk(func(t *texpr) {
				switch t.op {
				case opSrc:
					add(p.source[t.idx].Name)
				case opTgt:
					if depth < len(p.cols) {
						visit(p.cols[t.idx], depth+1)
					}
				}
			})
		}
		visit(col, 0)
		out[i] = names
	}
	return out
}

// KeyBuckets lists, for each primary-key column in key order, n when the column only takes the
// values 0..n-1 (x % n with a constant n, or random(n): the guide's modulo bucket and salt), else
// 0. A reader can enumerate such a column: `rekey report` counts a query over it as n scans.
func (p *Program) KeyBuckets() []int64 {
	out := make([]int64, p.target.KeyLen)
	for i, col := range p.cols[:p.target.KeyLen] {
		if n, ok := bucketCount(col, p.cols); ok && n > 0 && isIntegral(col.typ.T) {
			out[i] = n
		}
	}
	return out
}

// KeyOrderedSources lists, for each primary-key column in key order, the source column whose
// order the key column keeps, so that a range of that column is a range of the key column: the
// column as it is when its type keeps Cassandra's order (CQLOrderKept: not a timeuuid, whose
// text starts with its time's low bits), long(column) (the order of the numbers it holds: a range of order numbers kept
// as text is a range of the BIGINT), or code(column, dict) through a dictionary whose codes sort
// as its values do and with on_missing_code: reject (a kept value would fall anywhere). "" for
// any other column.
func (p *Program) KeyOrderedSources() []string {
	out := make([]string, p.target.KeyLen)
	for i, col := range p.cols[:p.target.KeyLen] {
		switch e := col.expr; {
		case e == nil && col.src >= 0 && col.src < len(p.source) && CQLOrderKept(p.source[col.src].Type):
			out[i] = p.source[col.src].Name
		case e != nil && e.op == opSrc && CQLOrderKept(p.source[e.idx].Type):
			out[i] = p.source[e.idx].Name
		case e != nil && e.op == opLong && e.args[0].op == opSrc:
			out[i] = p.source[e.args[0].idx].Name
		case e != nil && e.op == opCode && e.args[0].op == opSrc && !p.keepMissing && e.dict.ordered(e.args[0].typ):
			out[i] = p.source[e.args[0].idx].Name
		}
	}
	return out
}

// ordered: the codes rise strictly with the values in the order of t, the type of the column
// looked up: text and bytes in the keys' own (byte) order, as they are sorted; any other type in
// its order, the keys read as its values ("2" before "10" for a number, though not as text). A
// key that is no value of t, or two keys of one value, make it false.
func (d *dictionary) ordered(t colType) bool {
	if t.T == pipeline.TypeVarchar || t.T == pipeline.TypeVarbinary {
		for i := 1; i < len(d.vals); i++ {
			if d.vals[i-1] >= d.vals[i] {
				return false
			}
		}
		return true
	}
	type entry struct {
		key  pipeline.Value
		code string
	}
	es := make([]entry, len(d.keys))
	for i, k := range d.keys {
		v, err := parseLiteral(k, t)
		if err != nil {
			return false
		}
		es[i] = entry{v, d.vals[i]}
	}
	slices.SortFunc(es, func(a, b entry) int { return pipeline.Compare(t.T, a.key, b.key) })
	for i := 1; i < len(es); i++ {
		if pipeline.Compare(t.T, es[i-1].key, es[i].key) == 0 || es[i-1].code >= es[i].code {
			return false
		}
	}
	return true
}

// KeyElementTexts splits a primary_key string into the text of each element, between its
// brackets, as written (vars and target.columns names unresolved): `rekey report` rewrites one
// element of a mapping's key and keeps the others as the user wrote them.
func KeyElementTexts(pk string) ([]string, error) {
	elems, outer := parseKey(pk)
	if outer != nil {
		return nil, outer
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if e.err != nil {
			return nil, e.err
		}
		out[i] = e.text
	}
	return out, nil
}
