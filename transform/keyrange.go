package transform

import (
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// KeyRange turns a clustering range of one partition (a Cassandra range tombstone: r.Set names
// the partition key cells it carries) into a range of target keys, when the key lets it be one:
// the key's leading columns are computed from the partition key cells only and read all of them
// (the source key as it is, or with a hash prefix of it), and every key column after them is a
// clustering column as it is, in clustering order, the bounds' columns first, of a type Cassandra
// orders as the key column does where the range's bounds differ. Any other key is
// refused (range_tombstone): the range's rows are not one range of the table. The bounds follow
// the table's clustering order (a bound names its DESC columns); where the key orders them the
// other way, the range's ends swap. out is scratch room for a target row.
func (e *Evaluator) KeyRange(b *pipeline.Batch, r *pipeline.Record, rng *pipeline.ClusteringRange, out []pipeline.Value) (pipeline.KeyRange, *pipeline.RowError) {
	p := e.p
	var kr pipeline.KeyRange
	refuse := func(msg string) (pipeline.KeyRange, *pipeline.RowError) {
		return kr, &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: p.target.Columns[0].Name,
			Message: "a range tombstone (a delete of a clustering range) cannot be applied: " + msg + "; delete the range from the table by hand"}
	}
	if p.saltUsed {
		return refuse("the key uses random(n)")
	}
	byDst := make([]*step, len(p.target.Columns))
	for i := range p.steps {
		byDst[p.steps[i].dst] = &p.steps[i]
	}
	allSet := func(st *step) bool {
		for _, c := range st.reads {
			if !r.Set[c] {
				return false
			}
		}
		return true
	}
	// the columns computed from the partition key cells alone, in the steps' order (an expression
	// may read other target columns); the key's leading ones are the prefix
	e.batch, e.saltOK = b, false
	clear(out)
	for i := range p.steps {
		st := &p.steps[i]
		if !allSet(st) {
			continue
		}
		v, rerr := e.eval(st, r, out)
		if rerr != nil {
			return kr, rerr
		}
		out[st.dst] = v
	}
	n := 0
	var read []int
	for n < p.target.KeyLen && allSet(byDst[n]) {
		kr.Prefix = append(kr.Prefix, out[n])
		for _, c := range byDst[n].reads {
			if !slices.Contains(read, c) {
				read = append(read, c)
			}
		}
		n++
	}
	for c, set := range r.Set {
		if set && !slices.Contains(read, c) {
			return refuse("the key's leading columns do not hold partition key column " + p.source[c].Name)
		}
	}
	// then the clustering columns as they are
	var clustering []int
	for j := n; j < p.target.KeyLen; j++ {
		st := byDst[j]
		if st.fn != nil || st.src < 0 {
			return refuse("key column " + st.field + " is computed (" + strings.Join(p.sourceNames(st.reads), ", ") + "), not a clustering column as it is")
		}
		if r.Set[st.src] {
			// the leading columns merge partitions that this one keeps apart: the range would
			// hold their rows too
			return refuse("key column " + st.field + " is partition key column " + p.source[st.src].Name + ", after a clustering column: the key's leading columns do not hold it")
		}
		clustering = append(clustering, st.src)
	}
	for _, bd := range []struct {
		src *pipeline.ClusteringBound
		dst *pipeline.KeyBound
	}{{&rng.Start, &kr.Start}, {&rng.End, &kr.End}} {
		if ok, rerr := e.keyBound(bd.src, bd.dst, clustering, byDst[n:]); rerr != nil {
			return kr, rerr
		} else if !ok {
			var names []string
			for _, c := range bd.src.Cols {
				names = append(names, p.source[c].Name)
			}
			return refuse("its bound names clustering columns " + strings.Join(names, ", ") + ", which are not the key columns after the partition key, in order")
		}
	}
	if i := p.orderedOtherwise(&kr, clustering, n); i >= 0 {
		src := &p.source[clustering[i]]
		return refuse("Cassandra orders clustering column " + src.Name + " (" + src.Type + ") otherwise than the " +
			p.target.Columns[n+i].Type.String() + " the key holds it as, so the range's rows are no one range of the key")
	}
	switch reversed, mixed := p.reversedInKey(rng, &kr, clustering, n); {
	case mixed != "":
		return refuse("the key orders clustering column " + mixed + " against the table's clustering order (ASC/DESC) unlike the columns before it, so the range is no one range of the key")
	case reversed:
		// the same rows, from the other end
		kr.Start, kr.End = kr.End, kr.Start
	}
	return kr, nil
}

