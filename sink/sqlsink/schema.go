package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// ErrTableMismatch is wrapped by CheckTable's error when the table is missing or differs from
// the mapping's target schema: a usage error, nothing was written.
var ErrTableMismatch = errors.New("the target table does not match the mapping")

// CheckTable reads the table's definition and compares it with the target schema: the table
// must exist, have exactly the schema's columns with types that hold its values, and the same
// primary key (columns and order). The error names every difference and what to do.
func CheckTable(ctx context.Context, db *sql.DB, d *Dialect, database string, schema pipeline.TargetSchema) error {
	def, err := d.Describe(ctx, db, schema.Table)
	if err != nil {
		return err
	}
	name := database + "." + schema.Table
	if def == nil {
		return fmt.Errorf("%w: table %s does not exist: create it first (rekey ddl -m MAPPING%s prints its CREATE TABLE)", ErrTableMismatch, name, ddlHint(ctx, db, d))
	}
	if diffs := compareTable(d, schema, def); len(diffs) > 0 {
		return fmt.Errorf("%w: table %s differs from the mapping's target schema:\n  %s\nrekey writes only into a table of the mapping's columns, types and primary key: fix the table or the mapping (rekey ddl -m MAPPING%s prints the expected CREATE TABLE)",
			ErrTableMismatch, name, strings.Join(diffs, "\n  "), ddlHint(ctx, db, d))
	}
	return nil
}

// ddlHint is the --dialect of rekey ddl that prints a table this server creates.
func ddlHint(ctx context.Context, db *sql.DB, d *Dialect) string {
	if d.DDLHint == nil {
		return ""
	}
	return d.DDLHint(ctx, db)
}

// compareTable lists the differences between the table and the schema.
func compareTable(d *Dialect, schema pipeline.TargetSchema, def *sqldialect.TableDef) []string {
	var diffs []string
	have := map[string]sqldialect.TableColumn{}
	for _, c := range def.Columns {
		have[strings.ToLower(c.Name)] = c
	}
	want := map[string]bool{}
	for _, c := range schema.Columns {
		want[strings.ToLower(c.Name)] = true
		tc, ok := have[strings.ToLower(c.Name)]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is missing from the table", c.Name, c.SQLType()))
			continue
		}
		if why := d.TypeMismatch(c, tc, def); why != "" {
			diffs = append(diffs, fmt.Sprintf("column %s: %s in the mapping, %s in the table%s", c.Name, c.SQLType(), tc.Type, strings.TrimRight(why, sqldialect.Mismatch)))
		}
	}
	for _, c := range def.Columns {
		if !want[strings.ToLower(c.Name)] {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) of the table is not in the mapping", c.Name, c.Type))
		}
	}
	keys := make([]string, schema.KeyLen)
	for i, c := range schema.Key() {
		keys[i] = c.Name
		if d.KeyOrder && c.Desc {
			keys[i] += " DESC"
		}
	}
	tkeys := make([]string, len(def.Key))
	for i, k := range def.Key {
		tkeys[i] = k
		if d.KeyOrder && have[strings.ToLower(k)].Desc {
			tkeys[i] += " DESC"
		}
	}
	for _, u := range def.Unique {
		diffs = append(diffs, fmt.Sprintf("unique index %s: an upsert whose row repeats another key's values in it would update that key's row instead of writing its own (Lindorm has no unique index): ALTER TABLE %s DROP INDEX %s",
			u, d.Ident(def.Table), d.Ident(u)))
	}
	if !strings.EqualFold(strings.Join(keys, ", "), strings.Join(tkeys, ", ")) {
		diffs = append(diffs, fmt.Sprintf("primary key: (%s) in the mapping, (%s) in the table", strings.Join(keys, ", "), strings.Join(tkeys, ", ")))
	}
	return diffs
}
