package sqlsink

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// OpenLookup checks the table like the sink, then reads rows by key in the order asked, nil
// for keys without a row, values typed as the target schema says.
func TestLookupReadsRowsByKey(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := testSchema()
			if _, err := OpenLookup(context.Background(), srv.URI(""), schema, noEnv, 2); !errors.Is(err, ErrTableMismatch) {
				t.Fatalf("lookup of a missing table: %v", err)
			}
			srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
			var rows []pipeline.Row
			for i := 0; i < 30; i++ {
				r := testRow(i)
				if i == 4 {
					for j := 2; j < len(r); j++ {
						r[j] = pipeline.Null // nulls read back as nulls
					}
				}
				rows = append(rows, pipeline.Row{Values: r})
			}
			l := lookupOf(t, srv, schema, rows)
			if l.MaxKeys() != 2000 {
				t.Errorf("MaxKeys %d", l.MaxKeys())
			}
			keys := [][]pipeline.Value{
				testRow(7)[:2], {pipeline.Text("nope"), pipeline.Int(1)}, testRow(4)[:2], testRow(29)[:2], testRow(7)[:2],
			}
			got, err := l.Lookup(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(keys) || got[1] != nil {
				t.Fatalf("got %d rows, the missing key gave %v", len(got), got[1])
			}
			for i, want := range [][]pipeline.Value{testRow(7), nil, rows[4].Values, testRow(29), testRow(7)} {
				if want == nil {
					continue
				}
				if got[i] == nil {
					t.Errorf("key %d: no row", i)
				} else if d := diffRow(schema, want, got[i]); d != "" {
					t.Errorf("key %d: %s", i, d)
				}
			}
			if _, err := l.Lookup(context.Background(), make([][]pipeline.Value, 2001)); err == nil {
				t.Error("2,001 keys accepted")
			}
		})
	}
}

// lookupOf writes rows into the schema's table on srv and opens a Lookup of it.
func lookupOf(t testing.TB, srv *mysqltest.Server, schema pipeline.TargetSchema, rows []pipeline.Row) *Lookup {
	t.Helper()
	w := openWriter(t, srv, schema, 2)
	if err := w.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLookup(context.Background(), srv.URI(""), schema, noEnv, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Lookup reads back the FLOAT a column stores, bit for bit: the text protocol prints a FLOAT
// column with 6 significant digits (1.2345678 as "1.23457"), and verify found 1,931 of 2,000
// migrated FLOAT values different. The largest FLOAT is written (its shortest form is out of
// range as a double). A stored value one bit away is still read as different.
func TestLookupReadsExactFloats(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := pipeline.TargetSchema{Table: "f", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeFloat, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
			rng := rand.New(rand.NewPCG(1, 2))
			want := []float32{0.1, 1.2345678, 16777217, -3.4028233e38, 1.1754944e-38, 1.4e-45, 0, 123456.79,
				math.MaxFloat32, -math.MaxFloat32} // written as 3.4028235e+38 before: out of range for MariaDB
			for len(want) < 2000 {
				f := math.Float32frombits(rng.Uint32())
				if !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
					want = append(want, f)
				}
			}
			rows := make([]pipeline.Row, len(want))
			keys := make([][]pipeline.Value, len(want))
			for i, f := range want {
				rows[i] = pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Float(float64(f))}}
				keys[i] = rows[i].Values[:1]
			}
			l := lookupOf(t, srv, schema, rows)
			read := func() []float32 {
				got, err := l.Lookup(context.Background(), keys)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float32, len(got))
				for i, r := range got {
					if r == nil {
						t.Fatalf("key %d: no row", i)
					}
					out[i] = float32(r[1].Float())
				}
				return out
			}
			differ := 0
			for i, g := range read() {
				if math.Float32bits(g) != math.Float32bits(want[i]) {
					if differ < 3 {
						t.Errorf("key %d: read %v, stored %v", i, g, want[i])
					}
					differ++
				}
			}
			if differ > 0 {
				t.Fatalf("%d of %d FLOAT values read back different", differ, len(want))
			}
			next := math.Nextafter32(want[1], 1)
			srv.Exec(t, fmt.Sprintf("UPDATE f SET v = %s WHERE k = 1", strconv.FormatFloat(float64(next), 'g', -1, 32)))
			if g := read()[1]; g != next {
				t.Errorf("a value one bit away read as %v, want %v", g, next)
			}
		})
	}
}

// A TIMESTAMP column the server keeps in microseconds (datetime(6), which the sink accepts)
// holding a fraction of a millisecond that rekey never writes: the value is not read as the
// millisecond it starts (verify said EQUAL of a row 1 µs away from the source's), it is refused.
func TestLookupRefusesTimestampsFinerThanMilliseconds(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := pipeline.TargetSchema{Table: "ts", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "t", Type: pipeline.TypeTimestamp, KeyPos: -1}}}
			ddl := mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()])
			srv.Exec(t, strings.Replace(ddl, "datetime(3)", "datetime(6)", 1))
			l := lookupOf(t, srv, schema, []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(1704067200004)}}})
			keys := [][]pipeline.Value{{pipeline.Int(1)}}
			got, err := l.Lookup(context.Background(), keys)
			if err != nil || got[0] == nil || got[0][1].Num != 1704067200004 {
				t.Fatalf("a whole millisecond in datetime(6): %v, %v", got, err)
			}
			srv.Exec(t, "UPDATE ts SET t = '2024-01-01 00:00:00.004001' WHERE k = 1")
			got, err = l.Lookup(context.Background(), keys)
			if err == nil || !strings.Contains(err.Error(), "millisecond") {
				t.Fatalf("a value 1 µs past the millisecond read as %v (err %v), want it refused", got, err)
			}
		})
	}
}

