package sqlsink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// An upsert that sets some columns writes those (a null one as NULL) and keeps the others, on
// both dialects' statement text.
func TestPartialUpsertStatements(t *testing.T) {
	s := pipeline.TargetSchema{Table: "u", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "visits", Type: pipeline.TypeInteger, KeyPos: -1}}}
	row := []pipeline.Value{pipeline.Text("u1"), pipeline.Null, pipeline.Int(2)}
	for _, tc := range []struct {
		d    *Dialect
		set  []bool
		want string
	}{
		{lindormsql.Dialect, []bool{true, false, true}, "UPSERT INTO u (id, visits) VALUES ('u1',2)"},
		{lindormsql.Dialect, []bool{true, true, false}, "UPSERT INTO u (id, `name`) VALUES ('u1',NULL)"},
		{mysqlsql.Dialect, []bool{true, false, true}, "INSERT INTO `u` (`id`, `visits`) VALUES ('u1',2) ON DUPLICATE KEY UPDATE `visits`=VALUES(`visits`)"},
		{mysqlsql.Dialect, []bool{true, false, false}, "INSERT INTO `u` (`id`) VALUES ('u1') ON DUPLICATE KEY UPDATE `id`=VALUES(`id`)"},
	} {
		st := newStatements(tc.d, s)
		tup, rerr := st.appendPartialRow(nil, row, tc.set)
		if rerr != nil {
			t.Fatal(rerr)
		}
		sh := st.upsertShape(tc.set)
		if got := string(st.upsert(nil, &sh, [][]byte{tup})); got != tc.want {
			t.Errorf("%s %v:\n got %s\nwant %s", tc.d.Name, tc.set, got, tc.want)
		}
	}
}

// Apply of a random mix of whole-row upserts, partial upserts (each setting some columns, some
// to null) and deletes over few keys leaves the table as applying them one by one in order does:
// upserts of different column sets go in different statements, and no key's changes reorder. A
// row left with every non-key column NULL (cell deletes, also of keys the table lacks) is gone.
func TestApplyPartialUpsertsInOrder(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			s := pipeline.TargetSchema{Table: "p", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "a", Type: pipeline.TypeBigint, KeyPos: -1},
				{Name: "b", Type: pipeline.TypeBigint, KeyPos: -1}, {Name: "c", Type: pipeline.TypeBigint, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
			w := openWriter(t, srv, s, 4)
			rng := rand.New(rand.NewPCG(1, 2))
			model := map[string][]pipeline.Value{}
			for batch := 0; batch < 5; batch++ {
				var ops []Op
				for n := 0; n < 400; n++ {
					k := fmt.Sprint("k", rng.IntN(25))
					vals := []pipeline.Value{pipeline.Text(k), pipeline.Int(int64(n)), pipeline.Int(int64(-n)), pipeline.Int(int64(batch))}
					for i := 1; i < 4; i++ {
						if rng.IntN(5) == 0 {
							vals[i] = pipeline.Null
						}
					}
					switch r := rng.IntN(10); {
					case r == 0:
						ops = append(ops, Op{Delete: true, Values: vals[:1]})
						delete(model, k)
					case r == 1:
						ops = append(ops, Op{Values: vals})
						setModel(model, k, vals)
					default:
						set := []bool{true, rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0}
						ops = append(ops, Op{Values: vals, Set: set})
						m, ok := model[k]
						if !ok {
							m = []pipeline.Value{pipeline.Text(k), pipeline.Null, pipeline.Null, pipeline.Null}
						}
						m = append([]pipeline.Value(nil), m...)
						for i := 1; i < 4; i++ {
							if set[i] {
								m[i] = vals[i]
							}
						}
						setModel(model, k, m)
					}
				}
				rej, err := w.Apply(context.Background(), ops)
				if err != nil || len(rej) > 0 {
					t.Fatalf("apply: %v %v", rej, err)
				}
			}
			got := readAll(t, srv.DB(t), s)
			if len(got) != len(model) {
				t.Errorf("%d rows, want %d", len(got), len(model))
			}
			for _, m := range model {
				g, ok := got[keyString(m[:1])]
				if !ok {
					t.Errorf("key %v missing", m[0])
					continue
				}
				for i := 1; i < 4; i++ {
					if g[i].Kind != m[i].Kind || g[i].Num != m[i].Num {
						t.Errorf("key %v column %s: got %v, want %v", m[0], s.Columns[i].Name, g[i], m[i])
					}
				}
			}
		})
	}
}

