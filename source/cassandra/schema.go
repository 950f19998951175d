package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/pipeline"
)

// Column is one column of a Cassandra table, as system_schema.columns describes it.
type Column struct {
	Name     string
	Type     string // CQL type as Cassandra prints it, lowercased: "text", "frozen<map<text, int>>"
	Kind     string // partition_key, clustering, static or regular
	Position int    // within the partition key or the clustering key; -1 otherwise
	Desc     bool   // clustering order DESC
}

// Table is a table's schema: its columns in the order of SELECT *: the partition key, the
// clustering columns, then the static and regular columns by name.
type Table struct {
	Keyspace, Name string
	Columns        []Column
	// DefaultTTL is the table's default_time_to_live in seconds (0: none): the TTL of every cell
	// written without one of its own.
	DefaultTTL int
}

// PartitionKey lists the partition key columns in order.
func (t *Table) PartitionKey() []string { return t.names("partition_key") }

// Clustering lists the clustering columns in order.
func (t *Table) Clustering() []string { return t.names("clustering") }

func (t *Table) names(kind string) []string {
	var out []string
	for _, c := range t.Columns {
		if c.Kind == kind {
			out = append(out, c.Name)
		}
	}
	return out
}

// Column returns the named column.
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// Pseudo-column names for writetime(col) and ttl(col).
func WriteTimeColumn(col string) string { return "writetime_" + col }
func TTLColumn(col string) string       { return "ttl_" + col }

// readSchema reads a table's columns from system_schema; unknown keyspaces and tables are
// reported with the names that do exist.
func readSchema(ctx context.Context, sess *gocql.Session, ks, name string) (*Table, error) {
	q := func(stmt string, args ...any) *gocql.Query {
		return sess.Query(stmt, args...).WithContext(ctx).Consistency(gocql.One)
	}
	isView, err := findTable(q, ks, name)
	if err != nil {
		return nil, err
	}
	t := &Table{Keyspace: ks, Name: name}
	ttlOf := name
	if isView {
		// a materialized view's rows expire with its base table's (Cassandra refuses a
		// default_time_to_live of its own, so the view's is always 0): take the base table's
		if err := q(`SELECT base_table_name FROM system_schema.views WHERE keyspace_name = ? AND view_name = ?`, ks, name).Scan(&ttlOf); err != nil {
			return nil, fmt.Errorf("read system_schema.views: %w", err)
		}
	}
	if err := q(`SELECT default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`, ks, ttlOf).Scan(&t.DefaultTTL); err != nil {
		return nil, fmt.Errorf("read system_schema.tables: %w", err)
	}
	var c Column
	var order string
	iter := q(`SELECT column_name, kind, position, type, clustering_order FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?`, ks, name).Iter()
	for iter.Scan(&c.Name, &c.Kind, &c.Position, &c.Type, &order) {
		c.Type = strings.ToLower(strings.TrimSpace(c.Type))
		c.Desc = strings.EqualFold(order, "desc")
		if c.Kind != "partition_key" && c.Kind != "clustering" {
			c.Position = -1
		}
		t.Columns = append(t.Columns, c)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("read system_schema.columns: %w", err)
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("table %s.%s has no columns in system_schema.columns", ks, name)
	}
	rank := map[string]int{"partition_key": 0, "clustering": 1, "static": 2, "regular": 2}
	sort.SliceStable(t.Columns, func(i, j int) bool {
		a, b := t.Columns[i], t.Columns[j]
		if rank[a.Kind] != rank[b.Kind] {
			return rank[a.Kind] < rank[b.Kind]
		}
		if a.Kind == "partition_key" || a.Kind == "clustering" {
			return a.Position < b.Position
		}
		return a.Name < b.Name
	})
	if len(t.PartitionKey()) == 0 {
		return nil, fmt.Errorf("table %s.%s: system_schema.columns lists no partition key", ks, name)
	}
	return t, nil
}

