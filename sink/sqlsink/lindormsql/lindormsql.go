// Package lindormsql is Lindorm's wide-table SQL endpoint as a SQL target (lindorm://): UPSERT
// INTO, one key per DELETE, identifiers bare when plain, cells that carry a write's timestamp,
// tables described by DESCRIBE in the mapping's own types, and ddl.sql's CREATE TABLE.
package lindormsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// PasswordEnv holds the password of a lindorm:// target: never the URI.
const PasswordEnv = "REKEY_LINDORM_PASSWORD"

// Dialect is Lindorm's. Its DELETE must name the full primary key with = conditions, one row
// per statement, before LindormTable 2.8.2.26 (and after it unless batch deletion was enabled
// by Alibaba's support): rekey sends one statement per key. UNCERTAIN: whether Lindorm's planner
// treats the OR form of a multi-get as one; it is the form every SQL engine accepts. UNCERTAIN:
// how Lindorm prints FLOAT; its select reads the column as it is. Its sessions take backslash
// escapes by default (its SQL_MODE variable is documented from 2.8.4.8 on; UNCERTAIN whether it
// can turn them off), and rekey does not set it there.
var Dialect = &sqldialect.Dialect{
	Name: "lindorm", Title: "Lindorm", PasswordEnv: PasswordEnv, DefaultPort: 33060,
	URIHelp: `  lindorm://USER@HOST:33060/DATABASE[?table=T&tls=true]   Lindorm's wide-table SQL endpoint (MySQL
                                      protocol): UPSERT INTO; password from ` + PasswordEnv + `;
                                      write_time=true (replicate of Cassandra events): each write
                                      carries the event's Cassandra write time (UPSERT /*+ _l_ts_(ms) */)`,
	CellTimes:          true,
	DistinctUpsertKeys: true,
	UpsertVerb:         "UPSERT INTO ",
	Quote:              lindorm.Ident,
	Describe:           describe,
	TypeMismatch:       typeMismatch,
	KeyOrder:           true,
	DDL:                []sqldialect.DDL{{Name: "lindorm", Words: "lindorm", Split: true, Create: createTable}},
	DDLHelp:            "lindorm",
}

// createTable is ddl.sql's CREATE TABLE, split by the plan, as ddl prints it.
func createTable(schema pipeline.TargetSchema, plan pipeline.RegionPlan, options [][2]string) (string, error) {
	ddl, err := lindorm.DDL(schema, plan, options)
	if err != nil {
		return "", err
	}
	return ddl + "\n", nil
}

// describe reads DESCRIBE t, whose LindormTable result has one row per column with
// TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, TYPE, IS_PRIMARY_KEY and SORT_ORDER (Lindorm's DESCRIBE
// reference). Columns are found by name, so more or fewer of them do no harm. UNCERTAIN: that
// the primary-key rows come in key order (the reference's example lists them so), and how a
// missing table is reported (any error whose text says the table is not found).
func describe(ctx context.Context, db *sql.DB, table string) (*sqldialect.TableDef, error) {
	rows, err := db.QueryContext(ctx, "DESCRIBE "+lindorm.Ident(table))
	if err != nil {
		msg := strings.ToLower(err.Error())
		if strings.Contains(msg, "not found") || strings.Contains(msg, "not exist") || strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "unknown table") {
			return nil, nil
		}
		return nil, fmt.Errorf("read the definition of table %s (DESCRIBE): %w", table, err)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at, err := describeColumns(table, names)
	if err != nil {
		return nil, err
	}
	def := &sqldialect.TableDef{}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("DESCRIBE %s: %w", table, err)
		}
		c := sqldialect.TableColumn{Name: vals[at.name].String, Type: strings.ToUpper(strings.TrimSpace(vals[at.typ].String))}
		if at.sort >= 0 && strings.EqualFold(vals[at.sort].String, "DESC") {
			c.Desc = true
		}
		if pk := strings.ToLower(vals[at.pk].String); pk == "true" || pk == "1" || pk == "yes" {
			def.Key = append(def.Key, c.Name)
		}
		def.Columns = append(def.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("DESCRIBE %s: %w", table, err)
	}
	if len(def.Columns) == 0 {
		return nil, nil
	}
	return def, nil
}

// describeAt is where DESCRIBE's result holds what describe reads; sort is -1 when it has no
// SORT_ORDER.
type describeAt struct{ name, typ, pk, sort int }

// describeColumns finds describe's columns among DESCRIBE's by name.
func describeColumns(table string, names []string) (describeAt, error) {
	idx := map[string]int{}
	for i, n := range names {
		idx[strings.ToUpper(n)] = i
	}
	at := describeAt{sort: -1}
	for _, c := range []struct {
		name string
		to   *int
	}{{"COLUMN_NAME", &at.name}, {"TYPE", &at.typ}, {"IS_PRIMARY_KEY", &at.pk}} {
		i, ok := idx[c.name]
		if !ok {
			return at, fmt.Errorf("DESCRIBE %s: no %s column in its result (%s): this Lindorm version describes tables differently; please report it", table, c.name, strings.Join(names, ", "))
		}
		*c.to = i
	}
	if i, ok := idx["SORT_ORDER"]; ok {
		at.sort = i
	}
	return at, nil
}

// typeMismatch is a Lindorm table's: its types are the mapping's own.
func typeMismatch(c pipeline.Column, tc sqldialect.TableColumn, _ *sqldialect.TableDef) string {
	t, p, s, err := pipeline.ParseType(tc.Type)
	if err != nil {
		return " (a type rekey does not write)"
	}
	if t != c.Type {
		return sqldialect.Mismatch
	}
	if t == pipeline.TypeDecimal && strings.Contains(tc.Type, "(") && (p != c.Precision || s != c.Scale) {
		return sqldialect.Mismatch
	}
	return ""
}
