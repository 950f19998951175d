package advise

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// Declared queries and how a key design serves them, in the design guide's terms. Lindorm
// matches a query's conditions against the key from its first column on: columns fixed by
// equality narrow the key range; a range on a key column bounds it, and every key column after
// the range is only filtered ("if a range condition is specified for a primary key column, the
// leftmost primary key is not preferentially matched even if other equivalent conditions are
// specified": LindormTable scans and filters); a first key column the query does not fix is a
// scan of the whole table, which Lindorm rejects by default. A key column that takes a few known
// values (a modulo bucket, a salt) can be enumerated by the client: one scan per value.

// ParseQuery reads --query: terms separated by commas, `COLUMN=` (or `COLUMN=?`) for a column
// looked up by equality, `COLUMN range` for the column looked up by a range, and newest_first
// when the query reads the range from its highest value down:
//
//	--query 'device_id=, ts range'
//	--query 'device_id=, ts range, newest_first'
func ParseQuery(s string) (transform.Query, error) {
	var q transform.Query
	bad := func(term, why string) (transform.Query, error) {
		return transform.Query{}, fmt.Errorf("--query %q: %s: write equality as COLUMN= and a range as COLUMN range, separated by commas, e.g. --query 'device_id=, ts range'", s, strings.TrimSpace(term+" "+why))
	}
	for _, term := range strings.Split(s, ",") {
		t := strings.TrimSpace(term)
		if t == "" {
			continue
		}
		switch {
		case t == "newest_first":
			q.NewestFirst = true
		case strings.HasSuffix(t, "=?") || strings.HasSuffix(t, "="):
			name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "?"), "="))
			if name == "" || strings.ContainsAny(name, " =") {
				return bad(quoteName(t), "is not a column name followed by =")
			}
			q.Equal = append(q.Equal, name)
		case strings.HasSuffix(t, " range"):
			name := strings.TrimSpace(strings.TrimSuffix(t, " range"))
			if name == "" || strings.ContainsAny(name, " =") {
				return bad(quoteName(t), "is not a column name followed by range")
			}
			if q.Range != "" {
				return bad("", "more than one range column ("+q.Range+", "+name+"): a key range can follow only one")
			}
			q.Range = name
		default:
			return bad(quoteName(t), "is neither COLUMN=, COLUMN range nor newest_first")
		}
	}
	if msgs := transform.CheckQuery(q); len(msgs) > 0 {
		return bad("", msgs[0])
	}
	return q, nil
}

// CheckQueries reports --query columns that are not source columns.
func CheckQueries(qs []transform.Query, src pipeline.SourceSchema) error {
	for _, q := range qs {
		cols := append(append([]string(nil), q.Equal...), q.Range)
		for _, c := range cols {
			if c != "" && src.Index(c) < 0 {
				return fmt.Errorf("--query %q: %q is not a source column (source columns: %s)", q.String(), c, strings.Join(src.Names(), ", "))
			}
		}
	}
	return nil
}

// keyCol is what the planner needs of one key column.
type keyCol struct {
	name    string
	expr    string
	sources []string
	ident   string // the source column whose order the key column keeps (it as it is, an ordered code())
	// asText is the CQL type of the source column the key column holds as it is, when Cassandra
	// orders it otherwise than the key's text does (a timeuuid by its time)
	asText  string
	buckets int64 // > 0: the column takes the values 0..buckets-1
	desc    bool  // declared DESC
}

func KeyShape(p *transform.Program) []keyCol {
	srcs := p.KeySourceColumns()
	buckets := p.KeyBuckets()
	ordered := p.KeyOrderedSources()
	var out []keyCol
	for i, ke := range p.KeyElements() {
		c := keyCol{name: ke.Name, expr: ke.Expr, sources: srcs[i], buckets: buckets[i], desc: ke.Desc}
		if len(c.sources) == 1 && ordered[i] == c.sources[0] {
			c.ident = c.sources[0]
		}
		if len(c.sources) == 1 && c.ident == "" && (ke.Expr == c.sources[0] || ke.Expr == "`"+c.sources[0]+"`") {
			if j := p.Source().Index(c.sources[0]); j >= 0 && !transform.CQLOrderKept(p.Source()[j].Type) {
				c.asText = p.Source()[j].Type
			}
		}
		out = append(out, c)
	}
	return out
}