// findTable finds table name of keyspace ks, or a materialized view of that name (isView); the
// error for a keyspace or a table that is not there names those that are.
func findTable(q func(stmt string, args ...any) *gocql.Query, ks, name string) (isView bool, err error) {
	var found string
	if err := q(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, ks).Scan(&found); err != nil {
		if err != gocql.ErrNotFound {
			return false, fmt.Errorf("read system_schema.keyspaces: %w", err)
		}
		var all []string
		iter := q(`SELECT keyspace_name FROM system_schema.keyspaces`).Iter()
		for iter.Scan(&found) {
			if !strings.HasPrefix(found, "system") {
				all = append(all, found)
			}
		}
		if err := iter.Close(); err != nil {
			return false, fmt.Errorf("read system_schema.keyspaces: %w", err)
		}
		sort.Strings(all)
		return false, fmt.Errorf("keyspace %q not found (keyspaces: %s)", ks, listOrNone(all))
	}
	var tables []string
	iter := q(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, ks).Iter()
	for iter.Scan(&found) {
		tables = append(tables, found)
	}
	if err := iter.Close(); err != nil {
		return false, fmt.Errorf("read system_schema.tables: %w", err)
	}
	if contains(tables, name) {
		return false, nil
	}
	var views []string
	iter = q(`SELECT view_name FROM system_schema.views WHERE keyspace_name = ?`, ks).Iter()
	for iter.Scan(&found) {
		views = append(views, found)
	}
	if err := iter.Close(); err != nil || !contains(views, name) {
		sort.Strings(tables)
		return false, fmt.Errorf("table %s.%s not found (tables in %s: %s)", ks, name, ks, listOrNone(tables))
	}
	return true, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	if len(l) > 30 {
		return strings.Join(l[:30], ", ") + fmt.Sprintf(", ... %d more", len(l)-30)
	}
	return strings.Join(l, ", ")
}

// isMultiCell tells whether a CQL type is a non-frozen collection or user-defined type: its
// value is many cells, each with its own write time and TTL (Cassandra 5 returns a list of them
// from writetime() and ttl(); older versions refuse them).
func isMultiCell(typ string) bool {
	return strings.HasPrefix(typ, "list<") || strings.HasPrefix(typ, "set<") || strings.HasPrefix(typ, "map<") || isUDT(typ)
}

// builtinTypes are the CQL types system_schema names without parameters.
var builtinTypes = map[string]bool{"ascii": true, "bigint": true, "blob": true, "boolean": true, "counter": true, "date": true,
	"decimal": true, "double": true, "duration": true, "float": true, "inet": true, "int": true, "smallint": true, "text": true,
	"time": true, "timestamp": true, "timeuuid": true, "tinyint": true, "uuid": true, "varchar": true, "varint": true}

// isUDT tells whether a CQL type is a non-frozen user-defined type: system_schema names it
// alone ("addr"; frozen, "frozen<addr>").
func isUDT(typ string) bool {
	return !strings.ContainsAny(typ, "<'") && !builtinTypes[typ]
}

// multiCellKind names the kind of a multi-cell type in messages.
func multiCellKind(typ string) string {
	if isUDT(typ) {
		return "user-defined type"
	}
	return "collection"
}

// selection is what a scan reads: the table's columns, then writetime() and ttl() columns.
type selection struct {
	schema pipeline.SourceSchema
	exprs  []string // the SELECT expressions, quoted
	types  []string // CQL type text of each selected column ("" for writetime/ttl)
	wt     []bool   // writetime columns (microseconds -> milliseconds)
	// dating are writetime() expressions read after the columns above, not part of records: a
	// row's newest one decides whether it is older than Config.Since.
	dating []string
	// cells are the record columns whose writetime() and ttl() are read after dating
	// (cellTimes), for Config.CellWriteTimes
	cells []int
	// untimed are the other non-key record columns (non-frozen collections): a row holding one
	// of them is not expired with its timed cells
	untimed []int
	// undated are the record columns dating cannot see (non-frozen collections and UDTs): a row
	// holding one is not skipped as older than since, as an element may have been written since
	undated []int
}

// cellTimes makes the scan read writetime() of every selected regular and static column that
// has one (not the pseudo-columns, not non-frozen collections), for Record.Times.
func (sel *selection) cellTimes(t *Table) {
	for i, col := range sel.schema {
		c, ok := t.Column(col.Name)
		if !ok || sel.types[i] == "" || c.Kind == "partition_key" || c.Kind == "clustering" {
			continue
		}
		if isMultiCell(c.Type) {
			sel.untimed = append(sel.untimed, i)
			continue
		}
		sel.cells = append(sel.cells, i)
	}
}