// Scan reads every row of a key range once, typed as Lookup reads it, page after page (4,500
// rows: three pages, the later ones starting inside a run of one first key column's value).
func TestScanReadsKeyRangesPageByPage(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := testSchema()
			srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
			const n = 4500
			var rows []pipeline.Row
			for i := 0; i < n; i++ {
				rows = append(rows, pipeline.Row{Values: testRow(i)})
			}
			l := lookupOf(t, srv, schema, rows)
			bound := func(pk string) pipeline.KeyBound {
				return pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text(pk)}, Inclusive: true}
			}
			for _, tc := range []struct {
				kr   pipeline.KeyRange
				want func(i int) bool
			}{
				{pipeline.KeyRange{}, func(int) bool { return true }},
				{pipeline.KeyRange{Start: bound("k002"), End: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("k005")}}}, func(i int) bool { return i%7 >= 2 && i%7 < 5 }},
				{pipeline.KeyRange{Start: bound("k005")}, func(i int) bool { return i%7 >= 5 }},
				{pipeline.KeyRange{End: bound("k000")}, func(i int) bool { return i%7 == 0 }},
			} {
				seen := make([]int, n)
				var prev string
				err := l.Scan(context.Background(), tc.kr, func(row []pipeline.Value) error {
					i := int(row[1].Num)
					seen[i]++
					if d := diffRow(schema, testRow(i), row); d != "" {
						t.Errorf("row %d: %s", i, d)
					}
					if k := fmt.Sprintf("%s %06d", row[0].Str, i); k <= prev {
						t.Errorf("row %q after %q: not in key order", k, prev)
					} else {
						prev = k
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range seen {
					if want := tc.want(i); c != 0 && !want || want && c != 1 {
						t.Fatalf("range %+v: row %d read %d times", tc.kr, i, c)
					}
				}
			}
		})
	}
}

// A scan page's statement per dialect: the range of the first key column, after the first page
// the last key read as a tuple bound (a DESC column compares the other way) and its first column
// also as a plain bound, so that Lindorm sees a range of the first key column; key order, 2,000
// rows.
func TestScanPageStatements(t *testing.T) {
	s := pipeline.TargetSchema{Table: "t", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "id", Type: pipeline.TypeBigint, KeyPos: 1, Desc: true},
		{Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	first := pipeline.KeyRange{Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("a")}, Inclusive: true},
		End: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("b")}}}
	later := pipeline.KeyRange{Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("a"), pipeline.Int(5)}}, End: first.End}
	for _, tc := range []struct {
		d    *Dialect
		kr   pipeline.KeyRange
		want string
	}{
		{lindormsql.Dialect, pipeline.KeyRange{}, "SELECT pk, id, v FROM t WHERE TRUE ORDER BY pk, id DESC LIMIT 2000"},
		{lindormsql.Dialect, first, "SELECT pk, id, v FROM t WHERE ((pk>='a')) AND ((pk<'b')) ORDER BY pk, id DESC LIMIT 2000"},
		{lindormsql.Dialect, later, "SELECT pk, id, v FROM t WHERE pk>='a' AND ((pk>'a') OR (pk='a' AND id<5)) AND ((pk<'b')) ORDER BY pk, id DESC LIMIT 2000"},
		{mysqlsql.Dialect, later, "SELECT `pk`, `id`, `v` FROM `t` WHERE `pk`>='a' AND ((`pk`>'a') OR (`pk`='a' AND `id`<5)) AND ((`pk`<'b')) ORDER BY `pk`, `id` DESC LIMIT 2000"},
	} {
		st := newStatements(tc.d, s)
		q, err := st.appendScanCond([]byte(st.selectHead), &tc.kr)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(q) + st.scanTail; got != tc.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", tc.d.Name, tc.kr, got, tc.want)
		}
	}
}

// A FLOAT key is found by its value: MySQL and MariaDB compare a FLOAT column with a literal as
// doubles, so the literal must be the stored float's exact double (0.10000000149011612), not its
// shortest float form (0.1, a double that no FLOAT holds). Written short, a lookup (verify)
// found no row and a delete (replicate) left the row in the table.
func TestFloatKeysAreFoundAndDeleted(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := pipeline.TargetSchema{Table: "fk", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeFloat, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
			floats := []float32{0.1, 1.2345678, 16777217, -3.4028233e38, 1.1754944e-38, 1.4e-45, 0, 123456.79, math.MaxFloat32, -math.MaxFloat32, 2.5}
			rows := make([]pipeline.Row, len(floats))
			keys := make([][]pipeline.Value, len(floats))
			var ops []Op
			for i, f := range floats {
				rows[i] = pipeline.Row{Values: []pipeline.Value{pipeline.Float(float64(f)), pipeline.Int(int64(i))}}
				keys[i] = rows[i].Values[:1]
				ops = append(ops, Op{Delete: true, Values: []pipeline.Value{rows[i].Values[0], pipeline.Null}})
			}
			l := lookupOf(t, srv, schema, rows)
			got, err := l.Lookup(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got {
				if r == nil {
					t.Errorf("FLOAT key %v: no row found", floats[i])
				}
			}
			w := openWriter(t, srv, schema, 1)
			if _, err := w.Apply(context.Background(), ops); err != nil {
				t.Fatal(err)
			}
			var left []string
			rs, err := srv.DB(t).Query("SELECT v FROM fk ORDER BY v")
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			for rs.Next() {
				var v int
				rs.Scan(&v)
				left = append(left, strconv.FormatFloat(float64(floats[v]), 'g', -1, 32))
			}
			if len(left) > 0 {
				t.Errorf("rows of FLOAT keys %s are still in the table after their deletes", strings.Join(left, ", "))
			}
		})
	}
}