// setModel sets a key's row in a model of a wide table: a row whose every non-key column is NULL
// holds nothing, and is not there.
func setModel(model map[string][]pipeline.Value, k string, row []pipeline.Value) {
	for _, v := range row[1:] {
		if v.Kind != pipeline.KindNull {
			model[k] = row
			return
		}
	}
	delete(model, k)
}

// A key range is the prefix's equalities and each bound as a tuple comparison written out; a DESC
// column compares the other way.
func TestRangeCondition(t *testing.T) {
	s := pipeline.TargetSchema{Table: "tb", KeyLen: 3, Columns: []pipeline.Column{
		{Name: "a", Type: pipeline.TypeInteger, KeyPos: 0}, {Name: "b", Type: pipeline.TypeInteger, KeyPos: 1},
		{Name: "c", Type: pipeline.TypeInteger, KeyPos: 2}}}
	kr := &pipeline.KeyRange{Prefix: []pipeline.Value{pipeline.Int(1)},
		Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Int(1)}, Inclusive: true},
		End:   pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Int(1), pipeline.Int(2)}}}
	got, rerr := newStatements(lindormsql.Dialect, s).appendRangeCond(nil, kr)
	if want := "a=1 AND ((b>=1)) AND ((b<1) OR (b=1 AND c<2))"; rerr != nil || string(got) != want {
		t.Errorf("got %s %v\nwant %s", got, rerr, want)
	}
	s.Columns[2].Desc = true
	kr.End.Inclusive = true
	got, _ = newStatements(mysqlsql.Dialect, s).appendRangeCond(nil, kr)
	if want := "`a`=1 AND ((`b`>=1)) AND ((`b`<1) OR (`b`=1 AND `c`>=2))"; string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	got, _ = newStatements(mysqlsql.Dialect, s).appendRangeCond(nil, &pipeline.KeyRange{Prefix: []pipeline.Value{pipeline.Int(7)}})
	if want := "`a`=7"; string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// A range delete removes the rows of the range and no other, as one DELETE (MySQL) or, where