// dateRows makes the scan read writetime() of every regular and static column that has one
// (non-frozen collections have none), for the since= filter.
func (sel *selection) dateRows(t *Table) {
	for _, c := range t.Columns {
		if c.Kind == "partition_key" || c.Kind == "clustering" || isMultiCell(c.Type) {
			continue
		}
		sel.dating = append(sel.dating, "writetime("+quoteIdent(c.Name)+")")
	}
	for i, col := range sel.schema {
		if sel.types[i] != "" && isMultiCell(sel.types[i]) {
			if c, ok := t.Column(col.Name); ok && c.Kind != "partition_key" && c.Kind != "clustering" {
				sel.undated = append(sel.undated, i)
			}
		}
	}
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func newSelection(t *Table, writetime, ttl []string) (*selection, error) {
	sel := &selection{}
	for _, c := range t.Columns {
		sel.schema = append(sel.schema, pipeline.SourceColumn{Name: c.Name, Type: c.Type})
		sel.exprs = append(sel.exprs, quoteIdent(c.Name))
		sel.types = append(sel.types, c.Type)
		sel.wt = append(sel.wt, false)
	}
	add := func(fn string, cols []string, name func(string) string, typ string) error {
		seen := map[string]bool{}
		for _, col := range cols {
			c, ok := t.Column(col)
			switch {
			case !ok:
				return fmt.Errorf("%s=%s: table %s.%s has no column %q", fn, col, t.Keyspace, t.Name, col)
			case c.Kind == "partition_key" || c.Kind == "clustering":
				return fmt.Errorf("%s=%s: %s() is not defined on primary key columns", fn, col, fn)
			case isMultiCell(c.Type):
				return fmt.Errorf("%s=%s: %s() is not defined on the non-frozen %s %s (each of its cells has its own)", fn, col, fn, multiCellKind(c.Type), c.Type)
			case seen[col]:
				continue
			}
			seen[col] = true
			pseudo := name(col)
			if _, clash := t.Column(pseudo); clash {
				return fmt.Errorf("%s=%s: the table already has a column %q", fn, col, pseudo)
			}
			sel.schema = append(sel.schema, pipeline.SourceColumn{Name: pseudo, Type: typ})
			sel.exprs = append(sel.exprs, fn+"("+quoteIdent(col)+")")
			sel.types = append(sel.types, "")
			sel.wt = append(sel.wt, fn == "writetime")
		}
		return nil
	}
	if err := add("writetime", writetime, WriteTimeColumn, "timestamp"); err != nil {
		return nil, err
	}
	if err := add("ttl", ttl, TTLColumn, "int"); err != nil {
		return nil, err
	}
	return sel, nil
}

// readable refuses, before any range is read, a selected column of a type the driver hands over
// as a custom type, which the source cannot decode: Cassandra 5's vector<T, N> (alone or nested)
// and custom types (a quoted Java class name).
func (sel *selection) readable() error {
	for i, typ := range sel.types {
		if strings.Contains(typ, "vector<") || strings.Contains(typ, "'") {
			return fmt.Errorf("column %s: CQL type %s is not supported (supported: %s); "+
				"to migrate the other columns, list them under the mapping's source.columns", sel.schema[i].Name, typ, supportedTypes)
		}
	}
	return nil
}

// project narrows the selection to the given columns, in their order. Each must be a column of
// the selection with the same CQL type (spelling, frozen<> and varchar/text aside).
func (sel *selection) project(cols pipeline.SourceSchema) (*selection, error) {
	out := &selection{}
	var problems []string
	for _, c := range cols {
		j := sel.schema.Index(c.Name)
		if j < 0 {
			problems = append(problems, fmt.Sprintf("no column %q (columns: %s)", c.Name, strings.Join(sel.schema.Names(), ", ")))
			continue
		}
		if pipeline.NormalizeSourceType(c.Type) != pipeline.NormalizeSourceType(sel.schema[j].Type) {
			problems = append(problems, fmt.Sprintf("column %q is %s, not %s", c.Name, sel.schema[j].Type, c.Type))
			continue
		}
		out.schema = append(out.schema, sel.schema[j])
		out.exprs = append(out.exprs, sel.exprs[j])
		out.types = append(out.types, sel.types[j])
		out.wt = append(out.wt, sel.wt[j])
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

// statement is the token-range scan.
func (sel *selection) statement(t *Table) string {
	pk := t.PartitionKey()
	q := make([]string, len(pk))
	for i, c := range pk {
		q[i] = quoteIdent(c)
	}
	tk := "token(" + strings.Join(q, ", ") + ")"
	exprs := append(slices.Clip(sel.exprs), sel.dating...)
	for _, i := range sel.cells {
		exprs = append(exprs, "writetime("+sel.exprs[i]+")", "ttl("+sel.exprs[i]+")")
	}
	return "SELECT " + strings.Join(exprs, ", ") + " FROM " + quoteIdent(t.Keyspace) + "." + quoteIdent(t.Name) +
		" WHERE " + tk + " > ? AND " + tk + " <= ?"
}
