package sqlsink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
)

// kabSchema is table t (k bigint key, a varchar, b integer).
func kabSchema() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "a", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "b", Type: pipeline.TypeInteger, KeyPos: -1}}}
}

// A copied row's null is left out of its upsert: a NULL written into a wide table is a delete
// marker of the cell (Lindorm, like Cassandra), and it would clear a value the table already
// holds. The row written over an existing one keeps the existing cell where the copy has none;
// a row without nulls is one upsert of every column, as before.
func TestCopyLeavesNullsOut(t *testing.T) {
	s := kabSchema()
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, a varchar(20), b int)",
				"INSERT INTO t VALUES (1, 'kept', 5), (2, 'old', 6)")
			w := openWriter(t, srv, s, 2)
			rows := []pipeline.Row{
				{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Int(50)}},
				{Values: []pipeline.Value{pipeline.Int(2), pipeline.Text("new"), pipeline.Int(60)}},
				{Values: []pipeline.Value{pipeline.Int(3), pipeline.Text("c"), pipeline.Null}},
			}
			if err := w.Write(context.Background(), rows); err != nil {
				t.Fatal(err)
			}
			got := map[int64]string{}
			r, err := srv.DB(t).Query("SELECT k, COALESCE(a, 'NULL'), COALESCE(CAST(b AS CHAR), 'NULL') FROM t")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for r.Next() {
				var k int64
				var a, b string
				if err := r.Scan(&k, &a, &b); err != nil {
					t.Fatal(err)
				}
				got[k] = a + "," + b
			}
			want := map[int64]string{1: "kept,50", 2: "new,60", 3: "c,NULL"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("row %d: %s, want %s", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d rows, want %d", len(got), len(want))
			}
		})
	}
}

// hookWriter is a Writer of Lindorm's dialect whose statements go to a list, not to a server.
func hookWriter(s pipeline.TargetSchema, cellTimestamps bool) (*Writer, *[]string) {
	w, stmts := dialectHookWriter(lindormsql.Dialect, s)
	w.cfg.Target.CellTimestamps = cellTimestamps
	return w, stmts
}

// With the mapping's target.write_time, a copied row's cells carry their write times: the
// cells of one write time go in one upsert with that timestamp (_l_ts_), rows whose cells share
// a write time in one statement, a null cell in none; without write times the same rows are
// upserts of the server's time, the nulls still left out.
func TestCopyWritesCellsAtTheirWriteTimes(t *testing.T) {
	s := kabSchema()
	row := func(k int64, a pipeline.Value, b pipeline.Value, ta, tb int64) pipeline.Row {
		return pipeline.Row{Values: []pipeline.Value{pipeline.Int(k), a, b}, Times: []int64{0, ta, tb}}
	}
	rows := []pipeline.Row{
		row(1, pipeline.Text("x"), pipeline.Int(10), 1000, 1000), // one write time
		row(2, pipeline.Text("y"), pipeline.Int(20), 1000, 2000), // two
		row(3, pipeline.Null, pipeline.Int(30), 5000, 2000),      // a null: its time is nothing
		row(4, pipeline.Text("z"), pipeline.Int(40), 1000, 1000), // with row 1
		row(5, pipeline.Text("w"), pipeline.Null, 0, 0),          // no write time: the server's
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		times bool
		want  []string
	}{
		{"write times", true, []string{
			"UPSERT /*+ _l_ts_(1000) */ INTO t (k, a) VALUES (2,'y')",
			"UPSERT /*+ _l_ts_(1000) */ INTO t (k, a, b) VALUES (1,'x',10),(4,'z',40)",
			"UPSERT /*+ _l_ts_(2000) */ INTO t (k, b) VALUES (2,20),(3,30)",
			"UPSERT INTO t (k, a) VALUES (5,'w')",
		}},
		{"server time", false, []string{
			"UPSERT INTO t (k, a) VALUES (5,'w')",
			"UPSERT INTO t (k, a, b) VALUES (1,'x',10),(2,'y',20),(4,'z',40)",
			"UPSERT INTO t (k, b) VALUES (3,30)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, stmts := hookWriter(s, tc.times)
			w.shards = w.shards[:1] // one shard: the statements come in one order
			if err := w.Write(ctx, rows); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(*stmts)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("statements\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
		})
	}
}

// A copied row written in parts (its nulls left out) that the server refuses is rejected once,
// by its own index among the rows given to Write, and the rows around it are written.
func TestCopyInPartsRejectsTheRow(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1},
				{Name: "w", Type: pipeline.TypeVarchar, KeyPos: -1}}}
			srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, v varchar(5), w varchar(5))")
			w := openWriter(t, srv, s, 1)
			row := func(k int64, v, w pipeline.Value) pipeline.Row {
				return pipeline.Row{Values: []pipeline.Value{pipeline.Int(k), v, w}}
			}
			err := w.Write(context.Background(), []pipeline.Row{
				row(0, pipeline.Text("ok"), pipeline.Null),
				row(1, pipeline.Text("ok"), pipeline.Text("ok")),
				row(2, pipeline.Text("far too long"), pipeline.Null),
				row(3, pipeline.Null, pipeline.Text("ok")),
			})
			var rr *pipeline.RowRejects
			if !errors.As(err, &rr) || len(rr.Rows) != 1 || rr.Rows[0].Index != 2 || rr.Rows[0].Err.Code != CodeTargetRefused {
				t.Fatalf("want row 2 rejected (%s), got %v", CodeTargetRefused, err)
			}
			if n := countRows(t, srv); n != 3 {
				t.Errorf("%d rows written, want 3", n)
			}
		})
	}
}

// A copied row written in statements of one write time each is written whole or not at all:
// a value with no literal of its column's type rejects the row, and its cells of other times
// are not written either.
func TestCopyRowOfSeveralTimesRejectedWhole(t *testing.T) {
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "a", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "p", Type: pipeline.TypeDecimal, Precision: 5, Scale: 2, KeyPos: -1}}}
	w, stmts := hookWriter(s, true)
	rows := []pipeline.Row{
		{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("x"), pipeline.Decimal("123456.7")}, Times: []int64{0, 1000, 2000}},
		{Values: []pipeline.Value{pipeline.Int(2), pipeline.Text("y"), pipeline.Decimal("1.5")}, Times: []int64{0, 1000, 2000}},
	}
	err := w.Write(context.Background(), rows)
	var rr *pipeline.RowRejects
	if !errors.As(err, &rr) || len(rr.Rows) != 1 || rr.Rows[0].Index != 0 {
		t.Fatalf("want row 0 rejected, got %v", err)
	}
	got := strings.Join(*stmts, "\n")
	if strings.Contains(got, "(1,") {
		t.Errorf("a cell of the rejected row was written:\n%s", got)
	}
	if !strings.Contains(got, "(2,'y')") || !strings.Contains(got, "(2,1.50)") {
		t.Errorf("row 2's cells not written:\n%s", got)
	}
}