// DELETE names one whole key (Lindorm), as the keys a SELECT finds, in batches of MaxRows. The
// Lindorm statements run here against MySQL-protocol servers: their text is plain SQL.
func TestDeleteRange(t *testing.T) {
	for name, start := range servers(t) {
		for _, d := range []*Dialect{mysqlsql.Dialect, lindormsql.Dialect} {
			t.Run(name+"/"+d.Name, func(t *testing.T) {
				srv := start(t)
				s := pipeline.TargetSchema{Table: "tb", KeyLen: 3, Columns: []pipeline.Column{
					{Name: "a", Type: pipeline.TypeInteger, KeyPos: 0}, {Name: "b", Type: pipeline.TypeInteger, KeyPos: 1},
					{Name: "c", Type: pipeline.TypeInteger, KeyPos: 2}, {Name: "v", Type: pipeline.TypeInteger, KeyPos: -1}}}
				srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
				w := openWriter(t, srv, s, 2)
				var ops []Op
				for a := 1; a <= 2; a++ {
					for b := 0; b <= 2; b++ {
						for c := 0; c <= 3; c++ {
							ops = append(ops, Op{Values: []pipeline.Value{pipeline.Int(int64(a)), pipeline.Int(int64(b)), pipeline.Int(int64(c)), pipeline.Int(0)}})
						}
					}
				}
				// DELETE ... WHERE a = 1 AND (b, c) >= (0, 2) AND b <= 1, then an upsert inside the range
				ops = append(ops, Op{Delete: true, Range: &pipeline.KeyRange{Prefix: []pipeline.Value{pipeline.Int(1)},
					Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Int(0), pipeline.Int(2)}, Inclusive: true},
					End:   pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Int(1)}, Inclusive: true}}},
					Op{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(1), pipeline.Int(1), pipeline.Int(9)}})
				w.st = newStatements(d, w.st.schema)
				w.cfg.MaxRows = 2
				if d == lindormsql.Dialect {
					// the upserts in MySQL's text, the range delete in Lindorm's
					w.st.full = newStatements(mysqlsql.Dialect, w.st.schema).full
				}
				rej, err := w.Apply(context.Background(), ops)
				if err != nil || len(rej) > 0 {
					t.Fatalf("apply: %v %v", rej, err)
				}
				got := readAll(t, srv.DB(t), s)
				want := 24 - 6 + 1 // (1,0,2) (1,0,3) (1,1,0..3) deleted, (1,1,1) written again
				if len(got) != want {
					t.Errorf("%d rows, want %d", len(got), want)
				}
				for _, k := range [][3]int64{{1, 0, 2}, {1, 0, 3}, {1, 1, 0}, {1, 1, 2}, {1, 1, 3}} {
					if _, ok := got[keyString([]pipeline.Value{pipeline.Int(k[0]), pipeline.Int(k[1]), pipeline.Int(k[2])})]; ok {
						t.Errorf("%v not deleted", k)
					}
				}
				if g := got[keyString([]pipeline.Value{pipeline.Int(1), pipeline.Int(1), pipeline.Int(1)})]; len(g) < 4 || g[3].Num != 9 {
					t.Errorf("the upsert after the range delete: %v", g)
				}
			})
		}
	}
}

// One Lindorm UPSERT must not hold one key twice: of a key's upserts in a run only the last is
// sent, whatever their other values (two updates of a row differ in them).
func TestLastPerKeyKeepsTheLastUpsertOfAKey(t *testing.T) {
	row := func(k string, v int64) Op { return Op{Values: []pipeline.Value{pipeline.Text(k), pipeline.Int(v)}} }
	a := &applyState{ops: []Op{row("a", 1), row("b", 1), row("a", 2), row("a", 3)}}
	st := newStatements(lindormsql.Dialect, pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}})
	if got := lastPerKey(st, a, []int{0, 1, 2, 3}); fmt.Sprint(got) != "[1 3]" {
		t.Errorf("kept ops %v, want [1 3]", got)
	}
}

