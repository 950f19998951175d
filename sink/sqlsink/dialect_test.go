package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// thirdDialect is a SQL target that is neither Lindorm nor MySQL, mixing their properties: the
// package must take each from the dialect, never from which dialect it is. describe is its
// table, nil for none.
func thirdDialect(describe *sqldialect.TableDef) *Dialect {
	return &Dialect{
		Name: "third", Title: "Third", PasswordEnv: "REKEY_THIRD_PASSWORD", DefaultPort: 5000,
		UpsertVerb: "REPLACE INTO ", Quote: func(n string) string { return `"` + n + `"` },
		DistinctUpsertKeys: true, BatchDeletes: true, KeyOrder: true,
		SessionParams: map[string]string{"sql_mode": "'ANSI_QUOTES'"},
		Describe: func(context.Context, *sql.DB, string) (*sqldialect.TableDef, error) {
			return describe, nil
		},
		TypeMismatch: func(c pipeline.Column, tc sqldialect.TableColumn, _ *sqldialect.TableDef) string {
			if strings.EqualFold(c.SQLType(), tc.Type) {
				return ""
			}
			return sqldialect.Mismatch
		},
		DDLHint: func(context.Context, *sql.DB) string { return " --dialect third" },
	}
}

// Each connection carries its dialect's session settings and no other's: MySQL's sql_mode
// (backslash escapes) on mysql://, none on lindorm://, a third target's own on it.
func TestSessionSettingsAreTheDialects(t *testing.T) {
	for _, tc := range []struct {
		d    *Dialect
		want map[string]string
	}{
		{lindormsql.Dialect, map[string]string{"time_zone": "'+00:00'"}},
		{mysqlsql.Dialect, map[string]string{"time_zone": "'+00:00'", "sql_mode": mysqlsql.Dialect.SessionParams["sql_mode"]}},
		{thirdDialect(nil), map[string]string{"time_zone": "'+00:00'", "sql_mode": "'ANSI_QUOTES'"}},
	} {
		got := (&Target{Dialect: tc.d}).driverConfig().Params
		if len(got) != len(tc.want) {
			t.Errorf("%s: params %v, want %v", tc.d.Name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.d.Name, k, got[k], v)
			}
		}
	}
	if !strings.Contains(mysqlsql.Dialect.SessionParams["sql_mode"], "NO_BACKSLASH_ESCAPES") {
		t.Errorf("mysql's sql_mode %q does not drop NO_BACKSLASH_ESCAPES", mysqlsql.Dialect.SessionParams["sql_mode"])
	}
}

// CheckTable asks the dialect how to read the table, which types hold the mapping's, whether
// the key's order counts and which ddl flag prints the table: a third target gets its own
// answers, not Lindorm's or MySQL's.
func TestCheckTableAsksTheDialect(t *testing.T) {
	ctx := context.Background()
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0, Desc: true}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	err := CheckTable(ctx, nil, thirdDialect(nil), "db", schema)
	if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "table db.t does not exist: create it first (rekey ddl -m MAPPING --dialect third prints") {
		t.Fatalf("a missing table: %v", err)
	}
	def := &sqldialect.TableDef{Table: "t", Key: []string{"k"}, Columns: []sqldialect.TableColumn{{Name: "k", Type: "BIGINT"}, {Name: "v", Type: "text"}}}
	err = CheckTable(ctx, nil, thirdDialect(def), "db", schema)
	for _, want := range []string{"column v: VARCHAR in the mapping, text in the table\n", "primary key: (k DESC) in the mapping, (k) in the table", "--dialect third prints the expected"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a differing table: %v, want it to say %q", err, want)
		}
	}
	def.Columns[1].Type = "VARCHAR"
	def.Columns[0].Desc = true
	if err := CheckTable(ctx, nil, thirdDialect(def), "db", schema); err != nil {
		t.Errorf("a table of the same columns and key order: %v", err)
	}
	d := thirdDialect(def)
	d.KeyOrder = false // the key order does not count: only the key's columns do
	def.Columns[0].Desc = false
	if err := CheckTable(ctx, nil, d, "db", schema); err != nil {
		t.Errorf("a table of the same columns, key order not compared: %v", err)
	}
}