// scrambles says how key column c, computed from source column s, loses the order of s.
func (c keyCol) scrambles(s string) string {
	if c.asText != "" {
		return fmt.Sprintf("the key holds %s (%s) as text, which Cassandra orders otherwise: by its time or its bytes", s, c.asText)
	}
	return fmt.Sprintf("%s scrambles the order of %s", c.expr, s)
}

func ListText(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// PlanQuery walks the key from its first column: columns the query fixes (every source column
// they are computed from is compared by equality), columns the client enumerates (buckets and
// salts), then the range column as it is (a bounded key range) or a column nothing bounds.
func PlanQuery(key []keyCol, q transform.Query) model.QueryPlan {
	p := model.QueryPlan{Query: q.String(), Filtered: []string{}}
	w := walkKey(key, q)
	for _, c := range q.Equal {
		if !w.used[c] {
			p.Filtered = append(p.Filtered, c)
		}
	}
	if q.Range != "" && !w.used[q.Range] {
		p.Filtered = append(p.Filtered, q.Range)
	}
	filtered := ""
	if len(p.Filtered) > 0 {
		filtered = ", filtering " + ListText(p.Filtered)
	}
	switch {
	case w.stop < 0 && w.useful == len(key)-1:
		p.Access, p.Scans = "get", w.fan
		if w.fan == 1 {
			p.Note = "a GET: the query fixes every key column" + filtered
		} else {
			p.Note = fmt.Sprintf("%d GETs, one per value of %s, which the client cannot compute from the query%s", w.fan, ListText(w.enum), filtered)
		}
	case w.rangeAt:
		p.Access, p.Scans = "scan", w.fan
		p.Note = rangeScanNote(q, w, p.Filtered)
	case w.useful < 0:
		p.Access, p.Scans = "full_scan", -1
		p.Note = "a scan of every region (the whole table, which Lindorm refuses by default)" + filtered + ": " + fullScanWhy(key, q, w)
	default:
		p.Access, p.Scans = "scan", w.fan
		p.Note = fmt.Sprintf("one SCAN of all rows with %s fixed by the query%s", ListText(w.prefix), w.times())
		if len(p.Filtered) > 0 {
			next := key[w.useful+1]
			p.Note += fmt.Sprintf(", filtering %s: key column %s comes next and the query does not fix it", ListText(p.Filtered), next.name)
			for _, s := range next.sources {
				if s == q.Range && next.ident == "" {
					p.Note += " (" + next.scrambles(s) + ")"
					break
				}
			}
		}
	}
	if q.NewestFirst && !(w.rangeAt && w.rangeDesc) {
		p.Unordered = true
		p.Note += fmt.Sprintf("; newest first: the key does not store %s DESC where the scan seeks, so the rows come back oldest first, to be read backwards or sorted by the client (the guide: declare [%s DESC] after the columns the query fixes)", q.Range, q.Range)
	}
	return p
}

// keyWalk is how far a query gets along a key from its first column (walkKey).
type keyWalk struct {
	used   map[string]bool // the query's columns the key seeks on
	fan    int64           // scans or gets: the values of the enumerated buckets before useful
	enum   []string        // those buckets' columns
	useful int             // the last key column the query fixes or bounds (-1: none)
	prefix []string        // the key columns the query fixes
	stop   int             // the first key column the query neither fixes nor enumerates (-1: none)
	// rangeAt: the walk stopped at the query's range column (a key range), stored DESC when rangeDesc
	rangeAt, rangeDesc bool
}

// walkKey walks the key from its first column: columns the query fixes (every source column
// they are computed from is compared by equality), columns the client enumerates (buckets and
// salts), then the range column as it is or a column nothing bounds. The key columns up to the
// last one the query fixes or bounds are what the scan seeks on; buckets after it are not worth
// enumerating (a scan of the prefix covers them).
func walkKey(key []keyCol, q transform.Query) keyWalk {
	eq := map[string]bool{}
	for _, c := range q.Equal {
		eq[c] = true
	}
	w := keyWalk{used: map[string]bool{}, useful: -1, stop: -1, fan: 1}
	fan := int64(1)
	var enum []string
	for i, c := range key {
		all := len(c.sources) > 0 || c.buckets == 0 // a constant is fixed; random(n) is not
		for _, s := range c.sources {
			all = all && eq[s]
		}
		if all {
			for _, s := range c.sources {
				w.used[s] = true
			}
			w.prefix = append(w.prefix, c.name)
			w.useful, w.fan, w.enum = i, fan, append([]string(nil), enum...)
			continue
		}
		if c.buckets > 0 {
			fan = min(fan*c.buckets, 1<<40)
			enum = append(enum, c.name)
			continue
		}
		w.stop = i
		if q.Range != "" && c.ident == q.Range {
			w.used[q.Range] = true
			w.rangeAt, w.rangeDesc = true, c.desc
			w.useful, w.fan, w.enum = i, fan, append([]string(nil), enum...)
		}
		break
	}
	return w
}

// times is the end of a scan's note when it is run once per value of enumerated buckets.
func (w keyWalk) times() string {
	if w.fan == 1 {
		return ""
	}
	return fmt.Sprintf(", times %d: one per value of %s, which the client cannot compute from the query (merged by the client)", w.fan, ListText(w.enum))
}

// rangeScanNote describes a scan of a key range of the query's range column.
func rangeScanNote(q transform.Query, w keyWalk, filteredCols []string) string {
	note := "one SCAN of a " + q.Range + " range"
	if len(w.prefix) > 0 {
		note += " within " + ListText(w.prefix) + " fixed by the query"
	}
	note += w.times()
	var after []string
	for _, c := range filteredCols {
		if c != q.Range {
			after = append(after, c)
		}
	}
	if len(after) > 0 {
		note += fmt.Sprintf(": the range column %s stands before %s in the key, so the scan reads the whole %s range for every value of %s and filters %s (put %s first to make it a key range)",
			q.Range, ListText(after), q.Range, ListText(after), ListText(after), ListText(after))
	}
	if q.NewestFirst && w.rangeDesc {
		note += fmt.Sprintf(", newest first in key order (%s DESC)", q.Range)
	}
	return note
}

// fullScanWhy says why a query fixes no key column a scan could seek on.
func fullScanWhy(key []keyCol, q transform.Query, w keyWalk) string {
	c := key[max(w.stop, 0)]
	why := fmt.Sprintf("the query does not fix the first key column %s", key[0].name)
	if len(w.enum) > 0 || w.stop > 0 {
		why = fmt.Sprintf("the query fixes no key column (%s can only be enumerated, then %s is not in the query)", ListText(enumAll(key, w.stop)), c.name)
	}
	for _, s := range c.sources {
		if s == q.Range && c.ident == "" {
			why += fmt.Sprintf(" (%s: a %s range is not a key range)", c.scrambles(s), s)
			break
		}
	}
	return why
}

// enumAll names the key columns before stop (the enumerated buckets of a plan that fixes none).
func enumAll(key []keyCol, stop int) []string {
	if stop < 0 {
		stop = len(key)
	}
	var out []string
	for _, c := range key[:stop] {
		out = append(out, c.name)
	}
	return out
}

// queryCost condenses a design's plans for ranking: queries that scan the whole table, queries
// that read rows they filter out, newest-first queries the key does not serve in its order, and
// the scans (a full scan counting as n).
func queryCost(plans []model.QueryPlan, n int) (full, overread, unordered int, scans int64) {
	for _, p := range plans {
		if p.Unordered {
			unordered++
		}
		switch {
		case p.Access == "full_scan":
			full++
			scans += int64(max(n, 1))
			continue
		case p.Access == "scan" && len(p.Filtered) > 0:
			overread++
		}
		scans += p.Scans
	}
	return
}