// Cell deletes leave no row of NULLs: an upsert that writes NULL into every column it names
// (Debezium's Cassandra connector sends `DELETE c FROM ...` so, also for a key the table lacks)
// removes the row it leaves holding nothing but its key, and only that row. Lindorm's statements
// for it (a SELECT of the key, a DELETE naming the whole key) run here against MySQL-protocol
// servers, with MySQL's upserts: their text is plain SQL.
func TestCellDeletesLeaveNoEmptyRow(t *testing.T) {
	for name, start := range servers(t) {
		for _, d := range []*Dialect{mysqlsql.Dialect, lindormsql.Dialect} {
			t.Run(name+"/"+d.Name, func(t *testing.T) {
				srv := start(t)
				s := pipeline.TargetSchema{Table: "cd", KeyLen: 1, Columns: []pipeline.Column{
					{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "x", Type: pipeline.TypeBigint, KeyPos: -1},
					{Name: "y", Type: pipeline.TypeBigint, KeyPos: -1}}}
				srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
				w := openWriter(t, srv, s, 2)
				onlyX, onlyY, both, keyOnly := []bool{true, true, false}, []bool{true, false, true}, []bool{true, true, true}, []bool{true, false, false}
				if d == lindormsql.Dialect {
					my := newStatements(mysqlsql.Dialect, s)
					w.st = newStatements(d, s)
					w.st.full = my.full
					for _, set := range [][]bool{onlyX, onlyY, both, keyOnly} {
						sh := my.upsertShape(set)
						mask := ""
						for _, b := range set {
							mask += string('0' + b2i(b))
						}
						w.shapes.Store(mask, &sh)
					}
				}
				row := func(k string, x, y pipeline.Value) []pipeline.Value { return []pipeline.Value{pipeline.Text(k), x, y} }
				n, i1, i2 := pipeline.Null, pipeline.Int(1), pipeline.Int(2)
				ops := []Op{
					{Values: row("absent", n, n), Set: onlyY},    // a cell delete of a row never written
					{Values: row("absent2", n, n), Set: both},    // of both cells
					{Values: row("keyonly", n, n), Set: keyOnly}, // a write of the key alone
					{Values: row("lost", i1, i2)},                // a row that loses both cells,
					{Values: row("lost", n, n), Set: onlyX},      // one
					{Values: row("lost", n, n), Set: onlyY},      // then the other
					{Values: row("kept", i1, i2)},                // a row that keeps a cell
					{Values: row("kept", n, n), Set: onlyX},      //
					{Values: row("whole", n, n)},                 // a whole row of NULLs
					{Values: row("back", i1, n)},                 // a row emptied, then written again
					{Values: row("back", n, n), Set: onlyX},      //
					{Values: row("back", n, i2), Set: onlyY},     //
				}
				rej, err := w.Apply(context.Background(), ops)
				if err != nil || len(rej) > 0 {
					t.Fatalf("apply: %v %v", rej, err)
				}
				got := readAll(t, srv.DB(t), s)
				if len(got) != 2 {
					t.Errorf("%d rows, want kept and back: %v", len(got), got)
				}
				if g := got[keyString([]pipeline.Value{pipeline.Text("kept")})]; len(g) != 3 || g[1].Kind != pipeline.KindNull || g[2].Num != 2 {
					t.Errorf("kept: %v", g)
				}
				if g := got[keyString([]pipeline.Value{pipeline.Text("back")})]; len(g) != 3 || g[1].Kind != pipeline.KindNull || g[2].Num != 2 {
					t.Errorf("back: %v", g)
				}
			})
		}
	}
}

// Changes to distinct keys need no order among them: a batch of interleaved deletes, whole-row
// upserts, upserts of one column and cell deletes goes in one statement per kind, not one per
// run of a kind.
func TestChangesOfDistinctKeysShareStatements(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "dk", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "x", Type: pipeline.TypeBigint, KeyPos: -1},
		{Name: "y", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	w := openWriter(t, srv, s, 1)
	var ops []Op
	for k := int64(0); k < 400; k++ {
		row := []pipeline.Value{pipeline.Int(k), pipeline.Int(k), pipeline.Int(-k)}
		switch k % 4 {
		case 0:
			ops = append(ops, Op{Values: row})
		case 1:
			ops = append(ops, Op{Delete: true, Values: row[:1]})
		case 2:
			ops = append(ops, Op{Values: row, Set: []bool{true, true, false}})
		default:
			ops = append(ops, Op{Values: []pipeline.Value{pipeline.Int(k), pipeline.Null, pipeline.Null}, Set: []bool{true, false, true}})
		}
	}
	if rej, err := w.Apply(context.Background(), ops); err != nil || len(rej) > 0 {
		t.Fatalf("apply: %v %v", rej, err)
	}
	// the deletes, the whole rows, the x upserts, the y cell deletes and the delete of the rows
	// those left without a value
	if n := w.Stats.Statements.Load(); n != 5 {
		t.Errorf("%d statements, want 5", n)
	}
	if got := readAll(t, srv.DB(t), s); len(got) != 200 {
		t.Errorf("%d rows, want the 100 whole rows and the 100 rows of x", len(got))
	}
}