// A third target's statements are its words: its upsert verb, its quoting, no ON DUPLICATE KEY
// UPDATE unless it says so, its deletes in one statement; and since its upserts must name a
// key once, two rows of one key in a batch send the last.
func TestStatementsAreTheDialects(t *testing.T) {
	s := kabSchema()
	d := thirdDialect(nil)
	st := newStatements(d, s)
	if st.full.head != `REPLACE INTO "t" ("k", "a", "b") VALUES ` || st.full.tail != "" {
		t.Errorf("upsert %q ... %q", st.full.head, st.full.tail)
	}
	if got := st.deletes([][]byte{[]byte("1"), []byte("2")}); len(got) != 1 || got[0] != `DELETE FROM "t" WHERE "k" IN (1,2)` {
		t.Errorf("deletes %q", got)
	}
	row := func(k int64, a string) pipeline.Row {
		return pipeline.Row{Values: []pipeline.Value{pipeline.Int(k), pipeline.Text(a), pipeline.Int(0)}}
	}
	for _, distinct := range []bool{true, false} {
		d.DistinctUpsertKeys = distinct
		w, stmts := dialectHookWriter(d, s)
		if err := w.Write(context.Background(), []pipeline.Row{row(1, "old"), row(1, "new")}); err != nil {
			t.Fatal(err)
		}
		want := `REPLACE INTO "t" ("k", "a", "b") VALUES (1,'new',0)`
		if !distinct {
			want = `REPLACE INTO "t" ("k", "a", "b") VALUES (1,'old',0),(1,'new',0)`
		}
		if len(*stmts) != 1 || (*stmts)[0] != want {
			t.Errorf("distinct keys %v: sent %q, want %q", distinct, *stmts, want)
		}
	}
}

// dialectHookWriter is a Writer of dialect d whose statements go to a list, not to a server.
func dialectHookWriter(d *Dialect, s pipeline.TargetSchema) (*Writer, *[]string) {
	var mu sync.Mutex
	var stmts []string
	w := &Writer{cfg: Config{Target: &Target{Dialect: d, Redacted: d.Name + "://test"},
		Schema: s, MaxRows: DefaultMaxRows, MaxBytes: DefaultMaxBytes, Retries: 1},
		st: newStatements(d, s), shards: []*shard{{}, {}}, log: zap.NewNop()}
	w.execHook = func(stmt string) error {
		mu.Lock()
		stmts = append(stmts, stmt)
		mu.Unlock()
		return nil
	}
	return w, &stmts
}

// Of two rows of one key in a copy into a target whose upsert holds a key once, the last is
// sent; when the server refuses it, the row before it is written, not lost: it is counted as
// written, and it is what a target writing both (MySQL) holds.
func TestRefusedLastRowOfAKeyLeavesTheOneBefore(t *testing.T) {
	s := kabSchema()
	d := thirdDialect(nil)
	w, stmts := dialectHookWriter(d, s)
	hook := w.execHook
	w.execHook = func(stmt string) error {
		if strings.Contains(stmt, "'bad'") {
			return &mysql.MySQLError{Number: 1406, Message: "Data too long for column 'a' at row 1"}
		}
		return hook(stmt)
	}
	row := func(k int64, a string) pipeline.Row {
		return pipeline.Row{Values: []pipeline.Value{pipeline.Int(k), pipeline.Text(a), pipeline.Int(0)}}
	}
	err := w.Write(context.Background(), []pipeline.Row{row(1, "old"), row(2, "two"), row(1, "bad")})
	var rr *pipeline.RowRejects
	if !errors.As(err, &rr) || len(rr.Rows) != 1 || rr.Rows[0].Index != 2 {
		t.Fatalf("write: %v, want row 2 rejected", err)
	}
	if got := strings.Join(*stmts, "; "); !strings.Contains(got, "(1,'old',0)") || !strings.Contains(got, "(2,'two',0)") {
		t.Errorf("sent %s: want the rows of keys 1 ('old') and 2", got)
	}
}

// Two keys whose texts differ only in where one column ends and the next begins, around a NUL
// (("a\x00\x04", "b") and ("a", "\x00\x04b")), are two rows: an upsert that holds a key once
// (Lindorm) sends both. Before, the key's text ended each value with a NUL, so both keys read
// as one and the first row was dropped as overwritten, counted as written.
func TestDistinctUpsertKeysTellNULsInTextApart(t *testing.T) {
	s := pipeline.TargetSchema{Table: "t", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "k1", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "k2", Type: pipeline.TypeVarchar, KeyPos: 1},
		{Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	w, stmts := dialectHookWriter(lindormsql.Dialect, s)
	w.shards = w.shards[:1] // both rows in one statement
	rows := []pipeline.Row{
		{Values: []pipeline.Value{pipeline.Text("a\x00\x04"), pipeline.Text("b"), pipeline.Int(1)}},
		{Values: []pipeline.Value{pipeline.Text("a"), pipeline.Text("\x00\x04b"), pipeline.Int(2)}},
	}
	if err := w.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(*stmts, "; ")
	if !strings.Contains(got, ",1)") || !strings.Contains(got, ",2)") {
		t.Errorf("sent %q: want both rows (v 1 and v 2)", got)
	}
}
