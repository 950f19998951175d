package transform

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Query is one access pattern the table has to serve, in the design guide's terms: source
// columns looked up by equality (WHERE device_id = ?) and at most one looked up by a range
// (AND ts BETWEEN ? AND ?). A mapping declares them in its queries: section:
//
//	queries:
//	  - {equal: [device_id], range: ts}
//	  - {equal: [device_id], range: ts, order: newest_first}
//	  - equal: [device_id, ts]
//
// order: newest_first says the query reads its range from the highest value down (the latest
// events of a device first); the guide stores such a column DESC in the key so that a SCAN
// returns them without sorting. oldest_first, the default, is the key's ascending order.
//
// They change nothing a migration writes (not part of the fingerprint); `rekey report` ranks key
// designs by how they serve them.
type Query struct {
	Equal []string // source columns compared with =, in the order given
	Range string   // the source column compared with a range; "" for none
	// NewestFirst: the query reads the range column from its highest value down (order:
	// newest_first), the guide's ORDER BY ... DESC.
	NewestFirst bool
}

// String renders the query as the report prints it: "device_id = ? and ts range".
func (q Query) String() string {
	var parts []string
	for _, c := range q.Equal {
		parts = append(parts, c+" = ?")
	}
	if q.Range != "" {
		parts = append(parts, q.Range+" range")
	}
	s := strings.Join(parts, " and ")
	if q.NewestFirst {
		s += ", newest first"
	}
	return s
}

// CheckQuery reports what is wrong with a query whatever the source: no column, a column twice,
// the range column also compared by equality. The returned messages name the column.
func CheckQuery(q Query) []string {
	var out []string
	if len(q.Equal) == 0 && q.Range == "" {
		out = append(out, "names no column: give equal (a list of source columns) and/or range (one source column)")
	}
	seen := map[string]bool{}
	for _, c := range q.Equal {
		switch {
		case c == "":
			out = append(out, "equal: an empty column name")
		case seen[c]:
			out = append(out, "equal: column "+strconv.Quote(c)+" is listed twice")
		}
		seen[c] = true
	}
	if q.Range != "" && seen[q.Range] {
		out = append(out, "column "+strconv.Quote(q.Range)+" is both in equal and the range: a range on a column already fixed by = reads nothing more")
	}
	if q.NewestFirst && q.Range == "" {
		out = append(out, "order: newest_first needs a range column: the column read newest first, e.g. {equal: [hostname], range: ts, order: newest_first}")
	}
	return out
}

// queries decodes the queries: section: a list of {equal: [names], range: name}.
func (d *decoder) queries(n *yaml.Node) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.ps.add("queries", n.Line, "want a list of queries, e.g. - {equal: [device_id], range: ts}, found %s", kindName(n))
		return
	}
	for i, e := range n.Content {
		path := "queries[" + strconv.Itoa(i) + "]"
		d.m.lines[path] = deref(e).Line
		if deref(e).Kind != yaml.MappingNode {
			d.ps.add(path, deref(e).Line, "want a query: {equal: [columns], range: column}, found %s", kindName(deref(e)))
			continue
		}
		f := d.fields(e, path, sectionFields("queries")...)
		var q Query
		if v, ok := f["equal"]; ok {
			v = deref(v)
			if v.Kind != yaml.SequenceNode {
				d.ps.add(path+".equal", v.Line, "want a list of source columns, e.g. equal: [device_id], found %s", kindName(v))
			} else {
				for k, c := range v.Content {
					if s, ok := d.scalar(c, path+".equal["+strconv.Itoa(k)+"]"); ok {
						q.Equal = append(q.Equal, s)
					}
				}
			}
		}
		if v, ok := f["range"]; ok {
			q.Range, _ = d.scalar(v, path+".range")
		}
		if v, ok := f["order"]; ok {
			if s, ok := d.scalar(v, path+".order"); ok {
				switch s {
				case "newest_first":
					q.NewestFirst = true
				case "oldest_first":
				default:
					d.ps.add(path+".order", deref(v).Line, "want newest_first or oldest_first (the order the query reads its range column in), found %q", s)
				}
			}
		}
		for _, msg := range CheckQuery(q) {
			d.ps.add(path, deref(e).Line, "%s", msg)
		}
		d.m.Queries = append(d.m.Queries, q)
	}
}

// checkQueries reports query columns that are not source columns.
func (c *compiler) checkQueries() {
	if len(c.src) == 0 {
		return // already reported: no source columns
	}
	for i, q := range c.m.Queries {
		path := "queries[" + strconv.Itoa(i) + "]"
		for k, name := range q.Equal {
			if name != "" && c.src.Index(name) < 0 {
				c.ps.add(path+".equal["+strconv.Itoa(k)+"]", 0, "%q is not a source column (source columns: %s)", name, strings.Join(c.src.Names(), ", "))
			}
		}
		if q.Range != "" && c.src.Index(q.Range) < 0 {
			c.ps.add(path+".range", 0, "%q is not a source column (source columns: %s)", q.Range, strings.Join(c.src.Names(), ", "))
		}
	}
}