// A Lindorm range delete at a change's write time leaves the rows whose cells are newer (a
// replayed partition delete after the rows written into the partition since): the SELECT of the
// range finds them again. Each page of keys starts after the last key of the one before, so the
// delete ends, naming each key once, however many rows survive it. The survivors are simulated
// here by deletes that do nothing.
func TestDeleteRangeEndsWhenRowsSurviveIt(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "tb", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "a", Type: pipeline.TypeInteger, KeyPos: 0}, {Name: "b", Type: pipeline.TypeInteger, KeyPos: 1, Desc: true},
		{Name: "v", Type: pipeline.TypeInteger, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	for b := 0; b < 7; b++ {
		srv.Exec(t, fmt.Sprintf("INSERT INTO tb VALUES (1, %d, 0), (2, %d, 0)", b, b))
	}
	w := openWriter(t, srv, s, 1)
	w.st = newStatements(lindormsql.Dialect, s)
	w.cfg.MaxRows = 2
	w.cfg.Target.CellTimestamps = true
	deleted := map[string]int{}
	w.execHook = func(stmt string) error {
		deleted[stmt]++
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rej, err := w.Apply(ctx, []Op{{Delete: true, Timestamp: 5, Range: &pipeline.KeyRange{Prefix: []pipeline.Value{pipeline.Int(1)},
		End: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Int(1)}, Inclusive: true}}}})
	if err != nil || len(rej) > 0 {
		t.Fatalf("range delete: %v %v", rej, err)
	}
	if len(deleted) != 6 { // b from 6 down to 1 (b is DESC: the range ends at 1)
		t.Errorf("%d keys deleted, want 6: %v", len(deleted), deleted)
	}
	for stmt, n := range deleted {
		if n != 1 || !strings.Contains(stmt, "a=1 AND") || strings.Contains(stmt, "b=0") {
			t.Errorf("%d times: %s", n, stmt)
		}
	}
}

// A DECIMAL key is one key however it is spelled (1.5 and 1.50, 2 and 2.0: the column holds
// each at its scale): the changes of one such key keep their order, on one connection, and an
// upsert followed by a delete of the same number spelled otherwise leaves no row.
func TestDecimalKeySpelledTwoWaysKeepsItsOrder(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "dk", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "amt", Type: pipeline.TypeDecimal, Precision: 10, Scale: 2, KeyPos: 0},
		{Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	w := openWriter(t, srv, s, 1)
	ops := []Op{
		{Delete: true, Values: []pipeline.Value{pipeline.Decimal("9")}}, // the deletes' statement comes first
		{Values: []pipeline.Value{pipeline.Decimal("1.5"), pipeline.Int(1)}},
		{Delete: true, Values: []pipeline.Value{pipeline.Decimal("1.50")}},
		{Values: []pipeline.Value{pipeline.Int(2), pipeline.Int(2)}},
		{Delete: true, Values: []pipeline.Value{pipeline.Decimal("2.0")}},
	}
	if rej, err := w.Apply(context.Background(), ops); err != nil || len(rej) > 0 {
		t.Fatalf("apply: %v %v", rej, err)
	}
	if got := readAll(t, srv.DB(t), s); len(got) != 0 {
		t.Errorf("rows left after their deletes: %v", got)
	}
	for _, pair := range [][2]pipeline.Value{{pipeline.Decimal("1.5"), pipeline.Decimal("1.50")}, {pipeline.Int(2), pipeline.Decimal("2.0")},
		{pipeline.Decimal("1.5e1"), pipeline.Text("15")}} {
		a, b := []pipeline.Value{pipeline.Int(7), pipeline.Int(1)}, []pipeline.Value{pipeline.Int(7), pipeline.Int(1)}
		a[0], b[0] = pair[0], pair[1]
		if w.st.keyHash(a[:1]) != w.st.keyHash(b[:1]) || w.st.keyString(a[:1]) != w.st.keyString(b[:1]) {
			t.Errorf("%v and %v are two keys", pair[0], pair[1])
		}
	}
}