// reversedInKey tells whether the range's bounds, which follow the table's clustering order,
// lie the other way round in the key's order: every clustering column that tells the bounds
// apart is DESC in one order and ASC in the other. The leading columns both bounds fix to one
// value tell nothing; mixed names a column reversed where one before it is not (or the other
// way round): then the range's rows are not one range of the key. clustering holds
// the source columns of the key columns from n on.
func (p *Program) reversedInKey(rng *pipeline.ClusteringRange, kr *pipeline.KeyRange, clustering []int, n int) (reversed bool, mixed string) {
	tableDesc := func(col int) bool {
		for _, b := range []*pipeline.ClusteringBound{&rng.Start, &rng.End} {
			if k := slices.Index(b.Cols, col); k >= 0 && k < len(b.Desc) {
				return b.Desc[k]
			}
		}
		return false
	}
	first := true
	for i, col := range clustering {
		if i >= len(kr.Start.Vals) && i >= len(kr.End.Vals) {
			break
		}
		keyCol := &p.target.Columns[n+i]
		if first && i < len(kr.Start.Vals) && i < len(kr.End.Vals) && pipeline.Compare(keyCol.Type, kr.Start.Vals[i], kr.End.Vals[i]) == 0 {
			continue
		}
		r := tableDesc(col) != keyCol.Desc
		switch {
		case first:
			reversed, first = r, false
		case r != reversed:
			return false, p.source[col].Name
		}
	}
	return reversed, ""
}

// orderedOtherwise finds a clustering column whose order decides which rows the range holds and
// which Cassandra orders otherwise than the key column holding it as it is: its place in
// clustering, or -1 when none. Such a column is a timeuuid (by its time, where its text starts with the time's low bits), a
// uuid, an inet (by its bytes, "10.0.0.10" after "10.0.0.2"), a collection, tuple or user type
// (by its elements, not its JSON text). The leading columns both bounds fix to one value decide
// nothing.
func (p *Program) orderedOtherwise(kr *pipeline.KeyRange, clustering []int, n int) int {
	first := true
	for i, c := range clustering {
		if i >= len(kr.Start.Vals) && i >= len(kr.End.Vals) {
			break
		}
		if first && i < len(kr.Start.Vals) && i < len(kr.End.Vals) && pipeline.Compare(p.target.Columns[n+i].Type, kr.Start.Vals[i], kr.End.Vals[i]) == 0 {
			continue
		}
		first = false
		if !CQLOrderKept(p.source[c].Type) {
			return i
		}
	}
	return -1
}

// CQLOrderKept tells whether Cassandra orders values of CQL type t as the key column that holds
// them as they are does (text and blobs by their bytes, numbers, booleans, times and dates by
// value): not a timeuuid, uuid, inet, collection, tuple or user type, which the key holds as text.
func CQLOrderKept(t string) bool {
	t = pipeline.NormalizeSourceType(t)
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = t[:i] // timestamp(s): the unit its integers are read in
	}
	switch t {
	case "text", "ascii", "bigint", "int", "smallint", "tinyint", "varint", "counter", "decimal", "boolean",
		"timestamp", "date", "time", "blob", "float", "double":
		return true
	}
	return false
}

// keyBound turns a clustering bound into a bound of the key columns after the partition key
// (clustering: their source columns; steps: their steps): ok is false when the bound's columns
// are not those, in order.
func (e *Evaluator) keyBound(src *pipeline.ClusteringBound, dst *pipeline.KeyBound, clustering []int, steps []*step) (ok bool, rerr *pipeline.RowError) {
	dst.Inclusive = src.Inclusive
	for i, c := range clustering[:min(len(src.Cols), len(clustering))] {
		k := slices.Index(src.Cols, c)
		if k < 0 {
			break
		}
		v, rerr := e.fit(steps[i], src.Vals[k])
		if rerr != nil {
			return false, rerr
		}
		dst.Vals = append(dst.Vals, v)
	}
	return len(dst.Vals) == len(src.Cols), nil
}

// eval computes one step's value, converted to its column's type.
func (e *Evaluator) eval(st *step, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
	var v pipeline.Value
	if st.fn == nil {
		v = r.Values[st.src]
	} else {
		var rerr *pipeline.RowError
		if v, rerr = st.fn(e, r, out); rerr != nil {
			if rerr.Field == "" {
				rerr.Field = st.field
			}
			return v, rerr
		}
	}
	if v.IsNull() && st.key {
		return v, e.nullKey(st, r)
	}
	return e.fit(st, v)
}

// fit converts v to st's column type.
func (e *Evaluator) fit(st *step, v pipeline.Value) (pipeline.Value, *pipeline.RowError) {
	if v.IsNull() || (v.Kind == st.kind && st.fast) {
		return v, nil
	}
	v, rerr := e.convert(v, st.typ)
	if rerr != nil {
		rerr.Field = st.field
	}
	return v, rerr
}

func (p *Program) sourceNames(idx []int) []string {
	names := make([]string, len(idx))
	for i, c := range idx {
		names[i] = p.source[c].Name
	}
	return names
}
